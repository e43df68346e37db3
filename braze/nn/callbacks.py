"""Keras callbacks: hooks that ``fit`` calls at the start and end of training, epochs and
batches, with ``History``, ``EarlyStopping``, ``ModelCheckpoint``, ``CSVLogger``,
``ReduceLROnPlateau``, ``LearningRateScheduler``, ``TerminateOnNaN`` and ``LambdaCallback``.

Epoch hooks get the epoch's logs as Python floats (``loss``, ``accuracy``, ``val_loss``,
``val_accuracy``, ``seconds``), read from the device once the epoch is over. Batch hooks get
only ``batch`` and ``size``: reading a value there would cut a lazy device's trace, and
``jit_compile`` steps in two, at every step.
"""

from __future__ import annotations

import csv
import math
import os
import warnings
from collections.abc import Iterable
from typing import Any

from braze.nn import keras_losses
from braze.nn.checkpoint import saved_whole

Logs = dict[str, Any]


class Callback:
    """Override the hooks you need; ``self.model`` is the model being trained."""

    model: Any = None
    params: dict[str, Any] = {}
    jit_ignore = True  # a training step never computes with a callback: braze.jit guards none of it

    def set_model(self, model: Any) -> None:
        self.model = model

    def set_params(self, params: dict[str, Any]) -> None:
        self.params = params

    def on_train_begin(self, logs: Logs | None = None) -> None: ...

    def on_train_end(self, logs: Logs | None = None) -> None: ...

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None: ...

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None: ...

    def on_batch_begin(self, batch: int, logs: Logs | None = None) -> None: ...

    def on_batch_end(self, batch: int, logs: Logs | None = None) -> None: ...

    def on_train_batch_begin(self, batch: int, logs: Logs | None = None) -> None:
        self.on_batch_begin(batch, logs)  # Keras's older name, still called for training batches

    def on_train_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        self.on_batch_end(batch, logs)

    def on_test_begin(self, logs: Logs | None = None) -> None: ...

    def on_test_end(self, logs: Logs | None = None) -> None: ...

    def on_test_batch_begin(self, batch: int, logs: Logs | None = None) -> None: ...

    def on_test_batch_end(self, batch: int, logs: Logs | None = None) -> None: ...

    def on_predict_begin(self, logs: Logs | None = None) -> None: ...

    def on_predict_end(self, logs: Logs | None = None) -> None: ...

    def on_predict_batch_begin(self, batch: int, logs: Logs | None = None) -> None: ...

    def on_predict_batch_end(self, batch: int, logs: Logs | None = None) -> None: ...


class CallbackList:
    """Calls one hook on every callback, in order."""

    def __init__(self, callbacks: Iterable[Callback], model: Any, params: dict[str, Any]) -> None:
        self.callbacks = list(callbacks)
        for callback in self.callbacks:
            if not isinstance(callback, Callback):
                raise TypeError(f"callbacks must be braze Callback instances, got {type(callback).__name__}")
            callback.set_model(model)
            callback.set_params(params)

    def call(self, hook: str, *args: Any) -> None:
        for callback in self.callbacks:
            getattr(callback, hook)(*args)

    def read_batch_logs(self, hook: str) -> bool:
        """Whether a callback looks at ``hook``'s logs (it defines the hook, or says so with
        ``reads_batch_logs``): only then does each step wait for its values to be read."""
        names = (hook, "on_batch_end") if hook == "on_train_batch_end" else (hook,)
        for callback in self.callbacks:
            declared = getattr(callback, "reads_batch_logs", None)
            if declared is not None:
                if declared:
                    return True
                continue
            if any(
                name in vars(callback) or getattr(type(callback), name) is not getattr(Callback, name) for name in names
            ):
                return True
        return False


class History(Callback):
    """What ``fit`` returns: ``history.history[name]`` holds one value per epoch,
    ``history.epoch`` the epoch numbers and ``history.seconds`` each epoch's duration."""

    def __init__(self) -> None:
        self.history: dict[str, list[float]] = {}
        self.epoch: list[int] = []
        self.seconds: list[float] = []

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        self.epoch.append(epoch)
        for name, value in (logs or {}).items():
            self.history.setdefault(name, []).append(value)


# Keras's metrics that should go up (its ``_direction = "up"``); every other built-in one
# (errors, crossentropies, false counts) should go down.
_RISING_METRICS = frozenset(
    {
        "Accuracy",
        "BinaryAccuracy",
        "CategoricalAccuracy",
        "SparseCategoricalAccuracy",
        "TopKCategoricalAccuracy",
        "SparseTopKCategoricalAccuracy",
        "AUC",
        "Precision",
        "Recall",
        "TruePositives",
        "TrueNegatives",
        "CosineSimilarity",
    }
)
_FALLING_METRICS = frozenset(
    {
        "MeanSquaredError",
        "MeanAbsoluteError",
        "MeanAbsolutePercentageError",
        "RootMeanSquaredError",
        "BinaryCrossentropy",
        "CategoricalCrossentropy",
        "SparseCategoricalCrossentropy",
        "FalsePositives",
        "FalseNegatives",
    }
)
# For a name no metric object explains (a metric function, a value a callback logs).
_RISING_NAMES = ("acc", "auc", "precision", "recall", "true_positives", "true_negatives")


