"""Keras's layers that make images and sequences larger: UpSampling2D/1D against NumPy's
repeat, Conv2DTranspose/Conv1DTranspose against a scatter written from their definition
(with Keras's kernel layout and output sizes), eagerly and lazily; their gradients against
float64 finite differences; and tf.nn.conv2d_transpose."""

from __future__ import annotations

import numpy as np
import pytest
from default_device import made_on
from gradcheck import assert_gradients_match
from op_cases import conv_transpose_ref

import braze
from braze import keras
from braze.ir.errors import ShapeError

RNG = np.random.default_rng(7)
DEVICES = [braze.CPU, braze.LAZY_CPU]


@pytest.mark.parametrize("device", DEVICES, ids=["eager", "lazy"])
def test_upsampling_repeats_pixels_and_steps(device):
    images = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    got = keras.layers.UpSampling2D((2, 3))(braze.tensor(images, device=device)).numpy()
    np.testing.assert_array_equal(got, images.repeat(2, axis=1).repeat(3, axis=2))
    steps = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    got = keras.layers.UpSampling1D(3)(braze.tensor(steps, device=device)).numpy()
    np.testing.assert_array_equal(got, steps.repeat(3, axis=1))


def test_upsampling_gradient_sums_the_copies():
    layer = keras.layers.UpSampling2D(2)
    assert_gradients_match(lambda x: layer(x) ** 2, [RNG.standard_normal((1, 2, 3, 2))], [0], rtol=1e-6, atol=1e-8)


def test_upsampling_refuses_what_it_does_not_compute():
    with pytest.raises(NotImplementedError, match="interpolation='bicubic'"):
        keras.layers.UpSampling2D(interpolation="bicubic")
    with pytest.raises(NotImplementedError, match="channels_last"):
        keras.layers.UpSampling2D(data_format="channels_first")
    with pytest.raises(ShapeError, match="expected NHWC images"):
        keras.layers.UpSampling2D()(braze.tensor(np.ones((2, 3), np.float32)))


# (input height, kernel, stride, padding, output_padding) -> Keras's output height
SIZES = [
    ((5, 3, 2, "valid", None), 11),
    ((5, 3, 2, "same", None), 10),
    ((5, 2, 3, "valid", None), 15),  # a kernel smaller than the stride: in * stride
    ((5, 3, 2, "valid", 1), 12),
    ((5, 3, 2, "same", 1), 10),
    ((4, 3, 2, "same", 0), 7),
]


@pytest.mark.parametrize(("args", "expected"), SIZES, ids=[str(a) for a, _ in SIZES])
def test_conv2d_transpose_output_sizes_are_keras(args, expected):
    size, kernel, stride, padding, output_padding = args
    layer = keras.layers.Conv2DTranspose(3, kernel, stride, padding, output_padding)
    assert layer(braze.tensor(np.zeros((1, size, size, 2), np.float32))).shape == (1, expected, expected, 3)
    assert tuple(layer.kernel.shape) == (kernel, kernel, 3, 2) and tuple(layer.bias.shape) == (3,)


@pytest.mark.parametrize("device", DEVICES, ids=["eager", "lazy"])
@pytest.mark.parametrize("padding", ["valid", "same"])
def test_conv2d_transpose_values(device, padding):
    x = RNG.standard_normal((2, 4, 3, 5)).astype(np.float32)
    with made_on(device):
        layer = keras.layers.Conv2DTranspose(6, (3, 2), strides=2, padding=padding, activation="relu")
        layer.build((None, 4, 3, 5))
        layer.built = True
    layer.bias = braze.tensor(RNG.standard_normal(6).astype(np.float32), device=device)
    got = layer(braze.tensor(x, device=device)).numpy()
    kernel, bias = layer.kernel.numpy(), layer.bias.numpy()
    out_hw = (9, 6) if padding == "valid" else (8, 6)
    want = np.maximum(conv_transpose_ref(x, kernel, out_hw, (2, 2), padding.upper()) + bias, 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("padding", ["valid", "same"])
def test_conv1d_transpose_is_the_2d_one_on_a_height_of_one(padding):
    x = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    layer = keras.layers.Conv1DTranspose(4, 3, strides=2, padding=padding, use_bias=False)
    got = layer(braze.tensor(x)).numpy()
    kernel = layer.kernel.numpy()
    assert kernel.shape == (3, 4, 3)
    length = 11 if padding == "valid" else 10
    want = conv_transpose_ref(x[:, None], kernel[None], (1, length), (1, 2), padding.upper())[:, 0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv2d_transpose_gradients_match_finite_differences():
    layer = keras.layers.Conv2DTranspose(2, 3, strides=2, padding="same", dtype="float64")
    layer(braze.tensor(np.zeros((1, 3, 3, 2))))

    def fn(x, kernel, bias):
        layer.kernel, layer.bias = kernel, bias
        return layer(x) ** 2

    arrays = [RNG.standard_normal((2, 3, 3, 2)), layer.kernel.numpy(), RNG.standard_normal(2)]
    assert_gradients_match(fn, arrays, [0, 1, 2], rtol=1e-5, atol=1e-7)


def test_conv2d_transpose_refuses_bad_arguments():
    with pytest.raises(ValueError, match="output_padding \\(2, 2\\) must be less than strides \\(2, 2\\)"):
        keras.layers.Conv2DTranspose(2, 3, strides=2, output_padding=2)
    with pytest.raises(ValueError, match="padding must be 'valid' or 'same'"):
        keras.layers.Conv2DTranspose(2, 3, padding="causal")
    with pytest.raises(NotImplementedError, match="kernel_constraint"):
        keras.layers.Conv2DTranspose(2, 3, kernel_constraint="max_norm")


def test_tf_nn_conv2d_transpose_takes_tensorflows_arguments():
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    w = RNG.standard_normal((3, 3, 6, 5)).astype(np.float32)
    got = braze.nn.conv2d_transpose(x, w, [2, 6, 8, 6], strides=[1, 2, 2, 1], padding="SAME").numpy()
    np.testing.assert_allclose(got, conv_transpose_ref(x, w, (6, 8), (2, 2), "SAME"), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="output_shape \\[2, 6, 8, 5\\] must be"):
        braze.nn.conv2d_transpose(x, w, [2, 6, 8, 5], strides=2)
    with pytest.raises(ShapeError, match="convolves .* not to the input's 3x4"):
        braze.nn.conv2d_transpose(x, w, [2, 9, 9, 6], strides=2)
