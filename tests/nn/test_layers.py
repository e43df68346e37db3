"""Layers against independent NumPy forward and backward passes."""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import conv_ref

import braze
from braze.nn import Conv2D, Dense, Dropout, Flatten, Sequential


def test_dense_forward_and_gradients_match_numpy():
    rng = np.random.default_rng(0)
    layer = Dense(3, activation="relu", input_dim=4)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    upstream = rng.standard_normal((5, 3)).astype(np.float32)
    out = layer(braze.tensor(x))
    (out * braze.tensor(upstream)).sum().backward()
    w, b = layer.kernel.numpy(), layer.bias.numpy()
    pre = x @ w + b
    np.testing.assert_allclose(out.numpy(), np.maximum(pre, 0), rtol=1e-6)
    delta = upstream * (pre > 0)
    np.testing.assert_allclose(layer.kernel.grad.numpy(), x.T @ delta, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer.bias.grad.numpy(), delta.sum(0), rtol=1e-5, atol=1e-6)


def conv_weight_grad_ref(x, upstream, kernel_shape):
    """dL/dW[a, b, c, o] = sum over n, i, j of x[n, i + a, j + b, c] * upstream[n, i, j, o] (VALID, stride 1)."""
    kh, kw, _, _ = kernel_shape
    oh, ow = upstream.shape[1:3]
    grad = np.zeros(kernel_shape)
    for a in range(kh):
        for b in range(kw):
            patch = x[:, a : a + oh, b : b + ow, :]
            grad[a, b] = np.einsum("nijc,nijo->co", patch, upstream)
    return grad


def test_conv2d_forward_and_gradients_match_numpy():
    rng = np.random.default_rng(1)
    layer = Conv2D(4, 3, activation=None, input_shape=(7, 6, 2))
    x = rng.standard_normal((2, 7, 6, 2)).astype(np.float32)
    upstream = rng.standard_normal((2, 5, 4, 4)).astype(np.float32)
    xt = braze.tensor(x, requires_grad=True)
    out = layer(xt)
    (out * braze.tensor(upstream)).sum().backward()
    w = layer.kernel.numpy()
    np.testing.assert_allclose(out.numpy(), conv_ref(x, w) + layer.bias.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        layer.kernel.grad.numpy(), conv_weight_grad_ref(x, upstream, w.shape), rtol=1e-4, atol=1e-4
    )
    np.testing.assert_allclose(layer.bias.grad.numpy(), upstream.sum((0, 1, 2)), rtol=1e-5, atol=1e-5)
    # dL/dx: scatter each output's upstream through the kernel taps.
    dx = np.zeros_like(x)
    for a in range(3):
        for b in range(3):
            dx[:, a : a + 5, b : b + 4, :] += upstream @ w[a, b].T
    np.testing.assert_allclose(xt.grad.numpy(), dx, rtol=1e-4, atol=1e-4)


def test_glorot_uniform_limits_and_zero_bias():
    layer = Conv2D(16, 5, input_shape=(10, 10, 6))
    limit = np.sqrt(6 / (25 * 6 + 25 * 16))
    k = layer.kernel.numpy()
    assert k.shape == (5, 5, 6, 16) and np.abs(k).max() <= limit and np.abs(k).max() > 0.9 * limit
    np.testing.assert_array_equal(layer.bias.numpy(), 0)


def test_sequential_builds_from_input_shape_and_names_parameters():
    model = Sequential(Conv2D(2, 3, input_shape=(8, 8, 1)), Flatten(), Dense(3))
    names = [n for n, _ in model.named_parameters()]
    assert names == ["layers.0.kernel", "layers.0.bias", "layers.2.kernel", "layers.2.bias"]
    assert model(braze.zeros((4, 8, 8, 1))).shape == (4, 3)


def test_dense_feature_mismatch_is_a_clear_error():
    layer = Dense(3, input_dim=4)
    with pytest.raises(
        braze.ShapeError, match=r"Dense: input of shape \(2, 5\) has 5 features but the layer expects 4"
    ):
        layer(braze.zeros((2, 5)))


def test_model_input_shape_mismatch_names_the_layer():
    from braze.models import LeNet

    with pytest.raises(braze.ShapeError, match=r"conv2d: input \(2, 28, 28, 3\) has 3 channels"):
        LeNet()(braze.zeros((2, 28, 28, 3)))


def test_dropout_scales_in_training_and_is_identity_in_eval():
    layer = Dropout(0.25, seed=1)
    x = braze.ones((1000,))
    out = layer(x).numpy()
    kept = out != 0
    assert abs(kept.mean() - 0.75) < 0.05
    np.testing.assert_allclose(out[kept], 1 / 0.75)
    layer.eval()
    np.testing.assert_array_equal(layer(x).numpy(), 1.0)
