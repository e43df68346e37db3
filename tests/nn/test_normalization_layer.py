"""Keras's Normalization preprocessing layer: statistics learned by ``adapt`` (from an
array or a dataset of batches) or given, against NumPy's mean and variance; its values
and their inverse; its statistics saved with the model and left alone by training,
eagerly and compiled."""

from __future__ import annotations

import numpy as np
import pytest

import braze
import braze as tf
from braze import keras

RNG = np.random.default_rng(11)
DATA = (RNG.standard_normal((200, 3)) * [1.0, 5.0, 0.1] + [0.0, 2.0, -3.0]).astype(np.float32)


def test_adapt_learns_numpys_mean_and_variance_from_an_array_or_a_dataset():
    layer = keras.layers.Normalization()
    layer.adapt(DATA)
    np.testing.assert_allclose(layer.adapt_mean.numpy(), DATA.astype(np.float64).mean(0), rtol=1e-6)
    np.testing.assert_allclose(layer.adapt_variance.numpy(), DATA.astype(np.float64).var(0), rtol=1e-6)
    assert layer.mean.shape == layer.variance.shape == (1, 3)  # Keras's, to broadcast against a batch
    batched = keras.layers.Normalization()
    batched.adapt(tf.data.Dataset.from_tensor_slices(DATA).batch(64))
    np.testing.assert_allclose(batched.adapt_variance.numpy(), layer.adapt_variance.numpy(), rtol=1e-6)
    first = keras.layers.Normalization()
    first.adapt(tf.data.Dataset.from_tensor_slices(DATA).batch(64), steps=1)
    np.testing.assert_allclose(first.adapt_mean.numpy(), DATA[:64].astype(np.float64).mean(0), rtol=1e-5)
    # A dataset not batched, of one feature a sample: Keras batches it before it adapts.
    samples = keras.layers.Normalization()
    samples.adapt(tf.data.Dataset.from_tensor_slices(DATA[:, 0]).map(lambda x: tf.expand_dims(x, -1)))
    np.testing.assert_allclose(samples.adapt_mean.numpy(), DATA[:, :1].astype(np.float64).mean(0), rtol=1e-6)
    np.testing.assert_allclose(samples.adapt_variance.numpy(), DATA[:, :1].astype(np.float64).var(0), rtol=1e-6)


@pytest.mark.parametrize("device", [braze.CPU, braze.LAZY_CPU], ids=["eager", "lazy"])
def test_values_and_their_inverse(device):
    layer = keras.layers.Normalization(axis=-1)
    layer.adapt(DATA)
    x = braze.tensor(DATA[:5], device=device)
    layer.to(device)
    want = (DATA[:5] - DATA.astype(np.float64).mean(0)) / DATA.astype(np.float64).std(0)
    np.testing.assert_allclose(layer(x).numpy(), want, rtol=1e-5, atol=1e-5)
    inverse = keras.layers.Normalization(mean=DATA.mean(0), variance=DATA.var(0), invert=True).to(device)
    np.testing.assert_allclose(inverse(layer(x)).numpy(), DATA[:5], rtol=1e-5, atol=1e-5)


def test_given_statistics_axis_none_and_a_tiny_variance():
    scalar = keras.layers.Normalization(axis=None, mean=2.0, variance=4.0)
    np.testing.assert_allclose(scalar(braze.tensor([[4.0, 0.0]])).numpy(), [[1.0, -1.0]])
    pooled = keras.layers.Normalization(axis=None)
    pooled.adapt(DATA[:, 1])
    assert pooled.adapt_mean.shape == ()
    np.testing.assert_allclose(pooled.adapt_mean.numpy(), DATA[:, 1].astype(np.float64).mean(), rtol=1e-6)
    constant = keras.layers.Normalization(mean=[1.0], variance=[0.0])  # divided by 1e-7, not by zero
    np.testing.assert_allclose(constant(braze.tensor([[1.5]])).numpy(), [[0.5e7]], rtol=1e-6)


def test_images_per_channel():
    images = RNG.standard_normal((4, 5, 6, 3)).astype(np.float32) * [1.0, 2.0, 3.0]
    layer = keras.layers.Normalization(axis=-1)
    layer.adapt(images)
    assert layer.adapt_mean.shape == (3,)
    np.testing.assert_allclose(layer.adapt_variance.numpy(), images.astype(np.float64).var(axis=(0, 1, 2)), rtol=1e-5)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="give both mean and variance"):
        keras.layers.Normalization(mean=1.0)
    layer = keras.layers.Normalization()
    layer.adapt(DATA)
    with pytest.raises(ValueError, match="has features \\(4,\\), the layer \\(3,\\)"):
        layer.adapt(np.ones((5, 4)))
    with pytest.raises(ValueError, match="must name feature axes"):
        keras.layers.Normalization(axis=0).adapt(DATA)
    with pytest.raises(ValueError, match="holds no batch"):
        keras.layers.Normalization().adapt(iter([]))


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit_compile"])
def test_training_leaves_the_statistics_and_a_saved_model_keeps_them(tmp_path, jit):
    normalizer = keras.layers.Normalization()
    normalizer.adapt(DATA)
    mean, variance = normalizer.adapt_mean.numpy().copy(), normalizer.adapt_variance.numpy().copy()
    model = keras.Sequential([keras.Input((3,)), normalizer, keras.layers.Dense(8, "relu"), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mae", jit_compile=jit)
    history = model.fit(DATA, DATA @ [1.0, 0.2, 5.0], epochs=5, batch_size=50, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert len(model.trainable_weights) == 4
    np.testing.assert_array_equal(normalizer.adapt_mean.numpy(), mean)
    np.testing.assert_array_equal(normalizer.adapt_variance.numpy(), variance)
    model.save(tmp_path / "normalized.keras")
    loaded = keras.models.load_model(tmp_path / "normalized.keras")
    np.testing.assert_array_equal(loaded.predict(DATA, verbose=0), model.predict(DATA, verbose=0))


def test_a_model_with_given_statistics_saves_them_as_numbers(tmp_path):
    given = keras.layers.Normalization(mean=np.array([1.0, 2.0, 3.0]), variance=np.array([1.0, 4.0, 9.0]))
    model = keras.Sequential([keras.Input((3,)), given, keras.layers.Dense(1)])
    model.save(tmp_path / "given.keras")
    loaded = keras.models.load_model(tmp_path / "given.keras")
    np.testing.assert_array_equal(loaded.predict(DATA, verbose=0), model.predict(DATA, verbose=0))
    assert loaded.layers[0].get_config()["variance"] == [1.0, 4.0, 9.0]
    assert given.weights == [] and model.count_params() == 4  # constants, as Keras's
    with pytest.raises(ValueError, match="was given its mean and variance"):
        given.adapt(DATA)
