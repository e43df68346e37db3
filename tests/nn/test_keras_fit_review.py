"""Keras 3's training loop where braze's differed, against NumPy transcriptions of Keras's
rules: metric names made unique, ``evaluate``'s list order, an epoch cut short by a batch
hook or by the end of the data under ``steps_per_epoch``, ``evaluate``/``predict``/
validation steps that start over and stop at the data's end, shuffled ``PyDataset``
batches, monitors in epochs without validation, and the callbacks' Keras arguments."""

from __future__ import annotations

import numpy as np
import pytest

import braze
import braze.keras as keras

# float32 forward passes and a few float32 SGD steps against float64 NumPy.
RTOL, ATOL = 1e-5, 1e-6


def regression(n: int = 20, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
    return x, y


KERNEL = np.array([[0.3], [-0.2], [0.1]], np.float32)
BIAS = np.array([0.1], np.float32)


def linear(lr: float = 0.05, **compile_options) -> keras.Model:
    """Dense(1) with fixed weights, compiled with SGD and the MSE."""
    model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(1)])
    model.set_weights([KERNEL, BIAS])
    model.compile(optimizer=keras.optimizers.SGD(lr), loss="mse", **compile_options)
    return model


def sgd_epochs(
    x: np.ndarray, y: np.ndarray, lr: float, epochs: list[list[tuple[int, int]]]
) -> tuple[list[float], np.ndarray, np.ndarray]:
    """Keras's SGD on Dense(1) and the MSE, transcribed: each epoch's batches as (start,
    stop) rows; the epoch's loss is the batch losses (before each update) weighted by the
    batch sizes. The losses and the final kernel and bias."""
    kernel, bias = KERNEL.astype(np.float64), BIAS.astype(np.float64)
    losses = []
    for batches in epochs:
        total, count = 0.0, 0
        for start, stop in batches:
            xb, yb = x[start:stop].astype(np.float64), y[start:stop].astype(np.float64)
            error = xb @ kernel + bias - yb
            total += float(np.mean(error**2)) * len(xb)
            count += len(xb)
            kernel = kernel - lr * 2 * xb.T @ error / len(xb)
            bias = bias - lr * 2 * error.sum(0) / len(xb)
        losses.append(total / count)
    return losses, kernel, bias


def mse(model: keras.Model, x: np.ndarray, y: np.ndarray) -> float:
    kernel, bias = (w.astype(np.float64) for w in model.get_weights())
    return float(np.mean((x @ kernel + bias - y) ** 2))


# Metric names and evaluate's list -----------------------------------------------------------


def test_repeated_and_weighted_metric_names_are_made_unique_as_keras_does():
    x, _ = regression()
    y = (x[:, :1] > 0).astype(np.float32)
    weights = np.linspace(0.1, 2.0, len(x)).astype(np.float32)
    model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(1, activation="sigmoid")])
    model.set_weights([KERNEL, BIAS])
    model.compile("sgd", "binary_crossentropy", metrics=["accuracy", "accuracy"], weighted_metrics=["accuracy"])
    logs = model.evaluate(x, y, sample_weight=weights, verbose=0, return_dict=True)
    assert sorted(logs) == ["accuracy", "accuracy_1", "loss", "weighted_accuracy"]
    kernel, bias = (w.astype(np.float64) for w in model.get_weights())
    right = ((1 / (1 + np.exp(-(x @ kernel + bias))) > 0.5) == (y > 0.5))[:, 0]
    assert logs["accuracy"] == logs["accuracy_1"] == pytest.approx(right.mean(), rel=RTOL)
    assert logs["weighted_accuracy"] == pytest.approx((weights * right).sum() / weights.sum(), rel=RTOL)


def two_outputs() -> keras.Model:
    inputs = keras.Input(shape=(3,))
    first = keras.layers.Dense(1, name="a")(inputs)
    second = keras.layers.Dense(1, name="b")(inputs)
    model = keras.Model(inputs, [first, second])
    model.set_weights([KERNEL, BIAS, -KERNEL, np.zeros(1, np.float32)])
    return model


