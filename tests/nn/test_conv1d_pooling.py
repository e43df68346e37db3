"""Conv1D (valid, same, causal; strides, dilation) and the 1-D and global poolings against
NumPy, and Conv1D's gradients against float64 finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_gradients_match

import braze
from braze.keras import layers


def numpy_conv1d(x, kernel, stride, dilation, left, right):
    x = np.pad(x, ((0, 0), (left, right), (0, 0)))
    width = kernel.shape[0]
    span = (width - 1) * dilation + 1
    steps = (x.shape[1] - span) // stride + 1
    out = np.zeros((x.shape[0], steps, kernel.shape[2]))
    for t in range(steps):
        for k in range(width):
            out[:, t] += x[:, t * stride + k * dilation] @ kernel[k]
    return out


@pytest.mark.parametrize(
    ("padding", "stride", "dilation", "pads"),
    [("valid", 1, 1, (0, 0)), ("same", 1, 1, (1, 2)), ("causal", 1, 2, (6, 0)), ("valid", 2, 1, (0, 0))],
)
def test_conv1d_matches_numpy(padding, stride, dilation, pads):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 9, 3)).astype(np.float32)
    layer = layers.Conv1D(5, 4, strides=stride, padding=padding, dilation_rate=dilation)
    out = layer(x).numpy()
    expected = numpy_conv1d(x, layer.kernel.numpy(), stride, dilation, *pads) + layer.bias.numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_conv1d_gradients_match_finite_differences_in_float64():
    rng = np.random.default_rng(1)
    layer = layers.Conv1D(2, 3, padding="causal", dilation_rate=2, dtype="float64")
    layer.build((None, 7, 3))

    def forward(x, kernel, bias):
        layer.kernel, layer.bias = kernel, bias
        return layer(x)

    arrays = [rng.standard_normal((2, 7, 3)), rng.standard_normal((3, 3, 2)), rng.standard_normal(2)]
    assert_gradients_match(forward, arrays, wrt=[0, 1, 2], rtol=1e-5, atol=1e-7)


def test_pooling_layers_match_numpy():
    x = np.random.default_rng(2).standard_normal((2, 8, 3)).astype(np.float32)
    windows = x.reshape(2, 4, 2, 3)
    np.testing.assert_allclose(layers.MaxPooling1D(2)(x).numpy(), windows.max(2))
    np.testing.assert_allclose(layers.AveragePooling1D(2)(x).numpy(), windows.mean(2), rtol=1e-6)
    np.testing.assert_allclose(layers.GlobalAveragePooling1D()(x).numpy(), x.mean(1), rtol=1e-6)
    np.testing.assert_allclose(layers.GlobalMaxPooling1D(keepdims=True)(x).numpy(), x.max(1, keepdims=True))
    images = np.random.default_rng(3).standard_normal((2, 4, 5, 3)).astype(np.float32)
    np.testing.assert_allclose(layers.GlobalAveragePooling2D()(images).numpy(), images.mean((1, 2)), rtol=1e-5)
    with pytest.raises(NotImplementedError, match="channels_last"):
        layers.GlobalAveragePooling2D(data_format="channels_first")


def test_a_conv_layers_convolution_op_is_the_hook_a_subclass_overrides():
    class Standardized(layers.Conv2D):
        def convolution_op(self, inputs, kernel):
            mean, var = braze.nn.moments(kernel, axes=[0, 1, 2], keepdims=True)
            return braze.nn.conv2d(inputs, (kernel - mean) / braze.sqrt(var + 1e-10), padding="VALID", strides=[1, 1])

    layer = Standardized(2, 3, use_bias=False)
    x = np.random.default_rng(4).standard_normal((1, 5, 5, 3)).astype(np.float32)
    out = layer(x).numpy()
    k = layer.kernel.numpy().astype(np.float64)
    k = (k - k.mean((0, 1, 2))) / np.sqrt(k.var((0, 1, 2)) + 1e-10)
    expected = np.einsum("hwc,hwco->o", x[0, 1:4, 1:4], k)  # the centre output pixel
    np.testing.assert_allclose(out[0, 1, 1], expected, rtol=1e-4, atol=1e-5)
