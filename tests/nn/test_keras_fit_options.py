"""fit's Keras options against hand-written steps: sample_weight, class_weight, add_loss,
several outputs (their losses, names and predictions), learning-rate callbacks (honoured
eagerly, lazily and compiled), TerminateOnNaN, LambdaCallback and the *_on_batch forms."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze import keras
from braze.keras import layers

RNG = np.random.default_rng(0)
X = RNG.standard_normal((16, 3)).astype(np.float32)
Y = (X @ np.array([1.0, -2.0, 0.5], np.float32))[:, None]
WEIGHTS = RNG.uniform(0.0, 2.0, 16).astype(np.float32)


def regression(seed: int = 0) -> keras.Sequential:
    return keras.Sequential([layers.Dense(1, input_shape=(3,), generator=braze.Generator(seed))])


def test_sample_weight_scales_each_examples_loss_as_keras_does():
    model = regression()
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    history = model.fit(X, Y, sample_weight=WEIGHTS, batch_size=8, epochs=1, shuffle=False, verbose=0)
    w, b = (p.numpy().astype(np.float64) for p in regression().parameters())
    losses = []
    for start in (0, 8):
        x, y, sw = X[start : start + 8], Y[start : start + 8], WEIGHTS[start : start + 8]
        error = x @ w + b - y
        losses.append(np.sum(sw * error[:, 0] ** 2) / 8)  # summed, over the batch's size
        w, b = w - 0.1 * x.T @ (2 * sw[:, None] * error) / 8, b - 0.1 * np.sum(2 * sw[:, None] * error, 0) / 8
    np.testing.assert_allclose(model.layers[0].kernel.numpy(), w, rtol=1e-5)
    assert history.history["loss"][0] == pytest.approx(np.mean(losses), rel=1e-5)


def test_class_weight_is_sample_weight_by_class():
    labels = (X[:, 0] > 0).astype(np.int32)
    table = {0: 0.25, 1: 2.0}
    results = []
    for options in ({"class_weight": table}, {"sample_weight": np.where(labels == 1, 2.0, 0.25)}):
        model = keras.Sequential([layers.Dense(2, input_shape=(3,), generator=braze.Generator(1))])
        model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        results.append(model.fit(X, labels, batch_size=8, shuffle=False, verbose=0, **options).history["loss"])
    assert results[0] == pytest.approx(results[1])
    with pytest.raises(ValueError, match="class_weight or sample_weight"):
        model.fit(X, labels, class_weight=table, sample_weight=np.ones(16), verbose=0)


def test_add_loss_is_minimised_and_reported_with_the_compiled_loss():
    class Penalised(keras.layers.Layer):
        def call(self, x):
            self.add_loss(0.5 * braze.reduce_mean(x * x))
            return x

    model = keras.Sequential([layers.Dense(1, input_shape=(3,), generator=braze.Generator(0)), Penalised()])
    model.compile(optimizer="sgd", loss="mse")
    loss = model.evaluate(X, Y, batch_size=16, verbose=0)
    prediction = model.predict(X, verbose=0)
    assert loss == pytest.approx(np.mean((prediction - Y) ** 2) + 0.5 * np.mean(prediction**2), rel=1e-5)


def test_several_outputs_log_each_loss_and_predict_their_structure():
    inputs = keras.Input(shape=(3,))
    model = keras.Model(inputs, [layers.Dense(1, name="a")(inputs), layers.Dense(2, name="b")(inputs)])
    model.compile(optimizer="adam", loss=["mse", "mae"], loss_weights=[1.0, 0.5], metrics=[["mae"], []])
    targets = [Y, np.zeros((16, 2), np.float32)]
    history = model.fit(X, targets, batch_size=8, epochs=1, verbose=0)
    assert set(history.history) == {"loss", "a_loss", "b_loss", "a_mae"}
    # Batches of 5, 5, 5 and 1: each output's loss is logged unweighted and averaged by batch
    # size as the total is (Keras 3), so the total is their weighted sum.
    logs = model.evaluate(X, targets, batch_size=5, verbose=0, return_dict=True)
    a, b = model.predict(X, verbose=0)
    assert a.shape == (16, 1) and b.shape == (16, 2)
    assert logs["a_loss"] == pytest.approx(np.mean((a - Y) ** 2), rel=1e-5)
    assert logs["b_loss"] == pytest.approx(np.mean(np.abs(b)), rel=1e-5)
    assert logs["loss"] == pytest.approx(logs["a_loss"] + 0.5 * logs["b_loss"], rel=1e-5)


@pytest.mark.parametrize("mode", ["eager", "set_jit", "jit_compile"])
def test_learning_rate_callbacks_change_the_steps_in_every_mode(mode, monkeypatch):
    if mode == "set_jit":
        braze.config.set_jit(True)
        monkeypatch.setattr(braze.config, "set_jit", braze.config.set_jit)
    try:
        model = regression()
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse", jit_compile=mode == "jit_compile")
        seen = []
        callbacks = [
            keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.1 if epoch == 0 else 0.0),
            keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append(logs["learning_rate"])),
        ]
        model.fit(X, Y, batch_size=16, epochs=1, verbose=0, callbacks=callbacks[:1])
        after_one = model.get_weights()
        model.fit(X, Y, batch_size=16, epochs=3, initial_epoch=1, verbose=0, callbacks=callbacks)
    finally:
        braze.config.set_jit(False)
    assert seen == [0.0, 0.0]
    for a, b in zip(model.get_weights(), after_one, strict=True):
        np.testing.assert_array_equal(a, b)  # a learning rate of 0 leaves the weights where they were


def test_reduce_lr_on_plateau_and_terminate_on_nan():
    model = regression()
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    plateau = keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=0, min_delta=100.0)
    history = model.fit(X, Y, epochs=3, verbose=0, callbacks=[plateau])
    # Each epoch logs the rate it trained with; the plateau's reduction applies from the next.
    assert history.history["learning_rate"] == pytest.approx([0.01, 0.01, 0.005])
    assert model.optimizer.learning_rate == pytest.approx(0.0025)
    exploding = regression()
    exploding.compile(optimizer=keras.optimizers.SGD(1e30), loss="mse")
    history = exploding.fit(X, Y * 1e30, epochs=5, verbose=0, callbacks=[keras.callbacks.TerminateOnNaN()])
    assert len(history.history["loss"]) < 5


def test_on_batch_forms():
    model = regression()
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    loss, mae = model.train_on_batch(X, Y)
    assert model.test_on_batch(X, Y, return_dict=True)["loss"] < loss
    assert model.predict_on_batch(X).shape == (16, 1) and mae > 0


def test_fit_on_a_model_without_trainable_weights_warns_and_reports_its_loss():
    inputs = keras.Input(shape=(3,))
    model = keras.Model(inputs, layers.Activation("tanh")(inputs))
    model.compile(optimizer="adam", loss="mse")
    with pytest.warns(UserWarning, match="no trainable weights"):
        history = model.fit(X, Y * np.ones((1, 3), np.float32), epochs=1, batch_size=16, verbose=0)
    assert history.history["loss"][0] == pytest.approx(np.mean((np.tanh(X) - Y) ** 2), rel=1e-5)
