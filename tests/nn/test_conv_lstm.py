"""ConvLSTM2D against an LSTM written with NumPy convolutions, step by step; masks and
going backwards as LSTM's; gradients against float64 finite differences; a next-frame
model (after keras-io's ConvLSTM video prediction) eagerly and compiled."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import braze
from braze import keras
from braze.keras import layers
from tests.gradcheck import assert_gradients_match

rng = np.random.default_rng(0)
FRAMES = rng.normal(size=(2, 4, 5, 6, 3)).astype("float32")


def numpy_conv_same(x, kernel):
    """A stride-1 'same' convolution of NHWC ``x`` with an HWIO kernel (odd sizes)."""
    kh, kw = kernel.shape[:2]
    padded = np.pad(x, ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    y = np.zeros((*x.shape[:3], kernel.shape[-1]))
    for i, j in itertools.product(range(kh), range(kw)):
        y += padded[:, i : i + x.shape[1], j : j + x.shape[2]] @ kernel[i, j]
    return y


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def numpy_conv_lstm(frames, kernel, recurrent, bias):
    filters = recurrent.shape[2]
    h = np.zeros((*frames.shape[:1], *frames.shape[2:4], filters))
    c = np.zeros_like(h)
    outputs = []
    for t in range(frames.shape[1]):
        z = numpy_conv_same(frames[:, t], kernel) + bias + numpy_conv_same(h, recurrent)
        i, f, g, o = np.split(z, 4, axis=-1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        outputs.append(h)
    return np.stack(outputs, 1), h, c


def test_conv_lstm_matches_a_numpy_lstm_of_convolutions():
    layer = layers.ConvLSTM2D(2, 3, padding="same", return_sequences=True, return_state=True)
    outputs, h, c = layer(FRAMES)
    kernel, recurrent, bias = (w.numpy().astype(np.float64) for w in (layer.kernel, layer.recurrent_kernel, layer.bias))
    assert kernel.shape == (3, 3, 3, 8) and recurrent.shape == (3, 3, 2, 8)
    np.testing.assert_array_equal(bias, [0, 0, 1, 1, 0, 0, 0, 0])  # the forget gate's bias starts at one
    want_outputs, want_h, want_c = numpy_conv_lstm(FRAMES.astype(np.float64), kernel, recurrent, bias)
    np.testing.assert_allclose(outputs.numpy(), want_outputs, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(h.numpy(), want_h, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(c.numpy(), want_c, rtol=1e-4, atol=1e-5)
    last = layers.ConvLSTM2D(2, 3, strides=2, padding="valid")(FRAMES)
    assert last.shape == (2, 2, 2, 2)


def test_conv_lstm_masks_and_goes_backwards_as_lstm_does():
    layer = layers.ConvLSTM2D(2, 3, padding="same", go_backwards=True)
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1]], bool)
    final = layer(FRAMES, mask=braze.tensor(mask)).numpy()
    for row, length in enumerate(mask.sum(1)):
        alone = layer(FRAMES[row : row + 1, :length]).numpy()[0]
        np.testing.assert_allclose(final[row], alone, rtol=1e-5, atol=1e-6)
    with pytest.raises(braze.ShapeError, match="height, width, channels"):
        layer(FRAMES[0])


def test_conv_lstm_gradients_match_finite_differences():
    layer = layers.ConvLSTM2D(1, 3, padding="same", dtype="float64")
    x = rng.normal(size=(1, 2, 3, 3, 2))
    layer(braze.tensor(x))
    assert_gradients_match(layer, [x], [0], rtol=1e-5, atol=1e-7)


def test_a_next_frame_model_trains_alike_eagerly_and_compiled():
    frames = rng.random((4, 5, 6, 6, 1)).astype("float32")
    histories = []
    for jit in (False, True):
        keras.utils.set_random_seed(3)
        inputs = layers.Input(shape=(None, 6, 6, 1))
        x = layers.ConvLSTM2D(filters=4, kernel_size=(3, 3), padding="same", return_sequences=True, activation="relu")(
            inputs
        )
        x = layers.BatchNormalization()(x)
        x = layers.Conv3D(filters=1, kernel_size=(3, 3, 3), activation="sigmoid", padding="same")(x)
        model = keras.models.Model(inputs, x)
        model.compile(loss=keras.losses.binary_crossentropy, optimizer=keras.optimizers.Adam(), jit_compile=jit)
        histories.append(model.fit(frames[:, :-1], frames[:, 1:], batch_size=2, epochs=2, verbose=0).history["loss"])
    np.testing.assert_allclose(histories[1], histories[0], rtol=1e-4)
