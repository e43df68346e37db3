"""Second derivatives of real models under ``@braze.jit``: a WGAN-GP critic trained with its
gradient-norm penalty (a gradient of a gradient, in PyTorch's and JAX's spellings), and a
Hessian-vector product of LeNet's loss. References: the same steps run eagerly, and float64
finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze.models import LeNet
from braze.nn import Dense, Sequential, functional_call, softmax_cross_entropy
from braze.optim import Adam


@pytest.fixture(autouse=True)
def private_cache(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path_factory.getbasetemp() / "higher-order-cache"))


def critic(seed: int = 0) -> Sequential:
    g = braze.Generator(seed)
    return Sequential(
        Dense(16, "tanh", input_dim=2, generator=g), Dense(16, "tanh", generator=g), Dense(1, generator=g)
    )


def penalty_by_autograd(model, points):
    """PyTorch's spelling: ``torch.autograd.grad(..., create_graph=True)``."""
    points = points.detach().requires_grad_()
    (gradient,) = braze.autograd.grad(model(points).sum(), points, create_graph=True)
    return gradient


def penalty_by_grad(model, points):
    """JAX's spelling: the gradient of the critic with respect to its input, a function
    closing over the parameters (so the gradient is recorded for the outer backward)."""
    return braze.grad(lambda x: model(x).sum())(points)


def wgan_gp_loss(model, real, fake, mix, gradient_of=penalty_by_autograd, weight=10.0):
    """The critic's WGAN-GP loss (Gulrajani et al. 2017): E[D(fake)] - E[D(real)] plus the
    penalty on the critic's gradient norm at points between real and fake samples."""
    points = mix * real + (1.0 - mix) * fake
    gradient = gradient_of(model, points)
    norm = braze.sqrt((gradient * gradient).sum(axis=1) + 1e-12)
    penalty = ((norm - 1.0) ** 2.0).mean()
    return model(fake).mean() - model(real).mean() + penalty * weight


def batches(steps: int, dtype=np.float32):
    rng = np.random.default_rng(1)
    for _ in range(steps):
        real = rng.normal(2.0, 0.5, (32, 2)).astype(dtype)
        fake = rng.normal(0.0, 1.0, (32, 2)).astype(dtype)
        mix = rng.uniform(0.0, 1.0, (32, 1)).astype(dtype)
        yield braze.tensor(real), braze.tensor(fake), braze.tensor(mix)


@pytest.mark.parametrize("gradient_of", [penalty_by_autograd, penalty_by_grad], ids=["autograd.grad", "grad"])
def test_a_wgan_gp_critic_trains_under_jit_as_eagerly(gradient_of):
    def step(model, optimizer, real, fake, mix):
        optimizer.zero_grad()
        loss = wgan_gp_loss(model, real, fake, mix, gradient_of)
        loss.backward()
        optimizer.step()
        return loss

    eager_model, jitted_model = critic(), critic()
    eager_opt, jitted_opt = Adam(eager_model, lr=1e-2), Adam(jitted_model, lr=1e-2)
    jitted = braze.jit(step)
    losses = []
    for real, fake, mix in batches(4):
        expected = step(eager_model, eager_opt, real, fake, mix)
        got = jitted(jitted_model, jitted_opt, real, fake, mix)
        np.testing.assert_allclose(got.item(), expected.item(), rtol=1e-4, atol=1e-5)
        losses.append(got.item())
    for p, q in zip(eager_model.parameters(), jitted_model.parameters(), strict=True):
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-4, atol=1e-5)
    assert jitted.compiles <= 2  # the first step makes Adam's slots, the second compiles the cached step
    assert losses[-1] < losses[0]


def test_the_penalty_spellings_agree():
    real, fake, mix = next(batches(1, np.float64))
    model = critic().to(dtype=braze.float64)
    by_autograd = wgan_gp_loss(model, real, fake, mix, penalty_by_autograd)
    by_grad = wgan_gp_loss(model, real, fake, mix, penalty_by_grad)
    np.testing.assert_allclose(by_grad.item(), by_autograd.item(), rtol=1e-12)


