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


def test_names_nothing_reads_back_are_refused_before_anything_is_written(tmp_path):
    for name in ("my_model", "weights.pt"):
        with pytest.raises(ValueError, match="ending in .keras"):
            functional().save(tmp_path / name)
        assert not (tmp_path / name).exists()
    with pytest.raises(ValueError, match="ending in .keras"):
        keras.callbacks.ModelCheckpoint(str(tmp_path / "ckpt-loss={loss:.2f}"))
    with pytest.warns(UserWarning, match="not HDF5"):
        functional().save(tmp_path / "m.weights.h5")  # Keras's weights name: weights, not a model
    with pytest.raises(CheckpointError, match="not a model saved by braze"):
        keras.models.load_model(tmp_path / "m.weights.h5")


def test_get_config_and_from_config_rebuild_sequential_and_functional_models():
    sequential = keras.Sequential([keras.Input((4,)), layers.Dense(3, activation="relu"), Gate(3), layers.Dense(1)])
    rebuilt = keras.Sequential.from_config(sequential.get_config(), custom_objects={"Gate": Gate})
    assert [type(layer) for layer in rebuilt.layers] == [type(layer) for layer in sequential.layers]
    rebuilt.set_weights(sequential.get_weights())
    np.testing.assert_array_equal(rebuilt(X).numpy(), sequential(X).numpy())
    model = functional()
    with keras.saving.custom_object_scope({"Gate": Gate}):
        again = keras.Model.from_config(model.get_config())
    again.set_weights(model.get_weights())
    assert again(X).shape == (16, 1)
    np.testing.assert_allclose(again(X).numpy(), model(X).numpy(), rtol=1e-6)


def test_clone_model_and_serialize_make_the_architecture_with_new_weights():
    model = functional()
    clone = keras.models.clone_model(model)
    assert [type(layer) for layer in clone.layers] == [type(layer) for layer in model.layers]
    assert not np.array_equal(clone.layers[1].kernel.numpy(), model.layers[1].kernel.numpy())
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone(X).numpy(), model(X).numpy(), rtol=1e-6)
    dense = keras.layers.deserialize(keras.layers.serialize(layers.Dense(7, activation="tanh", use_bias=False)))
    assert isinstance(dense, layers.Dense) and dense.units == 7 and dense(X).shape == (16, 7)
    assert len(dense.weights) == 1 and np.all(np.abs(dense(X).numpy()) < 1)
    with pytest.raises(NotImplementedError, match="clone_function"):
        keras.models.clone_model(model, clone_function=lambda layer: layer)


class Tokens(keras.Model):
    """A subclassed model with integer inputs and no get_config of its own."""

    def __init__(self, width=3, **kwargs):
        super().__init__(**kwargs)
        self.embed = layers.Embedding(10, width)
        self.head = layers.Dense(1)

    def call(self, ids):
        return self.head(keras.ops.mean(self.embed(ids), axis=1))


def test_a_subclassed_model_is_called_once_on_load_to_make_its_weights(tmp_path):
    model = Tokens(width=4)
    ids = np.array([[1, 2, 3], [4, 5, 9]])
    expected = model(ids).numpy()
    model.save(tmp_path / "tokens.keras")
    restored = keras.models.load_model(tmp_path / "tokens.keras", custom_objects={"Tokens": Tokens})
    assert restored.embed.weights[0].shape == (10, 4)
    np.testing.assert_array_equal(restored(ids).numpy(), expected)


def test_load_weights_with_skip_mismatch_loads_what_fits(tmp_path):
    model = functional()
    model.save_weights(tmp_path / "w.npz")
    inputs = keras.Input(shape=(4,), name="features")
    a = layers.Dense(5, activation="relu")(inputs)
    other = keras.Model(inputs, layers.Dense(3)(a))  # the first Dense fits, the head does not
    with pytest.raises(CheckpointError):
        other.load_weights(tmp_path / "w.npz")
    with pytest.warns(UserWarning, match="skipped the weights that do not fit"):
        status = other.load_weights(tmp_path / "w.npz", skip_mismatch=True)
    np.testing.assert_array_equal(other.layers[1].kernel.numpy(), model.layers[1].kernel.numpy())
    with pytest.raises(AssertionError, match="not loaded"):
        status.assert_consumed()
    functional().load_weights(tmp_path / "w.npz").assert_consumed()


def softsign_squared(x):
    return (x / (1 + braze.abs(x))) ** 2


class Offset(keras.layers.Layer):
    """A layer whose config holds a 0-d array and a vector, as keras-io's guide writes it."""

    def __init__(self, offset, scale=None, **kwargs):
        super().__init__(**kwargs)
        self.offset = np.float32(offset)
        self.scale = np.ones(2, np.float32) if scale is None else np.asarray(scale, np.float32)

    def call(self, x):
        return x * self.scale + self.offset

    def get_config(self):
        return {**super().get_config(), "offset": np.array(self.offset), "scale": self.scale}


def test_configs_hold_numpy_values_and_plain_functions_found_by_name(tmp_path):
    inputs = keras.Input((2,))
    hidden = layers.Activation(softsign_squared)(Offset(0.5, [2.0, -1.0])(inputs))
    model = keras.Model(inputs, hidden)
    model.save(tmp_path / "f.keras")
    with pytest.raises(ValueError, match="custom_objects"):
        keras.models.load_model(tmp_path / "f.keras", custom_objects={"Offset": Offset})
    with keras.utils.custom_object_scope({"Offset": Offset, "softsign_squared": softsign_squared}):
        restored = keras.models.load_model(tmp_path / "f.keras")
    x = np.array([[1.0, 3.0], [-2.0, 0.0]], np.float32)
    shifted = x * np.array([2.0, -1.0], np.float32) + 0.5
    np.testing.assert_allclose(restored(x).numpy(), (shifted / (1 + np.abs(shifted))) ** 2, rtol=1e-6)


