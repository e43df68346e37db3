"""Keras's variable idioms: a metric's add_weight, a layer's add_variable, the optimizer's
learning rate as a variable (assign, numpy, tf.keras's backend.get_value/set_value),
dtypes that equal their names, and tf.keras's backend functions against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze import keras


class CountAbove(keras.metrics.Metric):
    """keras-io's custom metric shape: state from add_weight, updated with assign_add."""

    def __init__(self, threshold=0.5, **kwargs):
        super().__init__(**kwargs)
        self.threshold = threshold
        self.count = self.add_weight(name="count", initializer="zeros")
        self.offsets = self.add_weight(shape=(2,), initializer="ones", name="offsets")

    def update_state(self, y_true, y_pred, sample_weight=None):
        self.count.assign_add(keras.ops.sum(keras.ops.cast(y_pred > self.threshold, "float32")))

    def result(self):
        return self.count


def test_a_metrics_add_weight_honours_its_initializer_and_resets_to_it():
    metric = CountAbove()
    np.testing.assert_array_equal(metric.offsets.numpy(), [1.0, 1.0])
    scores = np.array([0.2, 0.7, 0.9, 0.4], np.float32)
    metric.update_state(None, scores)
    metric.update_state(None, scores)
    assert float(metric.result()) == 2 * np.sum(scores > 0.5)
    metric.reset_state()
    assert float(metric.result()) == 0.0


def test_add_variable_is_add_weight_shape_first():
    class Bias(keras.layers.Layer):
        def build(self, input_shape):
            self.b = self.add_variable((input_shape[-1],), initializer="ones", name="b")

        def call(self, x):
            return x + self.b

    layer = Bias()
    np.testing.assert_array_equal(layer(np.zeros((2, 3), np.float32)).numpy(), np.ones((2, 3)))
    assert layer.trainable_weights == [layer.b]
    named_first = keras.layers.Layer()
    weight = named_first.add_variable("kernel", shape=(2, 3), initializer="zeros")  # tf.keras's order
    assert weight.shape == (2, 3) and named_first.kernel is weight


def test_the_learning_rate_answers_as_a_variable():
    optimizer = keras.optimizers.RMSprop(0.1)
    optimizer.learning_rate.assign(0.01)
    assert float(optimizer.learning_rate) == pytest.approx(0.01) and optimizer.learning_rate.numpy() == np.float32(0.01)
    keras.backend.set_value(optimizer.learning_rate, 0.5)
    assert keras.backend.get_value(optimizer.learning_rate) == pytest.approx(0.5)
    assert float(keras.optimizers.SGD(learning_rate=0.0).learning_rate) == 0.0  # Keras takes 0
    with pytest.raises(TypeError, match="not a variable"):
        keras.backend.set_value(0.5, 1.0)


def test_dtypes_equal_their_names_as_tensorflows_do():
    assert braze.ones((2,)).dtype == "float32" and braze.ones((2,)).dtype != "int32"
    assert keras.Input((3,)).dtype == "float32"
    assert {braze.float32: 1}[braze.ones((1,)).dtype] == 1


def test_tf_keras_backend_functions_match_numpy():
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    backend = keras.backend
    np.testing.assert_allclose(backend.std(x, axis=1).numpy(), x.std(axis=1), rtol=1e-5)
    np.testing.assert_allclose(backend.mean(x, axis=0).numpy(), x.mean(axis=0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(backend.square(x).numpy(), x**2, rtol=1e-6)
    assert backend.int_shape(x) == (3, 4)
    draws = backend.random_normal((4000,), mean=2.0, stddev=0.5, seed=3).numpy()
    assert abs(draws.mean() - 2.0) < 4 * 0.5 / np.sqrt(4000) and abs(draws.std() - 0.5) < 0.05


def test_callbacks_braze_lacks_name_what_comes_nearest():
    with pytest.raises(AttributeError, match="TensorBoard: braze writes no TensorBoard event files: CSVLogger"):
        _ = keras.callbacks.TensorBoard


def test_a_learning_rate_copies_as_its_number_and_integer_rates_answer_too():
    import copy

    optimizer = keras.optimizers.SGD(learning_rate=1)
    optimizer.learning_rate.assign(0.25)
    copied = copy.deepcopy({"learning_rate": [optimizer.learning_rate]})
    assert copied == {"learning_rate": [0.25]} and type(copied["learning_rate"][0]) is float


def test_a_custom_object_scope_leaves_what_was_registered_inside_it():
    with keras.saving.custom_object_scope({"Scoped": CountAbove}):

        @keras.saving.register_keras_serializable(package="test_scope")
        class RegisteredInside(keras.layers.Layer):
            pass

        assert keras.saving.get_custom_objects()["Scoped"] is CountAbove
    assert "Scoped" not in keras.saving.get_custom_objects()
    assert keras.saving.get_custom_objects()["RegisteredInside"] is RegisteredInside


def test_keras_ops_tile_takes_an_int():
    np.testing.assert_array_equal(keras.ops.tile(np.array([1.0, 2.0]), 2).numpy(), [1.0, 2.0, 1.0, 2.0])