def metric_direction(metric: Any) -> str | None:
    """``"up"`` or ``"down"`` for a metric whose better direction is known (Keras's
    ``_direction``, which a metric of your own may set too), else None."""
    declared = getattr(metric, "_direction", None)
    if declared in ("up", "down"):
        return declared
    kind = type(metric).__name__
    if kind in _RISING_METRICS:
        return "up"
    if kind in _FALLING_METRICS:
        return "down"
    fn = getattr(metric, "fn", None)  # "accuracy" or "mse" given by name: a wrapped function
    if fn is not None:
        name = getattr(fn, "__name__", "")
        if "accuracy" in name or name == "cosine_similarity":
            return "up"
        if name in keras_losses.FUNCTIONS:
            return "down"
    return None


def _compiled_metrics(model: Any) -> list[Any]:
    """The model's metrics, those inside its compiled-metrics container spread out."""
    found = []
    for metric in getattr(model, "metrics", None) or []:
        inner = getattr(metric, "metrics", None)
        found.extend(inner if isinstance(inner, list) else [metric])
    return found


def auto_mode(monitor: str, model: Any) -> str:
    """Keras 3's ``mode="auto"``: ``min`` for a loss, the direction of the compiled metric
    logged under ``monitor`` where it has one; for other names (Keras raises there) ``max``
    where the name says accuracy, AUC, precision or recall, else ``min``."""
    name = monitor.removeprefix("val_")
    if name == "loss" or name.endswith("_loss"):
        return "min"
    for metric in _compiled_metrics(model):
        if getattr(metric, "name", None) == name:
            direction = metric_direction(metric)
            if direction is not None:
                return "max" if direction == "up" else "min"
    return "max" if any(part in name for part in _RISING_NAMES) else "min"


class _Monitor:
    """A logged quantity to watch and which direction is better (Keras's ``mode``). With
    ``mode="auto"`` the direction is found once the model's metrics exist (at the first
    comparison, as Keras sets it at the first epoch's end)."""

    def __init__(self, owner: str, monitor: str, mode: str, min_delta: float = 0.0) -> None:
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"{owner}: mode must be 'auto', 'min' or 'max', got {mode!r}")
        self.owner, self.monitor, self.min_delta = owner, monitor, abs(min_delta)
        self.requested = mode
        self.reset()

    @property
    def mode(self) -> str:
        """``min`` or ``max`` (for ``auto``, ``min`` until the model is known)."""
        return self.requested if self.requested != "auto" else self._resolved or "min"

    def reset(self) -> None:
        """Start again; ``auto`` is found again from the model."""
        self._resolved: str | None = None
        self.best: float | None = None  # the worst value once the direction is known

    def resolve(self, model: Any) -> None:
        """Find the direction (for ``auto``) and start ``best`` at the worst value."""
        if self.requested == "auto" and self._resolved is None:
            self._resolved = auto_mode(self.monitor, model)
        if self.best is None:
            self.best = -math.inf if self.mode == "max" else math.inf

    def value(self, logs: Logs | None, params: dict[str, Any]) -> float | None:
        """The monitored value; None, with Keras's warning, for a ``val_`` name in an epoch
        that ``fit`` did not validate (``validation_freq``). A name that ``fit`` does not
        log is an error (Keras warns at every epoch)."""
        logs = logs or {}
        if self.monitor in logs:
            return float(logs[self.monitor])
        unvalidated = params.get("do_validation") and not any(name.startswith("val_") for name in logs)
        if self.monitor.startswith("val_") and unvalidated:
            warnings.warn(f"{self.owner}: {self.monitor} is not logged in this epoch (validation_freq)", stacklevel=3)
            return None
        raise ValueError(
            f"{self.owner}: monitor={self.monitor!r} is not logged; the logs have {sorted(logs)} "
            "(val_ names need validation_data or validation_split)"
        )

    def better(self, current: float, reference: float) -> bool:
        if self.mode == "max":
            return current - self.min_delta > reference
        return current + self.min_delta < reference


