"""Keras's DepthwiseConv2D and SeparableConv2D: weight layouts and parameter counts as
Keras's, values against per-channel direct convolutions (``op_cases.depthwise_ref``)
followed by a 1x1 product, eagerly and lazily, gradients against float64 finite
differences, and a model of them trained and saved."""

from __future__ import annotations

import numpy as np
import pytest
from default_device import made_on
from gradcheck import assert_gradients_match
from op_cases import depthwise_ref

import braze
from braze import keras

RNG = np.random.default_rng(5)
X = RNG.standard_normal((2, 7, 6, 3)).astype(np.float32)


@pytest.mark.parametrize("device", [braze.CPU, braze.LAZY_CPU], ids=["eager", "lazy"])
def test_depthwise_and_separable_values(device):
    with made_on(device):
        depthwise = keras.layers.DepthwiseConv2D(3, strides=2, padding="same", depth_multiplier=2, activation="relu")
        separable = keras.layers.SeparableConv2D(4, (2, 3), dilation_rate=(2, 1), use_bias=False)
    x = braze.tensor(X, device=device)
    got_depthwise, got_separable = depthwise(x).numpy(), separable(x).numpy()
    kernel, bias = depthwise.depthwise_kernel.numpy(), depthwise.bias.numpy()
    assert kernel.shape == (3, 3, 3, 2) and bias.shape == (6,)
    want = np.maximum(depthwise_ref(X, kernel, stride=(2, 2), padding="SAME") + bias, 0.0)
    np.testing.assert_allclose(got_depthwise, want, rtol=1e-5, atol=1e-5)
    inner, pointwise = separable.depthwise_kernel.numpy(), separable.pointwise_kernel.numpy()
    assert inner.shape == (2, 3, 3, 1) and pointwise.shape == (1, 1, 3, 4)
    want = depthwise_ref(X, inner, dilation=(2, 1)) @ pointwise[0, 0]
    np.testing.assert_allclose(got_separable, want, rtol=1e-5, atol=1e-5)


def test_parameter_counts_are_keras():
    model = keras.Sequential(
        [
            keras.Input((8, 8, 3)),
            keras.layers.DepthwiseConv2D(3, depth_multiplier=2),
            keras.layers.SeparableConv2D(5, 3),
        ]
    )
    assert [layer.count_params() for layer in model.layers] == [3 * 3 * 3 * 2 + 6, 3 * 3 * 6 + 6 * 5 + 5]


def test_separable_gradients_match_finite_differences():
    layer = keras.layers.SeparableConv2D(2, 3, padding="same", depth_multiplier=2, dtype="float64")
    layer(braze.tensor(np.zeros((1, 4, 4, 2))))

    def fn(x, depthwise, pointwise, bias):
        layer.depthwise_kernel, layer.pointwise_kernel, layer.bias = depthwise, pointwise, bias
        return layer(x) ** 2

    weights = [w.numpy() for w in (layer.depthwise_kernel, layer.pointwise_kernel)]
    arrays = [RNG.standard_normal((2, 4, 4, 2)), *weights, RNG.standard_normal(2)]
    assert_gradients_match(fn, arrays, [0, 1, 2, 3], rtol=1e-5, atol=1e-7)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="depth_multiplier must be a positive integer"):
        keras.layers.DepthwiseConv2D(3, depth_multiplier=0)
    with pytest.raises(NotImplementedError, match="depthwise_constraint"):
        keras.layers.SeparableConv2D(2, 3, depthwise_constraint="non_neg")
    with pytest.raises(AttributeError, match="Conv3DTranspose: braze's transposed convolutions are 1-D and 2-D"):
        keras.layers.Conv3DTranspose  # noqa: B018 - the attribute lookup is what fails


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit_compile"])
def test_a_separable_model_trains_and_saves(tmp_path, jit):
    model = keras.Sequential(
        [
            keras.Input((7, 6, 3)),
            keras.layers.SeparableConv2D(8, 3, padding="same", activation="relu"),
            keras.layers.DepthwiseConv2D(3),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(1),
        ]
    )
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse", jit_compile=jit)
    history = model.fit(X, np.array([1.0, -1.0]), epochs=5, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    model.save(tmp_path / "separable.keras")
    loaded = keras.models.load_model(tmp_path / "separable.keras")
    np.testing.assert_array_equal(loaded.predict(X, verbose=0), model.predict(X, verbose=0))


def test_one_dimensional_depthwise_and_separable_convolutions_are_the_2d_ones_one_row_high():
    sequences = RNG.standard_normal((2, 9, 3)).astype(np.float32)
    depthwise = keras.layers.DepthwiseConv1D(3, strides=2, padding="same", depth_multiplier=2)
    separable = keras.layers.SeparableConv1D(4, 2, dilation_rate=2, use_bias=False)
    got_depthwise, got_separable = depthwise(sequences).numpy(), separable(sequences).numpy()
    kernel = depthwise.depthwise_kernel.numpy()
    assert kernel.shape == (3, 3, 2)
    want = depthwise_ref(sequences[:, None], kernel[None], stride=(1, 2), padding="SAME")[:, 0]
    np.testing.assert_allclose(got_depthwise, want + depthwise.bias.numpy(), rtol=1e-5, atol=1e-5)
    inner, pointwise = separable.depthwise_kernel.numpy(), separable.pointwise_kernel.numpy()
    assert inner.shape == (2, 3, 1) and pointwise.shape == (1, 3, 4)
    want = depthwise_ref(sequences[:, None], inner[None], dilation=(1, 2))[:, 0] @ pointwise[0]
    np.testing.assert_allclose(got_separable, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(braze.ShapeError, match=r"\(batch, steps, channels\) sequences"):
        depthwise(X)