def test_a_list_of_one_metric_per_output_and_evaluates_order_are_keras_3s():
    x, y = regression()
    model = two_outputs()
    model.compile("sgd", "mse", metrics=["mae", "mse"])  # output a: mae, output b: mse
    kernel_a, bias_a, kernel_b, bias_b = (w.astype(np.float64) for w in model.get_weights())
    error_a, error_b = x @ kernel_a + bias_a - y, x @ kernel_b + bias_b - 2 * y
    logs = model.evaluate(x, [y, 2 * y], verbose=0, return_dict=True)
    assert sorted(logs) == ["a_loss", "a_mae", "b_loss", "b_mse", "loss"]
    # Keras lists the values by its metrics' own names (loss, mae, mse, a_loss, b_loss), the
    # logged ones first, then the rest by sorted name: the losses come before the metrics.
    a_loss, b_loss = np.mean(error_a**2), np.mean(error_b**2)
    expected = [a_loss + b_loss, a_loss, b_loss, np.mean(np.abs(error_a)), b_loss]
    np.testing.assert_allclose(model.evaluate(x, [y, 2 * y], verbose=0), expected, rtol=RTOL)
    np.testing.assert_allclose(model.test_on_batch(x, [y, 2 * y]), expected, rtol=RTOL)
    # None leaves an output without metrics.
    model.compile("sgd", "mse", metrics=[["mae"], None])
    assert sorted(model.evaluate(x, [y, 2 * y], verbose=0, return_dict=True)) == ["a_loss", "a_mae", "b_loss", "loss"]


def test_an_evaluation_of_one_value_is_that_value_whatever_its_name():
    class Tracked(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(1)
            self.tracker = keras.metrics.Mean(name="error")

        def call(self, x):
            return self.dense(x)

        def test_step(self, data):
            x, y = data
            self.tracker.update_state(keras.ops.mean(keras.ops.abs(self(x) - y)))
            return {"error": self.tracker.result()}

        @property
        def metrics(self):
            return [self.tracker]

    x, y = regression()
    model = Tracked()
    model(x[:1])
    model.set_weights([KERNEL, BIAS])
    model.compile("sgd", "mse")
    result = model.evaluate(x, y, batch_size=len(x), verbose=0)
    assert isinstance(result, float)
    assert result == pytest.approx(np.mean(np.abs(x @ KERNEL.astype(np.float64) + BIAS - y)), rel=RTOL)


def test_train_on_batch_refuses_class_weight_with_sample_weight():
    x, y = regression()
    with pytest.raises(ValueError, match="class_weight or sample_weight, not both"):
        linear().train_on_batch(x, y > 0, sample_weight=np.ones(len(x)), class_weight={0: 1.0, 1: 2.0})


def test_fit_before_compile_is_keras_value_error():
    with pytest.raises(ValueError, match="call compile"):
        keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(1)]).fit(*regression(), verbose=0)


# Epochs cut short, steps ----------------------------------------------------------------------