def test_round_trips_keep_constants_the_keras_embedding_frozen_models_and_the_container(tmp_path):
    inputs = keras.Input((6,))
    scaled = keras.Model(inputs, inputs * np.arange(6.0, dtype=np.float32))
    scaled.save(tmp_path / "scaled.keras")
    ones = np.ones((2, 6), np.float32)
    np.testing.assert_array_equal(keras.models.load_model(tmp_path / "scaled.keras")(ones).numpy(), ones * np.arange(6))
    ids = keras.Input((3,), dtype="int32")
    embedded = keras.models.clone_model(keras.Model(ids, layers.Embedding(10, 4)(ids)))
    assert isinstance(embedded.layers[1], layers.Embedding) and embedded(np.array([[1, 2, 3]])).shape == (1, 3, 4)
    frozen = keras.Sequential([keras.Input((3,)), layers.Dense(2)])
    frozen.trainable = False
    assert keras.models.clone_model(frozen).trainable_weights == []
    container = braze.nn.Sequential(layers.Dense(2, input_shape=(3,)), layers.Dropout(0.5))
    assert type(keras.models.clone_model(container)) is braze.nn.Sequential
    wrapper = layers.Bidirectional(layers.LSTM(3))
    assert layers.Bidirectional.from_config(wrapper.get_config()).forward_layer is not wrapper.forward_layer


class Pair(keras.Model):
    """A subclassed model of two inputs, given positionally or by name."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.left, self.right = layers.Dense(2), layers.Dense(2)

    def call(self, a, b=None, training=None):
        return self.left(a) + self.right(b)


@pytest.mark.parametrize("by_name", [False, True])
def test_a_subclassed_model_of_two_inputs_loads(tmp_path, by_name):
    model = Pair()
    a, b = np.ones((2, 3), np.float32), np.full((2, 4), 2.0, np.float32)
    expected = (model(a, b=b) if by_name else model(a, b)).numpy()
    model.save(tmp_path / "pair.keras")
    restored = keras.models.load_model(tmp_path / "pair.keras", custom_objects={"Pair": Pair})
    np.testing.assert_array_equal(restored(a, b).numpy(), expected)


def test_load_weights_reads_a_whole_model_file_as_keras_does(tmp_path):
    model = keras.Sequential([keras.Input((3,)), layers.Dense(2)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(np.ones((4, 3), np.float32), np.ones((4, 2), np.float32), verbose=0)  # optimizer slots saved too
    model.save(tmp_path / "whole.keras")
    twin = keras.Sequential([keras.Input((3,)), layers.Dense(2)])
    twin.load_weights(tmp_path / "whole.keras")  # the model's weights, not its optimizer's
    for saved, loaded in zip(model.get_weights(), twin.get_weights(), strict=True):
        np.testing.assert_array_equal(loaded, saved)


@pytest.mark.parametrize(
    "schedule",
    [
        keras.optimizers.schedules.ExponentialDecay(1e-3, 100, 0.96),
        keras.optimizers.schedules.CosineDecay(1e-3, 100),
        keras.optimizers.schedules.PiecewiseConstantDecay([10], [1e-3, 1e-4]),
        keras.optimizers.schedules.InverseTimeDecay(1e-3, 10, 0.5),
        keras.optimizers.schedules.PolynomialDecay(1e-3, 100),
    ],
    ids=lambda s: type(s).__name__,
)
def test_an_optimizer_with_a_learning_rate_schedule_loads_without_custom_objects(tmp_path, schedule):
    model = keras.Sequential([keras.Input((3,)), layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(schedule), loss="mse")
    model.save(tmp_path / "scheduled.keras")
    loaded = keras.models.load_model(tmp_path / "scheduled.keras")
    rate = loaded.optimizer.learning_rate
    assert type(rate) is type(schedule) and rate.get_config() == schedule.get_config()


@pytest.mark.parametrize("widths", [(4, 4), (8, 2)], ids=["same shapes", "other shapes"])
def test_optimizer_slots_return_to_their_weights_when_the_optimizer_met_them_in_another_order(tmp_path, widths):
    rng = np.random.default_rng(0)
    x, y = rng.random((32, 4)).astype("float32"), rng.random((32, widths[1])).astype("float32")
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), layers.Dense(widths[0], name="base"), layers.Dense(widths[1])])
    model.layers[0].trainable = False  # the head trains first: the optimizer meets the base last
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    model.layers[0].trainable = True
    model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    model.save(tmp_path / "tuned.keras")
    loaded = keras.models.load_model(tmp_path / "tuned.keras")
    model.fit(x, y, epochs=1, batch_size=8, verbose=0, shuffle=False)
    loaded.fit(x, y, epochs=1, batch_size=8, verbose=0, shuffle=False)
    for got, want in zip(loaded.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_a_model_compiled_with_a_braze_loss_function_loads(tmp_path):
    """``braze train cnn --save x.keras`` compiles with braze.nn.binary_cross_entropy, which a
    loaded model finds again by its name (it was taken for a function of the user's)."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), layers.Dense(1, activation="sigmoid")])
    model.compile("adam", loss=braze.nn.binary_cross_entropy)
    x = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)
    y = (x.sum(1, keepdims=True) > 0).astype(np.float32)
    model.fit(x, y, epochs=1, verbose=0)
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras")
    assert loaded.loss is braze.nn.binary_cross_entropy
    assert loaded.evaluate(x, y, verbose=0) == pytest.approx(model.evaluate(x, y, verbose=0), rel=1e-6)
