"""BatchNormalization against NumPy (training and inference, any axis), its gradients
against float64 finite differences, and its moving statistics: state that a training step
updates in place, equal eagerly, on a lazy device and under @jit."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_gradients_match

import braze
from braze.keras import layers
from braze.nn import softmax_cross_entropy
from braze.optim import SGD


def numpy_batch_norm(x, gamma, beta, axis, eps):
    reduced = tuple(d for d in range(x.ndim) if d != axis % x.ndim)
    mean, var = x.mean(reduced, keepdims=True), x.var(reduced, keepdims=True)
    shape = [1] * x.ndim
    shape[axis] = -1
    return (x - mean) / np.sqrt(var + eps) * gamma.reshape(shape) + beta.reshape(shape), mean, var


@pytest.mark.parametrize("axis", [-1, 1])
def test_training_normalizes_by_the_batch_and_moves_the_statistics(axis):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 4, 5, 3)).astype(np.float32) * 3 + 1
    bn = layers.BatchNormalization(axis=axis, momentum=0.9, epsilon=1e-3)
    out = bn(x, training=True).numpy()
    features = x.shape[axis]
    expected, mean, var = numpy_batch_norm(x.astype(np.float64), np.ones(features), np.zeros(features), axis, 1e-3)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.1 * mean.reshape(-1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.9 + 0.1 * var.reshape(-1), rtol=1e-5)
    inference = bn(x, training=False).numpy()
    shape = [1] * 4
    shape[axis] = -1
    moving = (x - bn.moving_mean.numpy().reshape(shape)) / np.sqrt(bn.moving_variance.numpy().reshape(shape) + 1e-3)
    np.testing.assert_allclose(inference, moving, rtol=1e-5, atol=1e-5)


def test_a_frozen_layer_runs_in_inference_mode():
    bn = layers.BatchNormalization()
    bn.build((None, 3))
    bn.trainable = False
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(bn(x, training=True).numpy(), x / np.sqrt(1 + 1e-3), rtol=1e-6)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), 0.0)


def test_gradients_match_finite_differences_in_float64():
    rng = np.random.default_rng(1)
    bn = layers.BatchNormalization(dtype="float64")
    bn.build((None, 2, 3))

    def forward(x, gamma, beta):
        bn.gamma, bn.beta = gamma, beta
        return bn(x, training=True)

    arrays = [rng.standard_normal((4, 2, 3)), rng.uniform(0.5, 2.0, 3), rng.standard_normal(3)]
    assert_gradients_match(forward, arrays, wrt=[0, 1, 2], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("order", ["reverse over reverse", "forward over reverse"])
def test_second_derivatives_match_finite_differences_of_the_gradient(order):
    # The variance's dependence on the mean is kept (a term zero in value), so a Hessian is
    # exact; the same formula without it was 0.66 off on values of about 13.
    rng = np.random.default_rng(2)
    bn = layers.BatchNormalization(dtype="float64")
    bn.build((None, 3))
    weights = braze.tensor(rng.standard_normal((5, 3)))

    def loss(x):
        return (bn(x, training=True) ** 3 * weights).sum()

    gradient = braze.grad(loss)
    x, v = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))
    if order == "reverse over reverse":
        got = braze.grad(lambda x: (gradient(x) * braze.tensor(v)).sum())(braze.tensor(x)).numpy()
    else:
        (got,) = braze.hvp(loss, (braze.tensor(x),), (braze.tensor(v),))
        got = got.numpy()
    eps = 1e-6
    expected = (gradient(braze.tensor(x + eps * v)).numpy() - gradient(braze.tensor(x - eps * v)).numpy()) / (2 * eps)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6 * np.abs(expected).max())


def test_the_backward_computes_its_per_feature_sums_in_one_pass():
    # The variance reads the mean detached, so the backward's four sums over the batch (of
    # the cotangent, and of it times the centred inputs, for x, gamma and beta) depend on none
    # of each other: with the forward's mean and variance, three reducing kernels in all.
    rng = np.random.default_rng(0)
    bn = layers.BatchNormalization()
    bn.build((None, 8, 8, 16))
    bn.to(braze.LAZY_CPU)

    def loss(x, gamma, beta):
        bn.gamma, bn.beta = gamma, beta
        return (braze.relu(bn(x, training=True)) ** 2).sum()

    arrays = [rng.standard_normal((4, 8, 8, 16)), rng.uniform(0.5, 2.0, 16), rng.standard_normal(16)]
    tensors = [braze.tensor(a.astype(np.float32), device=braze.LAZY_CPU) for a in arrays]
    report = braze.explain(braze.grad(loss, argnums=(0, 1, 2)), *tensors)
    reducing = [line for line in report.text().splitlines() if line.startswith("kernel") and "reduce_sum" in line]
    assert len(reducing) == 3, reducing
    assert "reduce_sum x4" in reducing[-1]


def _train(device, mode: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    braze.manual_seed(0)
    model = braze.keras.Sequential(
        [
            layers.Conv2D(3, 3, input_shape=(6, 6, 2), use_bias=False, generator=braze.Generator(1)),
            layers.BatchNormalization(momentum=0.8),
            layers.ReLU(),
            layers.Flatten(),
            layers.Dense(2, generator=braze.Generator(2)),
        ]
    ).to(device)
    model.train()
    optimizer = SGD(model, lr=0.1, momentum=0.9)

    def step(model, optimizer, x, y):
        optimizer.zero_grad()
        loss = softmax_cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    run = braze.jit(step) if mode == "jit" else step
    rng = np.random.default_rng(3)
    for _ in range(4):
        x = braze.tensor(rng.standard_normal((8, 6, 6, 2)).astype(np.float32), device=device)
        y = braze.tensor(rng.integers(0, 2, 8).astype(np.int32), device=device)
        run(model, optimizer, x, y)
    return [b.numpy() for b in model.buffers()], [p.numpy() for p in model.parameters()]


def test_moving_statistics_are_state_a_compiled_step_updates_as_eager_does():
    eager_buffers, eager_params = _train(braze.CPU, "eager")
    assert not np.allclose(eager_buffers[0], 0)  # the steps moved the statistics
    for device, mode in ((braze.LAZY_CPU, "lazy"), (braze.CPU, "jit")):
        buffers, params = _train(device, mode)
        for got, expected in zip(buffers + params, eager_buffers + eager_params, strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5, err_msg=mode)


def test_to_a_float_dtype_converts_the_moving_statistics_too():
    model = braze.keras.Sequential([layers.Dense(3, input_shape=(2,)), layers.BatchNormalization()])
    model.to(dtype=braze.float64)
    bn = model.layers[-1]
    assert bn.moving_mean.dtype == braze.float64 and bn.moving_variance.dtype == braze.float64
    x = np.random.default_rng(0).standard_normal((8, 2))
    dense = x @ model.layers[0].kernel.numpy() + model.layers[0].bias.numpy()
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, x[:, :1].repeat(3, 1), batch_size=8, verbose=0)
    # One step at momentum 0.99 from a zero mean: 1% of the batch's mean, in float64 maths.
    assert bn.moving_mean.dtype == braze.float64
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.01 * dense.mean(0), rtol=1e-12)
