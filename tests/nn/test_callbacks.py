"""Keras callbacks: the hooks' order and logs, EarlyStopping, ModelCheckpoint, CSVLogger,
and that on a lazy device they leave the compiled training step whole."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

import braze
from braze.keras.callbacks import Callback, CSVLogger, EarlyStopping, ModelCheckpoint
from braze.nn import Dense, Sequential
from braze.optim import SGD
from braze.runtime import metrics


def diverging_validation(n: int = 32):
    """Training data and validation data with the opposite labels: the better the model
    fits the first, the worse its val_loss, so the best validation epoch is the first."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32)
    return (x, y), (x, 1 - y)


def compiled() -> Sequential:
    net = Sequential(Dense(1, activation="sigmoid", input_dim=3, generator=braze.Generator(0)))
    net.compile(loss="binary_crossentropy", optimizer=SGD(lr=1.0), metrics=["accuracy"])
    return net


class Recorder(Callback):
    """Every hook call, and the weights at each epoch end."""

    def __init__(self):
        self.calls, self.weights = [], []

    def on_train_begin(self, logs=None):
        self.calls.append(("train_begin",))

    def on_epoch_begin(self, epoch, logs=None):
        self.calls.append(("epoch_begin", epoch))

    def on_batch_end(self, batch, logs=None):
        self.calls.append(("batch_end", batch, tuple(sorted(logs))))

    def on_test_begin(self, logs=None):
        self.calls.append(("test_begin",))

    def on_epoch_end(self, epoch, logs=None):
        self.calls.append(("epoch_end", epoch, tuple(sorted(logs))))
        self.weights.append(self.model.state_dict())

    def on_train_end(self, logs=None):
        self.calls.append(("train_end", tuple(sorted(logs))))


def test_hooks_run_in_keras_order_and_batch_logs_carry_the_running_values():
    train, validation = diverging_validation()
    recorder = Recorder()
    compiled().fit(*train, batch_size=16, epochs=2, validation_data=validation, callbacks=[recorder], verbose=0)
    epoch_logs = ("accuracy", "loss", "val_accuracy", "val_loss")
    batch_logs = ("accuracy", "loss")
    one_epoch = [("batch_end", 0, batch_logs), ("batch_end", 1, batch_logs), ("test_begin",)]
    assert recorder.calls == [
        ("train_begin",),
        ("epoch_begin", 0),
        *one_epoch,
        ("epoch_end", 0, epoch_logs),
        ("epoch_begin", 1),
        *one_epoch,
        ("epoch_end", 1, epoch_logs),
        ("train_end", epoch_logs),
    ]


def test_early_stopping_restores_the_best_weights():
    train, validation = diverging_validation()
    recorder = Recorder()
    stopper = EarlyStopping(monitor="val_loss", patience=2, restore_best_weights=True)
    net = compiled()
    history = net.fit(*train, epochs=10, validation_data=validation, callbacks=[recorder, stopper], verbose=0).history
    losses = history["val_loss"]
    assert losses == sorted(losses), "val_loss was meant to rise every epoch"
    assert len(losses) == 3 and stopper.stopped_epoch == 2 and stopper.best_epoch == 0
    assert stopper.best == losses[0]
    for name, value in net.state_dict().items():
        np.testing.assert_array_equal(value, recorder.weights[0][name])
    # The epochs run out before the patience does: the best epoch's weights come back all the same.
    recorder, stopper = Recorder(), EarlyStopping(monitor="val_loss", patience=5, restore_best_weights=True)
    net = compiled()
    net.fit(*train, epochs=3, validation_data=validation, callbacks=[recorder, stopper], verbose=0)
    assert stopper.stopped_epoch == 0 and stopper.best_epoch == 0
    for name, value in net.state_dict().items():
        np.testing.assert_array_equal(value, recorder.weights[0][name])


def test_early_stopping_names_what_it_cannot_monitor():
    train, _ = diverging_validation()
    with pytest.raises(ValueError, match=r"monitor='val_loss' is not logged; the logs have \['accuracy', 'loss'"):
        compiled().fit(*train, callbacks=[EarlyStopping()], verbose=0)


def test_model_checkpoint_keeps_only_the_best_and_writes_atomically(tmp_path):
    train, validation = diverging_validation()
    recorder = Recorder()
    best = ModelCheckpoint(tmp_path / "best.npz", save_best_only=True)
    every = ModelCheckpoint(str(tmp_path / "epoch-{epoch:02d}-{val_loss:.2f}.npz"))
    history = (
        compiled()
        .fit(*train, epochs=3, validation_data=validation, callbacks=[recorder, best, every], verbose=0)
        .history
    )
    restored = compiled()
    restored.load(tmp_path / "best.npz")
    for name, value in restored.state_dict().items():
        np.testing.assert_array_equal(value, recorder.weights[0][name])
    expected = {"best.npz"} | {f"epoch-{e + 1:02d}-{v:.2f}.npz" for e, v in enumerate(history["val_loss"])}
    assert {p.name for p in tmp_path.iterdir()} == expected  # no temporary file left behind


def test_csv_logger_writes_one_row_per_epoch(tmp_path):
    train, validation = diverging_validation()
    path = tmp_path / "log.csv"
    history = (
        compiled().fit(*train, epochs=3, validation_data=validation, callbacks=[CSVLogger(path)], verbose=0).history
    )
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [int(r["epoch"]) for r in rows] == [0, 1, 2]
    for name in ("loss", "accuracy", "val_loss", "val_accuracy"):
        np.testing.assert_allclose([float(r[name]) for r in rows], history[name], rtol=1e-12)


