"""Optimizers against NumPy transcriptions of their update rules."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze.optim import SGD, Adam, AdamW


def run(optimizer_cls, grads, **hyper):
    p = braze.tensor(np.array([1.0, -2.0, 3.0]), requires_grad=True)
    opt = optimizer_cls([p], **hyper)
    for g in grads:
        p.grad = braze.tensor(g)
        opt.step()
    return p.numpy()


GRADS = [np.array([0.5, -1.0, 2.0]), np.array([0.1, 0.3, -0.2]), np.array([-0.4, 0.2, 0.9])]


def sgd_ref(lr, momentum=0.0, nesterov=False, weight_decay=0.0):
    p, buf = np.array([1.0, -2.0, 3.0]), np.zeros(3)
    for g in GRADS:
        g = g + weight_decay * p
        buf = momentum * buf + g
        p = p - lr * ((g + momentum * buf) if nesterov else (buf if momentum else g))
    return p


@pytest.mark.parametrize(
    "hyper",
    [{"lr": 0.1}, {"lr": 0.1, "momentum": 0.9}, {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.01}],
)
def test_sgd(hyper):
    np.testing.assert_allclose(run(SGD, GRADS, **hyper), sgd_ref(**hyper), rtol=1e-12)


def adam_ref(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False):
    p, m, v = np.array([1.0, -2.0, 3.0]), np.zeros(3), np.zeros(3)
    for t, g in enumerate(GRADS, start=1):
        if weight_decay and not decoupled:
            g = g + weight_decay * p
        if decoupled:
            p = p * (1 - lr * weight_decay)
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        m_hat, v_hat = m / (1 - betas[0] ** t), v / (1 - betas[1] ** t)
        p = p - lr * m_hat / (np.sqrt(v_hat) + eps)
    return p


def test_adam():
    np.testing.assert_allclose(run(Adam, GRADS, lr=0.01), adam_ref(0.01), rtol=1e-10)
    np.testing.assert_allclose(
        run(Adam, GRADS, lr=0.01, weight_decay=0.1), adam_ref(0.01, weight_decay=0.1), rtol=1e-10
    )


def test_adamw():
    np.testing.assert_allclose(
        run(AdamW, GRADS, lr=0.01, weight_decay=0.1), adam_ref(0.01, weight_decay=0.1, decoupled=True), rtol=1e-10
    )


def test_functional_apply_matches_step_and_leaves_inputs():
    p = braze.tensor(np.array([1.0, -2.0, 3.0]), requires_grad=True)
    opt = SGD(lr=0.1, momentum=0.9)
    params, state = [p], None
    for g in GRADS:
        params, state = opt.apply(params, [braze.tensor(g)], state)
    np.testing.assert_allclose(params[0].numpy(), sgd_ref(0.1, 0.9))
    np.testing.assert_array_equal(p.numpy(), [1.0, -2.0, 3.0])


def test_zero_grad_and_parameters_without_gradients():
    a = braze.tensor([1.0], requires_grad=True)
    b = braze.tensor([1.0], requires_grad=True)
    opt = SGD([a, b], lr=1.0)
    a.grad = braze.tensor([1.0])
    opt.step()
    assert a.item() == 0.0 and b.item() == 1.0
    opt.zero_grad()
    assert a.grad is None


def test_bad_hyperparameters():
    with pytest.raises(ValueError, match="Nesterov momentum needs momentum"):
        SGD([braze.tensor([1.0], requires_grad=True)], lr=0.1, nesterov=True)
    with pytest.raises(TypeError, match="must be tensors that require grad"):
        SGD([braze.tensor([1.0])], lr=0.1)


def test_optimizer_slots_move_with_the_model():
    model = braze.models.LeNet(seed=0)
    optimizer = braze.optim.Adam(model, lr=1e-3)
    loss = braze.nn.softmax_cross_entropy(model(braze.ones((2, 28, 28, 1))), braze.tensor([1, 2]))
    loss.backward()
    optimizer.step()
    model.to(braze.LAZY_CPU)
    optimizer.to(braze.LAZY_CPU)
    slots = [value for state in optimizer.state for value in state.values()]
    assert slots and all(value.device == braze.LAZY_CPU for value in slots)
