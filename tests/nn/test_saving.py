"""model.save("x.keras") and keras.models.load_model: functional, Sequential and registered
subclassed models come back with their weights, buffers, compile settings and optimizer
state (training on after a load equals training on without one); what has no config is
an error when saving; weights-only files are braze's checkpoints, HDF5 names are refused."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

import braze
from braze import keras
from braze.keras import layers
from braze.nn import CheckpointError

X = np.random.default_rng(0).standard_normal((16, 4)).astype(np.float32)
Y = (X[:, :1] > 0).astype(np.float32)


def functional():
    inputs = keras.Input(shape=(4,), name="features")
    a = layers.Dense(5, activation="relu")(inputs)
    b = layers.BatchNormalization()(layers.Dense(5)(inputs))
    merged = layers.Concatenate()([a, b * 0.5])
    model = keras.Model(inputs, layers.Dense(1, activation="sigmoid")(merged))
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="binary_crossentropy", metrics=["accuracy", "auc"])
    return model


def test_a_functional_model_trains_on_after_a_load_as_without_one(tmp_path):
    braze.manual_seed(0)
    model = functional()
    model.fit(X, Y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    model.save(tmp_path / "model.keras")
    assert sorted(zipfile.ZipFile(tmp_path / "model.keras").namelist()) == ["config.json", "model.weights.npz"]
    restored = keras.models.load_model(tmp_path / "model.keras")
    np.testing.assert_array_equal(restored.predict(X, verbose=0), model.predict(X, verbose=0))
    for m in (model, restored):
        m.fit(X, Y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(model.get_weights(), restored.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)  # Adam's slots and step count came back
    assert restored.evaluate(X, Y, verbose=0) == pytest.approx(model.evaluate(X, Y, verbose=0), rel=1e-5)


@keras.saving.register_keras_serializable()
class Gate(keras.layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")

    def call(self, x):
        return braze.sigmoid(x @ self.kernel) * x[:, : self.units]


def test_sequential_with_a_registered_layer_round_trips(tmp_path):
    model = keras.Sequential([layers.Dense(4, input_shape=(4,)), Gate(2), layers.Dense(1)])
    model.save(tmp_path / "gated.keras")
    restored = keras.models.load_model(tmp_path / "gated.keras")
    assert isinstance(restored.layers[1], Gate) and not restored.compiled
    np.testing.assert_array_equal(restored(X).numpy(), model(X).numpy())
    json_model = keras.models.model_from_json(braze.nn.saving.to_json(model))
    assert [type(layer) for layer in json_model.layers] == [type(layer) for layer in model.layers]


def test_what_cannot_be_saved_or_loaded_is_an_error_naming_it(tmp_path):
    lambda_model = keras.Sequential([layers.Dense(2, input_shape=(4,)), layers.Lambda(lambda x: x * 2)])
    with pytest.raises(ValueError, match="Lambda layer's Python function has no config"):
        lambda_model.save(tmp_path / "lambda.keras")
    with pytest.warns(UserWarning, match="not HDF5: braze reads it back"):
        functional().save_weights(tmp_path / "weights.h5")
    with pytest.raises(CheckpointError, match="holds a whole model"):
        functional().save_weights(tmp_path / "weights.keras")

    class Unregistered(keras.layers.Layer):
        def call(self, x):
            return x

    keras.Sequential([layers.Dense(2, input_shape=(4,)), Unregistered()]).save(tmp_path / "custom.keras")
    with pytest.raises(ValueError, match=r"custom_objects=\{'Unregistered'"):
        keras.models.load_model(tmp_path / "custom.keras")
    assert keras.models.load_model(tmp_path / "custom.keras", custom_objects={"Unregistered": Unregistered})


def test_weights_only_files_are_checkpoints(tmp_path):
    model = functional()
    model.save_weights(tmp_path / "weights.safetensors")
    other = functional()
    other.load_weights(tmp_path / "weights.safetensors")
    for a, b in zip(model.get_weights(), other.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