def test_the_jitted_wgan_gp_gradient_matches_float64_finite_differences():
    model = critic(seed=3).to(dtype=braze.float64)
    real, fake, mix = next(batches(1, np.float64))

    @braze.jit
    def gradients(model, real, fake, mix):
        model.zero_grad()
        wgan_gp_loss(model, real, fake, mix).backward()
        return [p.grad for p in model.parameters()]

    got = gradients(model, real, fake, mix)
    rng = np.random.default_rng(0)
    eps = 1e-6
    for p, grad in zip(model.parameters(), got, strict=True):
        base = np.array(p.numpy())
        for flat in rng.choice(base.size, size=min(4, base.size), replace=False):
            values = []
            for sign in (1.0, -1.0):
                moved = base.copy()
                moved.reshape(-1)[flat] += sign * eps
                with braze.no_grad():
                    p.assign(moved)
                values.append(wgan_gp_loss(model, real, fake, mix).item())  # the penalty needs grad mode
            with braze.no_grad():
                p.assign(base)
            numeric = (values[0] - values[1]) / (2 * eps)
            np.testing.assert_allclose(grad.numpy().reshape(-1)[flat], numeric, rtol=1e-5, atol=1e-7)


def lenet_problem(batch: int = 4):
    model = LeNet(seed=0).to(dtype=braze.float64)
    rng = np.random.default_rng(2)
    images = braze.tensor(rng.random((batch, 28, 28, 1)))
    labels = braze.tensor(rng.integers(0, 10, batch).astype(np.int32))
    params = {name: p.detach() for name, p in model.named_parameters()}
    direction = {name: braze.tensor(rng.standard_normal(p.shape)) for name, p in params.items()}
    return model, images, labels, params, direction


def lenet_loss(model, params, images, labels):
    return softmax_cross_entropy(functional_call(model, params, (images,)), labels)


def test_a_jitted_hvp_of_lenets_loss_matches_float64_finite_differences_of_its_gradient():
    model, images, labels, params, direction = lenet_problem()

    @braze.jit
    def hvp(params, direction, images, labels):
        return braze.hvp(lambda p: lenet_loss(model, p, images, labels), (params,), (direction,))[0]

    got = hvp(params, direction, images, labels)
    gradient = braze.grad(lambda p: lenet_loss(model, p, images, labels))
    # The gradient jumps where a relu's input crosses zero: a step of 1e-5 along a direction
    # of unit-normal entries moves some of LeNet's across; one of 1e-7 moves none.
    eps = 1e-7
    moved = [gradient({n: p + direction[n] * (sign * eps) for n, p in params.items()}) for sign in (1.0, -1.0)]
    for name in params:
        numeric = (moved[0][name].numpy() - moved[1][name].numpy()) / (2 * eps)
        scale = np.abs(numeric).max()
        np.testing.assert_allclose(got[name].numpy(), numeric, rtol=1e-5, atol=1e-6 * scale, err_msg=name)
    again = hvp(params, {n: d * 2.0 for n, d in direction.items()}, images, labels)
    for name in params:  # linear in the direction, from the same executable
        np.testing.assert_allclose(again[name].numpy(), 2 * got[name].numpy(), rtol=1e-10, atol=1e-14)
    assert hvp.compiles == 1


def test_lenets_hvp_by_reverse_over_reverse_agrees():
    """PyTorch's double backward on the module itself gives what forward over reverse gives."""
    model, images, labels, params, direction = lenet_problem(batch=2)
    (expected,) = braze.hvp(lambda p: lenet_loss(model, p, images, labels), (params,), (direction,))
    weights = model.parameters()
    loss = softmax_cross_entropy(model(images), labels)
    first = braze.autograd.grad(loss, weights, create_graph=True)
    dot = sum((g * direction[name]).sum() for g, (name, _) in zip(first, model.named_parameters(), strict=True))
    second = braze.autograd.grad(dot, weights)
    for (name, _), got in zip(model.named_parameters(), second, strict=True):
        np.testing.assert_allclose(got.numpy(), expected[name].numpy(), rtol=1e-9, atol=1e-12, err_msg=name)