class EarlyStopping(Callback):
    """Stop when ``monitor`` has not improved by ``min_delta`` for ``patience`` epochs; with
    ``restore_best_weights`` the model then gets back the weights of its best epoch.

    As in Keras 3, ``best`` starts at the worst value whatever the ``baseline``: the best
    epoch is the best one seen, and the baseline only decides whether an improvement
    restarts the patience (it must also beat the baseline)."""

    def __init__(
        self,
        monitor: str = "val_loss",
        min_delta: float = 0.0,
        patience: int = 0,
        verbose: int = 0,
        mode: str = "auto",
        baseline: float | None = None,
        restore_best_weights: bool = False,
        start_from_epoch: int = 0,
    ) -> None:
        self._monitor = _Monitor("EarlyStopping", monitor, mode, min_delta)
        self.patience, self.verbose, self.baseline = patience, verbose, baseline
        self.restore_best_weights, self.start_from_epoch = restore_best_weights, start_from_epoch

    def on_train_begin(self, logs: Logs | None = None) -> None:
        self.wait, self.stopped_epoch, self.best_epoch = 0, 0, 0
        self._monitor.reset()
        self.best_weights: dict | None = None

    @property
    def best(self) -> float | None:
        return self._monitor.best

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        monitor = self._monitor
        monitor.resolve(self.model)
        current = monitor.value(logs, self.params)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights, self.best_epoch = self.model.state_dict(), epoch  # the first epoch's, if none is better
        self.wait += 1
        if monitor.better(current, monitor.best):
            monitor.best, self.best_epoch = current, epoch
            if self.restore_best_weights:
                self.best_weights = self.model.state_dict()
            if self.baseline is None or monitor.better(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs: Logs | None = None) -> None:
        if self.stopped_epoch and self.verbose:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        # Keras 3's: the best epoch's weights come back whether training stopped early or ran out of epochs.
        if self.restore_best_weights and self.best_weights is not None:
            self.model.load_state_dict(self.best_weights)


class ModelCheckpoint(Callback):
    """Save the model after each epoch, or every ``save_freq`` batches (or only when
    ``monitor`` improves, with ``save_best_only``) to ``filepath``, which may name the
    ``epoch``, the ``batch`` and logged values, e.g.
    ``"ckpt-{epoch:02d}-{val_loss:.2f}.npz"``. Each save is atomic: the file is written
    beside the target and renamed over it, so an interrupted run keeps the last good one.
    ``best`` is the best value saved; a first save must beat ``initial_value_threshold``.
    In an epoch that ``fit`` does not validate (``validation_freq``) a ``val_`` monitor is
    not logged: no save then (Keras saves, unmonitored)."""

    def __init__(
        self,
        filepath: str | os.PathLike,
        monitor: str = "val_loss",
        verbose: int = 0,
        save_best_only: bool = False,
        save_weights_only: bool = False,
        mode: str = "auto",
        save_freq: str | int = "epoch",
        initial_value_threshold: float | None = None,
    ) -> None:
        if save_freq != "epoch" and not (isinstance(save_freq, int) and save_freq > 0):
            raise ValueError(f"ModelCheckpoint: save_freq must be 'epoch' or a number of batches, got {save_freq!r}")
        self.filepath, self.verbose, self.save_best_only = os.fspath(filepath), verbose, save_best_only
        saved_whole(self.filepath)  # a name nothing reads back fails here, not at the first epoch's end
        self.save_weights_only, self.save_freq = save_weights_only, save_freq
        self._monitor = _Monitor("ModelCheckpoint", monitor, mode)
        self._monitor.best = initial_value_threshold  # Keras's: a first save must beat it
        self._epoch, self._batches = 0, 0

    @property
    def best(self) -> float | None:
        """The best monitored value saved so far (with ``save_best_only``)."""
        return self._monitor.best

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        self._epoch = epoch

    @property
    def reads_batch_logs(self) -> bool:
        return self.save_freq != "epoch"

    def on_train_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        # Every save_freq batches, counted across epochs (Keras's): reading the monitored
        # value then makes the steps wait for it.
        self._batches += 1
        if self.save_freq != "epoch" and self._batches % self.save_freq == 0:
            self._save(self._epoch, logs or {}, batch)

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        if self.save_freq == "epoch":
            self._save(epoch, logs or {})

    def _save(self, epoch: int, logs: Logs, batch: int | None = None) -> None:
        path = self.filepath.format(epoch=epoch + 1, batch=(batch or 0) + 1, **logs)
        if self.save_best_only:
            if batch is not None and self._monitor.monitor not in logs:  # val_ values come at epoch ends
                warnings.warn(
                    f"ModelCheckpoint: {self._monitor.monitor} is not in batch {batch}'s logs; no save", stacklevel=2
                )
                return
            self._monitor.resolve(self.model)
            current = self._monitor.value(logs, self.params)
            if current is None or not self._monitor.better(current, self._monitor.best):
                return
            self._monitor.best = current
        if self.save_weights_only:
            self.model.save_weights(path)
        else:
            self.model.save(path)
        if self.verbose:
            print(f"Epoch {epoch + 1}: saved model to {path}")


