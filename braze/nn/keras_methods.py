"""Keras's model methods, which every braze ``Module`` has: ``compile``, ``fit`` (alias
``fit_generator``), ``evaluate``, ``predict`` and ``summary``.

``fit`` runs epochs of :class:`~braze.nn.training.Trainer` steps over the batches that
:mod:`braze.nn.adapters` makes of its data, calling the callbacks' hooks; values are read
from the device only at epoch ends, so on a lazy device (``set_jit``) or with
``jit_compile`` every step stays one compiled graph.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from braze import ops
from braze.autodiff import no_grad
from braze.nn import adapters
from braze.nn.callbacks import Callback, CallbackList, History
from braze.nn.summary import summary
from braze.nn.training import Trainer, evaluating, log_line


class KerasMethods:
    """Mixed into ``Module``: the Keras training API over the module's parameters."""

    def compile(self, loss: Any, optimizer: Any, metrics: Any = (), jit_compile: bool = False) -> Any:
        """Choose the loss, optimizer and metrics for ``fit``/``evaluate`` (Keras); with
        ``jit_compile`` each training step is one compiled function."""
        self._trainer = Trainer(self, loss, optimizer, metrics, jit_compile)
        return self

    def _compiled(self) -> Trainer:
        trainer = getattr(self, "_trainer", None)
        if trainer is None:
            raise RuntimeError(f"{type(self).__name__}: call compile(loss=..., optimizer=...) before fit/evaluate")
        return trainer

    def fit(
        self,
        x: Any = None,
        y: Any = None,
        batch_size: int | None = None,
        epochs: int = 1,
        verbose: int = 1,
        callbacks: list[Callback] | None = None,
        validation_split: float = 0.0,
        validation_data: Any = None,
        shuffle: bool = True,
        steps_per_epoch: int | None = None,
        validation_steps: int | None = None,
        initial_epoch: int = 0,
    ) -> History:
        """Train on arrays ``x``, ``y`` (or an ``(x, y)`` pair, or a loader or iterable of
        ``(x, y)`` batches) for ``epochs`` epochs and return the :class:`History`; see
        :mod:`braze.nn.adapters` for what each kind of data means for the other arguments.
        Compiled with a ``braze.distributed.DistributedOptimizer``, each rank fits its shard
        and the epoch's statistics are summed over the ranks, so every rank's History holds
        the job's."""
        trainer = self._compiled()
        train, validation = adapters.training_batches(x, y, batch_size, shuffle, validation_split, validation_data)
        history = History()
        steps = steps_per_epoch or len(train)
        hooks = CallbackList([*(callbacks or []), history], self, {"epochs": epochs, "steps": steps})
        self.history = history
        self.stop_training = False
        hooks.call("on_train_begin", {})
        for epoch in range(initial_epoch, epochs):
            start = time.perf_counter()
            hooks.call("on_epoch_begin", epoch, {})
            logs = trainer.train_epoch(train, steps_per_epoch, hooks, f"Epoch {epoch + 1}/{epochs}")
            if logs is None:
                warnings.warn(
                    f"fit: the training data ran out at epoch {epoch + 1}; training stops (a generator gives "
                    "its batches once: give steps_per_epoch * epochs batches, or a loader)",
                    stacklevel=2,
                )
                break
            if validation is not None:
                logs.update(trainer.evaluate(validation, validation_steps, hooks, prefix="val_", over_ranks=True))
            logs["seconds"] = time.perf_counter() - start
            if verbose:
                print(f"Epoch {epoch + 1}/{epochs} - {log_line(logs)} - {logs['seconds']:.1f} s", flush=True)
            hooks.call("on_epoch_end", epoch, logs)
            stop = self.stop_training
            agree = getattr(trainer.optimizer, "any_rank", None)
            if agree is not None:  # data-parallel: a rank stopping alone would leave the others waiting
                stop = agree(stop)
            if stop:
                break
        hooks.call("on_train_end", {})
        return history

    fit_generator = fit  # Keras's old name, taking the same arguments

    def evaluate(
        self,
        x: Any = None,
        y: Any = None,
        batch_size: int | None = None,
        verbose: int = 1,
        steps: int | None = None,
        callbacks: list[Callback] | None = None,
        return_dict: bool = False,
    ) -> float | list[float] | dict[str, float]:
        """The loss, or ``[loss, accuracy]`` with metrics (a dict with ``return_dict``)."""
        data = adapters.batches(x, y, batch_size, "evaluate")
        hooks = CallbackList(callbacks or [], self, {"steps": steps})
        logs = self._compiled().evaluate(data, steps, hooks)
        if verbose:
            print(log_line(logs), flush=True)
        if return_dict:
            return logs
        return logs["loss"] if len(logs) == 1 else list(logs.values())

    evaluate_generator = evaluate

    def predict(self, x: Any, batch_size: int | None = None, verbose: int = 0, steps: int | None = None) -> np.ndarray:
        """The outputs for every input as one NumPy array (no ``compile`` needed)."""
        outputs = []
        with evaluating(self), no_grad():
            for inputs in adapters.prediction_batches(x, batch_size).epoch(steps):
                batch = ops.tensor(adapters.as_input(inputs, self), device=self.device)
                outputs.append(np.asarray(self(batch).numpy()))
        if not outputs:
            raise ValueError("predict: the data yielded no batches")
        return np.concatenate(outputs)

    predict_generator = predict

    def summary(self, print_fn: Any = print) -> None:
        """Print Keras's table of layers, output shapes and parameter counts."""
        summary(self, print_fn)
