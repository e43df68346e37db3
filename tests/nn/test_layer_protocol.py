"""Keras's layer protocol and module state: build on first use with the full input shape,
add_weight (both argument orders, names, regularizers), name=, training= resolution,
add_loss, trainable, get/set_weights, and buffers (register_buffer, to(), state_dict)."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze import keras
from braze.keras import layers


class Scale(keras.layers.Layer):
    def __init__(self, penalty=0.0, **kwargs):
        super().__init__(**kwargs)
        self.penalty = penalty
        self.shapes = []

    def build(self, input_shape):
        self.shapes.append(input_shape)
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="scale")
        self.count = self.add_weight("count", (), initializer="zeros", trainable=False)  # the older order

    def call(self, inputs, training=None):
        if self.penalty:
            self.add_loss(self.penalty * braze.reduce_sum(self.w * self.w))
        self.seen_training = training
        return inputs * self.w


def test_build_runs_once_on_first_use_with_the_full_shape():
    layer = Scale(name="my_scale")
    assert layer.name == "my_scale" and not layer.built
    out = layer(np.ones((2, 3), np.float32))  # arrays are taken, as Keras layers take them
    layer(braze.ones((4, 3)))
    assert layer.shapes == [(2, 3)] and out.shape == (2, 3)
    assert [n for n, _ in layer.named_parameters()] == ["scale"]
    assert [n for n, _ in layer.named_buffers()] == ["count"]
    assert layer.trainable_weights == [layer.w] and layer.non_trainable_weights == [layer.count]


def test_a_layer_built_by_hand_is_not_built_again_by_its_first_call():
    layer = Scale()
    layer.build((None, 3))
    assert layer.built
    layer.w.assign(np.array([1.0, 2.0, 3.0], np.float32))
    np.testing.assert_array_equal(layer(np.ones((2, 3), np.float32)).numpy(), [[1.0, 2.0, 3.0]] * 2)
    assert layer.shapes == [(None, 3)]


def test_training_follows_the_call_then_the_enclosing_call_then_the_mode():
    inner = Scale()
    inputs = keras.Input(shape=(2,))
    model = keras.Model(inputs, inner(inputs))
    model(np.ones((1, 2), np.float32))
    assert inner.seen_training is False  # a functional model runs in inference mode by default
    model(np.ones((1, 2), np.float32), training=True)
    assert inner.seen_training is True
    model.train()
    model(np.ones((1, 2), np.float32))
    assert inner.seen_training is True
    sequential = keras.Sequential([inner])
    sequential(np.ones((1, 2), np.float32))
    assert inner.seen_training is False  # keras.Sequential starts in inference mode, as Keras's does
    sequential(np.ones((1, 2), np.float32), training=True)
    assert inner.seen_training is True
    container = braze.nn.Sequential(inner)
    container(np.ones((1, 2), np.float32))
    assert inner.seen_training is True  # braze.nn.Sequential starts in training mode, as PyTorch's does


def test_keras_sequential_runs_dropout_only_when_training():
    model = keras.Sequential([keras.Input((64,)), layers.Dropout(0.5)])
    assert model.name.startswith("sequential")
    x = np.ones((4, 64), np.float32)
    np.testing.assert_array_equal(model(x).numpy(), x)
    dropped = model(x, training=True).numpy()
    assert set(np.unique(dropped)) <= {0.0, 2.0} and 0 < (dropped == 0).sum() < x.size
    restored = keras.models.model_from_json(model.to_json(indent=1))
    assert isinstance(restored, keras.Sequential) and not restored.training and restored.name == model.name
    np.testing.assert_array_equal(restored(x).numpy(), x)


def test_add_loss_and_regularizers_are_the_layers_losses_for_the_last_call():
    model = keras.Sequential([Scale(penalty=0.5), layers.Dense(1, kernel_regularizer=keras.regularizers.l2(0.1))])
    model(np.ones((1, 2), np.float32))
    dense = model.layers[1]
    expected = 0.5 * 2 + 0.1 * float((dense.kernel.numpy() ** 2).sum())
    assert sum(float(loss.item()) for loss in model.losses) == pytest.approx(expected, rel=1e-6)
    model(np.ones((1, 2), np.float32))
    assert len(model.losses) == 2  # the call's add_loss replaced, not appended


def test_trainable_false_freezes_a_layer():
    model = keras.Sequential([layers.Dense(3, input_shape=(2,)), layers.Dense(1)])
    model.layers[0].trainable = False
    assert len(model.trainable_weights) == 2 and len(model.non_trainable_weights) == 2
    model.compile(optimizer="sgd", loss="mse")
    frozen = model.layers[0].kernel.numpy().copy()
    model.fit(np.ones((4, 2), np.float32), np.zeros((4, 1), np.float32), verbose=0)
    np.testing.assert_array_equal(model.layers[0].kernel.numpy(), frozen)


def test_get_and_set_weights_round_trip_in_order():
    a = keras.Sequential([layers.Dense(3, input_shape=(2,)), layers.BatchNormalization()])
    b = keras.Sequential([layers.Dense(3, input_shape=(2,)), layers.BatchNormalization()])
    weights = [w + 1.0 for w in a.get_weights()]
    b.set_weights(weights)
    for got, expected in zip(b.get_weights(), weights, strict=True):
        np.testing.assert_array_equal(got, expected)
    with pytest.raises(ValueError, match="expected 6 arrays, got 1"):
        b.set_weights(weights[:1])


def test_buffers_move_save_and_load_with_the_parameters(tmp_path):
    class Counter(braze.nn.Module):
        def __init__(self):
            self.weight = braze.tensor([1.0, 1.0], requires_grad=True)
            self.register_buffer("seen", braze.zeros((2,)))

    module = Counter()
    with braze.no_grad():
        module.seen += 3.0
    assert sorted(module.state_dict()) == ["seen", "weight"]
    module.save(tmp_path / "counter.npz")
    other = Counter()
    other.load(tmp_path / "counter.npz")
    np.testing.assert_array_equal(other.seen.numpy(), [3.0, 3.0])
    other.to("lazy")
    assert other.seen.device.is_lazy and other.weight.device.is_lazy


def test_unknown_arguments_are_errors_that_name_them_and_x_minus_equals_works_as_in_tensorflow():
    with pytest.raises(TypeError, match=r"Dense: unexpected argument\(s\) \['units_'\]"):
        layers.Dense(3, units_=4)
    with pytest.raises(NotImplementedError, match="weight constraints"):
        layers.Dense(3, kernel_constraint="max_norm")
    with pytest.raises(TypeError, match="Dense.call takes no mask"):
        layers.Dense(2)(braze.ones((1, 2)), mask=braze.ones((1,)))
    w = braze.tensor([1.0, 2.0], requires_grad=True)
    x = w * 3.0
    x -= w  # TensorFlow's meaning, x = x - w: a computed tensor is not updated in place
    x.sum().backward()
    np.testing.assert_array_equal(x.numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0])


def test_compile_takes_the_optimizer_first_as_keras_does():
    model = keras.Sequential([layers.Dense(1, input_shape=(2,))])
    model.compile("rmsprop", loss="mse", metrics=["mae"])
    assert type(model.optimizer).__name__ == "RMSprop" and model.optimizer.learning_rate == pytest.approx(1e-3)
    with pytest.raises(NotImplementedError, match="steps_per_execution"):
        model.compile("sgd", "mse", steps_per_execution=8)


def test_an_overridden_train_step_is_the_one_fit_runs():
    class Counting(keras.Sequential):
        calls = 0

        def train_step(self, data):
            Counting.calls += 1
            return super().train_step(data)

    model = Counting([layers.Dense(1, input_shape=(2,))])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(np.ones((8, 2), np.float32), np.ones((8, 1), np.float32), batch_size=4, epochs=2, verbose=0)
    assert Counting.calls == 4


def test_a_layers_metrics_and_add_metric_are_logged_by_fit():
    class Endpoint(keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.accuracy_fn = keras.metrics.BinaryAccuracy(name="accuracy")

        def call(self, logits, targets):
            self.add_loss(keras.losses.BinaryCrossentropy(from_logits=True)(targets, logits))
            self.add_metric(self.accuracy_fn(targets, braze.sigmoid(logits)))
            self.add_metric(braze.reduce_mean(logits), name="mean_logit")
            return braze.sigmoid(logits)

    inputs, targets = keras.Input((3,), name="inputs"), keras.Input((1,), name="targets")
    model = keras.Model([inputs, targets], Endpoint()(layers.Dense(1)(inputs), targets))
    model.compile(keras.optimizers.Adam(1e-2))
    x = np.random.default_rng(0).standard_normal((32, 3)).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.float32)
    logs = model.fit({"inputs": x, "targets": y}, epochs=1, batch_size=32, verbose=0).history
    assert set(logs) == {"loss", "accuracy", "mean_logit"}
    probabilities = model.predict({"inputs": x, "targets": y}, verbose=0)
    assert 0.0 <= logs["accuracy"][0] <= 1.0 and probabilities.shape == (32, 1)
    with pytest.raises(ValueError, match="give the metric a name"):
        Endpoint().add_metric(braze.ones(()))


def test_layers_braze_lacks_are_errors_that_say_so():
    with pytest.raises(AttributeError, match="has no Hashing: map the values to bins"):
        layers.Hashing  # noqa: B018
    with pytest.raises(AttributeError, match="braze ships only mnist"):
        keras.datasets.cifar10  # noqa: B018


def test_weights_have_keras_names_and_paths():
    model = keras.Sequential(
        [keras.Input((4,)), layers.Dense(3, name="dense"), layers.BatchNormalization(name="batch_normalization")]
    )
    assert [w.path for w in model.weights] == [
        "dense/kernel",
        "dense/bias",
        "batch_normalization/gamma",
        "batch_normalization/beta",
        "batch_normalization/moving_mean",
        "batch_normalization/moving_variance",
    ]
    assert [w.name for w in model.layers[0].weights] == ["kernel", "bias"]

    class Scale(layers.Layer):
        def build(self, input_shape):
            self.factor = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="scale")

        def call(self, inputs):
            return inputs * self.factor

    layer = Scale(name="scaler")
    layer(np.ones((1, 2), "float32"))
    assert layer.factor.name == "scale" and layer.factor.path == "scaler/scale"
    assert (braze.ones((2,)) * 2).name is None  # a computed tensor has no name
    built = layers.Dense(2, name="made")
    built.build((None, 3))
    assert built.kernel.path == "made/kernel"  # named when made, before weights is read