class CSVLogger(Callback):
    """One row per epoch (``epoch`` then the logs' names in sorted order) in ``filename``."""

    def __init__(self, filename: str | os.PathLike, separator: str = ",", append: bool = False) -> None:
        self.filename, self.separator, self.append = os.fspath(filename), separator, append
        self._file: Any = None
        self._writer: Any = None

    def on_train_begin(self, logs: Logs | None = None) -> None:
        has_rows = self.append and os.path.exists(self.filename) and os.path.getsize(self.filename) > 0
        self._file = open(self.filename, "a" if self.append else "w", newline="")  # noqa: SIM115 - open across hooks
        self._writer = None
        self._header_written = has_rows

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        logs = logs or {}
        if self._writer is None:
            self._writer = csv.DictWriter(self._file, ["epoch", *sorted(logs)], delimiter=self.separator)
            if not self._header_written:
                self._writer.writeheader()
        self._writer.writerow({"epoch": epoch, **logs})
        self._file.flush()

    def on_train_end(self, logs: Logs | None = None) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class ReduceLROnPlateau(Callback):
    """Multiply the optimizer's learning rate by ``factor`` when ``monitor`` has not
    improved by ``min_delta`` for ``patience`` epochs, then wait ``cooldown`` epochs;
    never below ``min_lr``."""

    def __init__(
        self,
        monitor: str = "val_loss",
        factor: float = 0.1,
        patience: int = 10,
        verbose: int = 0,
        mode: str = "auto",
        min_delta: float = 1e-4,
        cooldown: int = 0,
        min_lr: float = 0.0,
    ) -> None:
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor must be below 1, got {factor}")
        self._monitor = _Monitor("ReduceLROnPlateau", monitor, mode, min_delta)
        self.factor, self.patience, self.verbose = float(factor), patience, verbose
        self.cooldown, self.min_lr = cooldown, float(min_lr)

    def on_train_begin(self, logs: Logs | None = None) -> None:
        self.wait, self.cooldown_counter = 0, 0
        self._monitor.reset()

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        self._monitor.resolve(self.model)
        optimizer = self.model.optimizer
        if logs is not None:
            logs["learning_rate"] = optimizer.learning_rate
        current = self._monitor.value(logs, self.params)
        if current is None:
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self._monitor.better(current, self._monitor.best):
            self._monitor.best, self.wait = current, 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience and optimizer.learning_rate > self.min_lr:
                optimizer.learning_rate = max(optimizer.learning_rate * self.factor, self.min_lr)
                if self.verbose:
                    print(f"Epoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to {optimizer.learning_rate}.")
                self.cooldown_counter, self.wait = self.cooldown, 0


class LearningRateScheduler(Callback):
    """Set the learning rate to ``schedule(epoch, lr)`` at the start of every epoch."""

    def __init__(self, schedule: Any, verbose: int = 0) -> None:
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        optimizer = self.model.optimizer
        try:
            rate = self.schedule(epoch, optimizer.learning_rate)
        except TypeError:  # Keras also takes schedule(epoch)
            rate = self.schedule(epoch)
        optimizer.learning_rate = float(rate)
        if self.verbose:
            print(f"Epoch {epoch + 1}: LearningRateScheduler setting learning rate to {float(rate)}.")

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        if logs is not None:
            logs["learning_rate"] = self.model.optimizer.learning_rate


class TerminateOnNaN(Callback):
    """Stop training when an epoch's loss is NaN or infinite (read at epoch ends: reading
    it after every batch would cut a compiled step in two); with ``raise_error``, raise a
    RuntimeError instead, as Keras's does."""

    def __init__(self, raise_error: bool = False) -> None:
        self.raise_error = raise_error

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(loss):
            if self.raise_error:
                raise RuntimeError(f"NaN or Inf loss encountered in epoch {epoch + 1}: {loss}; training stops")
            print(f"Epoch {epoch + 1}: invalid loss, terminating training")
            self.model.stop_training = True


class LambdaCallback(Callback):
    """A callback made of functions: ``LambdaCallback(on_epoch_end=lambda epoch, logs: ...)``."""

    # Every hook of Callback, as Keras's takes any of them (``on_test_end=``...) by keyword.
    _HOOKS = tuple(name for name in vars(Callback) if name.startswith("on_"))

    def __init__(self, **hooks: Any) -> None:
        unknown = set(hooks) - set(self._HOOKS)
        if unknown:
            raise TypeError(f"LambdaCallback: unknown hooks {sorted(unknown)}; expected some of {list(self._HOOKS)}")
        for name, fn in hooks.items():
            if fn is not None:
                setattr(self, name, fn)
