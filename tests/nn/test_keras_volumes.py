"""Keras's 3-D layers (built from the 2-D kernels) against direct NumPy loops over the
volume, and float64 finite differences for Conv3D's gradients."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import braze
from braze import keras
from braze.keras import layers
from tests.gradcheck import assert_gradients_match

rng = np.random.default_rng(0)
VOLUMES = rng.normal(size=(2, 5, 6, 7, 3)).astype("float32")


def _same(size: int, span: int, stride: int) -> tuple[int, int]:
    out = -(-size // stride)
    total = max((out - 1) * stride + span - size, 0)
    return total // 2, total - total // 2


def numpy_conv3d(x, kernel, strides, padding, dilation):
    spans = [(k - 1) * d + 1 for k, d in zip(kernel.shape[:3], dilation, strict=True)]
    if padding == "same":
        pads = [_same(n, s, st) for n, s, st in zip(x.shape[1:4], spans, strides, strict=True)]
        x = np.pad(x, ((0, 0), *pads, (0, 0)))
    outs = [(n - s) // st + 1 for n, s, st in zip(x.shape[1:4], spans, strides, strict=True)]
    y = np.zeros((x.shape[0], *outs, kernel.shape[-1]))
    for od, oh, ow in itertools.product(*map(range, outs)):
        for kd, kh, kw in itertools.product(*map(range, kernel.shape[:3])):
            d = od * strides[0] + kd * dilation[0]
            h = oh * strides[1] + kh * dilation[1]
            w = ow * strides[2] + kw * dilation[2]
            y[:, od, oh, ow] += x[:, d, h, w] @ kernel[kd, kh, kw]
    return y


@pytest.mark.parametrize(
    ("kernel_size", "strides", "padding", "dilation"),
    [
        ((3, 3, 3), (1, 1, 1), "valid", (1, 1, 1)),
        ((2, 3, 2), (2, 1, 2), "same", (1, 1, 1)),
        ((2, 2, 3), (1, 1, 1), "same", (2, 1, 1)),
    ],
)
def test_conv3d_matches_a_direct_loop(kernel_size, strides, padding, dilation):
    layer = layers.Conv3D(4, kernel_size, strides=strides, padding=padding, dilation_rate=dilation, use_bias=False)
    got = layer(VOLUMES).numpy()
    expected = numpy_conv3d(
        VOLUMES.astype(np.float64), layer.kernel.numpy().astype(np.float64), strides, padding, dilation
    )
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    assert layer.kernel.shape == (*kernel_size, 3, 4)


def test_conv3d_gradients_match_finite_differences():
    layer = layers.Conv3D(2, (2, 2, 2), padding="same", dtype="float64")
    x = rng.normal(size=(1, 3, 3, 3, 2))
    layer(braze.tensor(x))
    assert_gradients_match(layer, [x], [0], rtol=1e-5, atol=1e-7)


def numpy_pool3d(x, size, strides, padding, reduce):
    if padding == "same":
        pads = [_same(n, s, st) for n, s, st in zip(x.shape[1:4], size, strides, strict=True)]
    else:
        pads = [(0, 0)] * 3
    outs = [(n + a + b - s) // st + 1 for n, (a, b), s, st in zip(x.shape[1:4], pads, size, strides, strict=True)]
    y = np.zeros((x.shape[0], *outs, x.shape[-1]))
    for index in itertools.product(*map(range, outs)):
        box = tuple(
            slice(max(o * st - a, 0), min(o * st - a + s, n))
            for o, st, (a, _), s, n in zip(index, strides, pads, size, x.shape[1:4], strict=True)
        )
        y[(slice(None), *index)] = reduce(x[(slice(None), *box)].reshape(x.shape[0], -1, x.shape[-1]), axis=1)
    return y


@pytest.mark.parametrize("padding", ["valid", "same"])
@pytest.mark.parametrize(("kind", "reduce"), [(layers.MaxPooling3D, np.max), (layers.AveragePooling3D, np.mean)])
def test_pooling3d_matches_a_direct_loop(kind, reduce, padding):
    got = kind((2, 3, 2), strides=(2, 2, 3), padding=padding)(VOLUMES).numpy()
    np.testing.assert_allclose(got, numpy_pool3d(VOLUMES, (2, 3, 2), (2, 2, 3), padding, reduce), rtol=1e-5, atol=1e-6)


def test_the_other_volume_layers():
    np.testing.assert_allclose(
        layers.GlobalAveragePooling3D()(VOLUMES).numpy(), VOLUMES.mean(axis=(1, 2, 3)), rtol=1e-5
    )
    np.testing.assert_array_equal(layers.GlobalMaxPooling3D()(VOLUMES).numpy(), VOLUMES.max(axis=(1, 2, 3)))
    up = layers.UpSampling3D((2, 1, 3))(VOLUMES).numpy()
    np.testing.assert_array_equal(up, VOLUMES.repeat(2, 1).repeat(3, 3))
    padded = layers.ZeroPadding3D(((1, 0), (0, 2), (1, 1)))(VOLUMES).numpy()
    np.testing.assert_array_equal(padded, np.pad(VOLUMES, ((0, 0), (1, 0), (0, 2), (1, 1), (0, 0))))
    np.testing.assert_array_equal(layers.Cropping3D(1)(VOLUMES).numpy(), VOLUMES[:, 1:-1, 1:-1, 1:-1])
    dropped = layers.SpatialDropout3D(0.5, seed=1)(VOLUMES, training=True).numpy()
    kept = dropped[:, :1, :1, :1, :] != 0
    np.testing.assert_array_equal(dropped, np.where(kept, VOLUMES * 2, 0))


def test_a_volume_classifier_trains_alike_eagerly_and_compiled():
    # After keras-io's "3D image classification from CT scans", shrunk.
    x = rng.normal(size=(8, 8, 8, 8, 1)).astype("float32")
    y = (x.mean(axis=(1, 2, 3, 4)) > 0).astype("float32")
    histories = []
    for jit in (False, True):
        keras.utils.set_random_seed(5)
        inputs = keras.Input((8, 8, 8, 1))
        h = layers.Conv3D(filters=4, kernel_size=3, activation="relu")(inputs)
        h = layers.MaxPool3D(pool_size=2)(h)
        h = layers.BatchNormalization()(h)
        h = layers.GlobalAveragePooling3D()(h)
        outputs = layers.Dense(units=1, activation="sigmoid")(layers.Dropout(0.3)(h))
        model = keras.Model(inputs, outputs, name="3dcnn")
        model.compile(loss="binary_crossentropy", optimizer=keras.optimizers.Adam(1e-3), jit_compile=jit)
        histories.append(model.fit(x, y, batch_size=4, epochs=2, verbose=0).history["loss"])
    np.testing.assert_allclose(histories[1], histories[0], rtol=1e-4)