def test_a_batch_hook_that_stops_training_ends_the_epoch_after_that_batch():
    x, y = regression()
    xv, yv = regression(8, seed=7)

    class StopAtSecond(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 1:
                self.model.stop_training = True

    model = linear()
    history = model.fit(
        x, y, batch_size=5, epochs=3, shuffle=False, verbose=0, validation_data=(xv, yv), callbacks=[StopAtSecond()]
    )
    losses, kernel, bias = sgd_epochs(x, y, 0.05, [[(0, 5), (5, 10)]])
    assert history.epoch == [0]
    np.testing.assert_allclose(history.history["loss"], losses, rtol=RTOL)
    np.testing.assert_allclose(model.get_weights()[0], kernel, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(model.get_weights()[1], bias, rtol=RTOL, atol=ATOL)
    # Keras still validates the epoch it cut short.
    assert history.history["val_loss"] == [pytest.approx(mse(model, xv, yv), rel=RTOL)]


def test_every_epoch_takes_its_steps_per_epoch_the_data_starting_over_once_spent():
    x, y = regression()
    model = linear()
    # 20 samples in batches of 6: rows 0-6, 6-12, 12-18, 18-20. Three steps an epoch, each
    # epoch taking up the pass where the last stopped and a new pass begun once one ends,
    # so every epoch takes three (tf.keras 2's count, which the XLA article's
    # steps_per_epoch=840 // 64 relies on; Keras 3 ends an epoch where its pass ends).
    history = model.fit(x, y, batch_size=6, steps_per_epoch=3, epochs=3, shuffle=False, verbose=0)
    a, b, c, d = (0, 6), (6, 12), (12, 18), (18, 20)
    losses, kernel, bias = sgd_epochs(x, y, 0.05, [[a, b, c], [d, a, b], [c, d, a]])
    np.testing.assert_allclose(history.history["loss"], losses, rtol=RTOL)
    np.testing.assert_allclose(model.get_weights()[0], kernel, rtol=RTOL, atol=ATOL)
    # More steps than batches: an epoch goes on into the next pass.
    model = linear()
    history = model.fit(x, y, batch_size=6, steps_per_epoch=6, epochs=2, shuffle=False, verbose=0)
    epochs = [[a, b, c, d, a, b], [c, d, a, b, c, d]]
    np.testing.assert_allclose(history.history["loss"], sgd_epochs(x, y, 0.05, epochs)[0], rtol=RTOL)


class Passes:
    """Batches, without a length, that note the index of each one taken."""

    def __init__(self, batches):
        self.batches, self.taken = batches, []

    def __iter__(self):
        for i, batch in enumerate(self.batches):
            self.taken.append(i)
            yield batch


class SizedPasses(Passes):
    def __len__(self):
        return len(self.batches)


@pytest.mark.parametrize("kind", [SizedPasses, Passes])
def test_a_loader_under_steps_per_epoch_goes_on_into_its_next_pass(kind):
    x, y = regression()
    batches = kind([(x[i : i + 4], y[i : i + 4]) for i in range(0, 20, 4)])  # five batches
    counts = []
    counter = keras.callbacks.LambdaCallback(
        on_epoch_begin=lambda epoch, logs: counts.append(0),
        on_train_batch_end=lambda batch, logs: counts.__setitem__(-1, counts[-1] + 1),
    )
    linear().fit(batches, steps_per_epoch=2, epochs=5, callbacks=[counter], verbose=0)
    assert counts == [2, 2, 2, 2, 2]
    assert batches.taken == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4]


def test_evaluate_and_predict_steps_stop_at_the_end_of_the_data():
    x, y = regression()
    model = linear()
    with pytest.warns(UserWarning, match="ran out after 3 of 5 steps"):
        loss = model.evaluate(x, y, batch_size=7, steps=5, verbose=0)
    assert loss == pytest.approx(mse(model, x, y), rel=RTOL)
    with pytest.warns(UserWarning, match="ran out after 3 of 5 steps"):
        assert model.predict(x, batch_size=7, steps=5, verbose=0).shape == (20, 1)


def test_validation_steps_take_the_first_batches_every_epoch():
    x, y = regression()
    xv, yv = regression(9, seed=7)
    model = linear(lr=0.05)
    history = model.fit(
        x, y, batch_size=5, epochs=3, shuffle=False, verbose=0, validation_data=(xv, yv), validation_steps=2,
        validation_batch_size=4,
    )  # fmt: skip
    # Keras starts the validation data over every epoch: its first 8 rows each time.
    model_each_epoch = [sgd_epochs(x, y, 0.05, [[(i, i + 5) for i in range(0, 20, 5)]] * e) for e in (1, 2, 3)]
    expected = [float(np.mean((xv[:8] @ kernel + bias - yv[:8]) ** 2)) for _, kernel, bias in model_each_epoch]
    np.testing.assert_allclose(history.history["val_loss"], expected, rtol=RTOL)


def test_pydataset_batches_come_shuffled_unless_shuffle_is_false():
    x, y = regression(32)

    class Recorded(keras.utils.PyDataset):
        def __init__(self):
            super().__init__()
            self.order = []

        def __len__(self):
            return 8

        def __getitem__(self, index):
            self.order.append(index)
            return x[index * 4 : (index + 1) * 4], y[index * 4 : (index + 1) * 4]

    braze.manual_seed(0)
    shuffled = Recorded()
    linear().fit(shuffled, epochs=3, verbose=0)
    epochs = [shuffled.order[i : i + 8] for i in range(0, 24, 8)]
    assert all(sorted(order) == list(range(8)) for order in epochs)
    assert any(order != list(range(8)) for order in epochs)
    in_order = Recorded()
    linear().fit(in_order, epochs=2, shuffle=False, verbose=0)
    assert in_order.order == list(range(8)) * 2


# Callbacks ----------------------------------------------------------------------------------------


def test_monitors_of_validation_values_skip_the_epochs_without_validation(tmp_path):
    x, y = regression()
    xv, yv = regression(8, seed=7)
    stopping = keras.callbacks.EarlyStopping(monitor="val_loss", patience=0)
    plateau = keras.callbacks.ReduceLROnPlateau(monitor="val_loss", patience=0, factor=0.5)
    checkpoint = keras.callbacks.ModelCheckpoint(str(tmp_path / "m{epoch}.keras"), save_best_only=True)
    model = linear(lr=0.02)
    with pytest.warns(UserWarning, match="val_loss is not logged in this epoch"):
        history = model.fit(
            x, y, batch_size=5, epochs=6, shuffle=False, verbose=0, validation_data=(xv, yv), validation_freq=2,
            callbacks=[stopping, plateau, checkpoint],
        )  # fmt: skip
    assert history.epoch == list(range(6)) and len(history.history["val_loss"]) == 3
    assert np.all(np.diff(history.history["val_loss"]) < 0)  # improving: nothing stops, nothing slows
    assert history.history["learning_rate"] == [pytest.approx(0.02)] * 6
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m2.keras", "m4.keras", "m6.keras"]
    assert checkpoint.best == pytest.approx(history.history["val_loss"][-1])
    # A val_ name that a validated epoch does not log is still an error.
    with pytest.raises(ValueError, match="monitor='val_typo' is not logged"):
        linear().fit(x, y, epochs=2, verbose=0, validation_data=(xv, yv), validation_freq=2,
                     callbacks=[keras.callbacks.EarlyStopping(monitor="val_typo")])  # fmt: skip


def test_model_checkpoint_takes_keras_initial_value_threshold(tmp_path):
    x, y = regression()
    checkpoint = keras.callbacks.ModelCheckpoint(
        str(tmp_path / "best.keras"), monitor="loss", save_best_only=True, initial_value_threshold=0.0
    )
    linear().fit(x, y, epochs=2, verbose=0, callbacks=[checkpoint])
    assert not (tmp_path / "best.keras").exists() and checkpoint.best == 0.0


def test_terminate_on_nan_raises_when_asked():
    x, y = regression()
    with pytest.raises(RuntimeError, match="NaN or Inf loss"):
        linear(lr=1e20).fit(x, y, epochs=3, verbose=0, callbacks=[keras.callbacks.TerminateOnNaN(raise_error=True)])


def test_lambda_callback_takes_every_hook_and_params_are_keras():
    x, y = regression()
    seen = []
    hooks = keras.callbacks.LambdaCallback(
        on_test_end=lambda logs: seen.append("test_end"), on_predict_end=lambda logs: seen.append("predict_end")
    )
    model = linear()
    model.fit(x, y, batch_size=8, epochs=2, verbose=0, callbacks=[hooks])
    assert hooks.params == {"verbose": 0, "epochs": 2, "steps": 3, "do_validation": False}
    model.evaluate(x, y, batch_size=8, verbose=0, callbacks=[hooks])
    assert hooks.params == {"verbose": 0, "epochs": 1, "steps": 3}
    model.predict(x, verbose=0, callbacks=[hooks])
    assert seen == ["test_end", "predict_end"]