class EpochRecorder(Recorder):
    on_batch_end = Callback.on_batch_end  # no batch hook: nothing waits for a batch's values


def test_callbacks_leave_the_lazy_training_step_whole(monkeypatch, tmp_path):
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path / "cache"))
    train, validation = diverging_validation()
    metrics.reset()
    braze.config.set_jit(True)
    try:
        callbacks = [EpochRecorder(), EarlyStopping(patience=5), CSVLogger(tmp_path / "log.csv")]
        compiled().fit(*train, batch_size=8, epochs=3, validation_data=validation, callbacks=callbacks, verbose=0)
    finally:
        braze.config.set_jit(False)
    # One compiled training step and one evaluation step, each replayed: no callback cut
    # a step to read a value (3 epochs x 4 batches, and 3 x 4 validation batches).
    assert metrics.counter("Compile") == 2
    assert metrics.counter("Barrier") == 24


class LossHistory(Callback):
    """keras-io's callback guide's: the loss at every batch's end."""

    def on_train_begin(self, logs=None):
        self.losses, self.epoch_losses = [], []

    def on_batch_end(self, batch, logs=None):
        self.losses.append(logs["loss"])

    def on_epoch_end(self, epoch, logs=None):
        self.epoch_losses.append(logs["loss"])


def test_a_batch_hook_reads_the_loss_so_far_in_the_epoch():
    (x, y), _ = diverging_validation()
    net = compiled()
    w, b = (p.numpy().astype(np.float64) for p in net.parameters())
    p = 1 / (1 + np.exp(-(x[:16].astype(np.float64) @ w + b)))[:, 0]
    first = -np.mean(y[:16] * np.log(p) + (1 - y[:16]) * np.log(1 - p))
    history = LossHistory()
    net.fit(x, y, batch_size=16, epochs=2, shuffle=False, callbacks=[history], verbose=0)
    assert len(history.losses) == 4 and history.losses[0] == pytest.approx(first, rel=1e-5)
    # Keras's batch logs hold the running mean, so an epoch's last batch logs the epoch's loss.
    assert [history.losses[1], history.losses[3]] == pytest.approx(history.epoch_losses, rel=1e-6)


def test_model_checkpoint_saves_every_save_freq_batches_across_epochs(tmp_path):
    (x, y), _ = diverging_validation()
    net = compiled()
    checkpoint = ModelCheckpoint(str(tmp_path / "ckpt-{epoch}-{batch}-{loss:.3f}.npz"), save_freq=2)
    history = LossHistory()
    net.fit(x, y, batch_size=12, epochs=2, shuffle=False, callbacks=[checkpoint, history], verbose=0)
    # 3 batches an epoch: the 2nd, 4th and 6th batches are the first epoch's 2nd and the second's 1st and 3rd.
    losses = history.losses
    expected = {f"ckpt-1-2-{losses[1]:.3f}.npz", f"ckpt-2-1-{losses[3]:.3f}.npz", f"ckpt-2-3-{losses[5]:.3f}.npz"}
    assert {p.name for p in tmp_path.iterdir()} == expected
    last = compiled()
    last.load(tmp_path / f"ckpt-2-3-{losses[5]:.3f}.npz")
    for a, b in zip(last.parameters(), net.parameters(), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(ValueError, match="save_freq must be 'epoch' or a number of batches"):
        ModelCheckpoint(str(tmp_path / "m.keras"), save_freq="batch")


class Seen(braze.keras.metrics.Metric):
    """How many examples the metric has seen this epoch: state from add_weight."""

    def __init__(self, **kwargs):
        super().__init__(name="seen", **kwargs)
        self.count = self.add_weight(name="count", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        self.count.assign_add(braze.keras.ops.cast(braze.keras.ops.shape(y_pred)[0], "float32"))

    def result(self):
        return self.count


@pytest.mark.parametrize("jit_compile", [False, True])
def test_batch_logs_are_plain_dicts_of_each_batchs_values(jit_compile):
    (x, y), _ = diverging_validation()
    kept = []
    keeper = braze.keras.callbacks.LambdaCallback(on_batch_end=lambda batch, logs: kept.append(logs))
    net = Sequential(Dense(1, activation="sigmoid", input_dim=3, generator=braze.Generator(0)))
    net.compile(loss="binary_crossentropy", optimizer=SGD(lr=0.1), metrics=[Seen()], jit_compile=jit_compile)
    net.fit(x, y, batch_size=8, epochs=1, shuffle=False, callbacks=[keeper], verbose=0)
    assert all(type(logs) is dict for logs in kept)  # copied, written into, dumped as JSON like Keras's
    assert [logs["seen"] for logs in kept] == [8.0, 16.0, 24.0, 32.0]  # read at each batch's end
    assert json.loads(json.dumps(kept[0]))["seen"] == 8.0


def test_a_checkpoint_every_few_batches_watching_a_validation_value_warns_and_waits(tmp_path):
    (x, y), validation = diverging_validation()
    checkpoint = ModelCheckpoint(str(tmp_path / "best.npz"), save_freq=2, save_best_only=True)
    with pytest.warns(UserWarning, match="val_loss is not in batch"):
        compiled().fit(x, y, batch_size=16, epochs=1, validation_data=validation, callbacks=[checkpoint], verbose=0)
    assert not (tmp_path / "best.npz").exists()
