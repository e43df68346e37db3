"""Keras's model methods, which every braze ``Module`` has: ``compile``, ``fit`` (alias
``fit_generator``), ``evaluate``, ``predict``, the ``*_on_batch`` forms and ``summary``;
the steps they run are in :mod:`braze.nn.keras_steps`.

``fit`` runs epochs of the model's ``train_step`` (see :mod:`braze.nn.trainer`) over the
batches that :mod:`braze.nn.adapters` makes of its data, calling the callbacks' hooks;
values are read from the device only at epoch ends, so on a lazy device (``set_jit``) or
with ``jit_compile`` every step stays one compiled graph.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

from braze.nn import adapters, tree
from braze.nn.callbacks import Callback, CallbackList, History
from braze.nn.compile_utils import CompileLoss, CompileMetrics
from braze.nn.keras_steps import KerasSteps
from braze.nn.summary import summary
from braze.nn.trainer import Trainer, pythonify


def _log_line(logs: dict[str, Any]) -> str:
    def fmt(value: Any) -> str:
        return f"{value:.4f}" if isinstance(value, float) else str(value)

    return " - ".join(f"{name}: {fmt(value)}" for name, value in logs.items())


class NotCompiledError(RuntimeError, ValueError):
    """``fit``, ``evaluate`` or a ``*_on_batch`` method before ``compile``: a ValueError, as
    Keras raises, and a RuntimeError, as braze raised first."""


class KerasMethods(KerasSteps):
    """Mixed into ``Module``: the Keras training API over the module's weights."""

    def compile(
        self,
        optimizer: Any = "rmsprop",
        loss: Any = None,
        loss_weights: Any = None,
        metrics: Any = None,
        weighted_metrics: Any = None,
        run_eagerly: bool = False,
        steps_per_execution: int = 1,
        jit_compile: bool | str = False,
        auto_scale_loss: bool = True,
    ) -> Any:
        """Choose the optimizer, loss(es) and metrics for ``fit``/``evaluate`` (Keras's
        signature). ``jit_compile=True`` compiles each step (training, evaluation,
        prediction) as one function; ``"auto"`` and False leave it to the device (compiled
        on a lazy one, ``set_jit``). ``run_eagerly=True`` never compiles the steps."""
        from braze.optim import get_optimizer

        if steps_per_execution != 1:
            raise NotImplementedError(
                f"compile: steps_per_execution={steps_per_execution} is not supported: each step is one execution "
                "(give 1)"
            )
        if run_eagerly and jit_compile is True:
            raise ValueError("compile: run_eagerly=True and jit_compile=True contradict each other")
        if jit_compile not in (True, False, "auto"):
            raise ValueError(f"compile: jit_compile must be True, False or 'auto', got {jit_compile!r}")
        # Resolved now (one output unless a functional model says otherwise), so that the
        # first compiled step does not resolve them while it is traced.
        names = list(getattr(self, "output_names", ["output"]))
        self.optimizer = get_optimizer(optimizer, self)
        self.loss = loss
        self.compiled_loss = CompileLoss(loss, loss_weights, names)
        self.compiled_metrics = CompileMetrics(metrics, weighted_metrics, names)
        self._trainer = Trainer(self, jit_compile is True and not run_eagerly)
        return self

    @property
    def compiled(self) -> bool:
        return getattr(self, "_trainer", None) is not None

    def _compiled(self) -> Trainer:
        trainer = getattr(self, "_trainer", None)
        if trainer is None:
            raise NotCompiledError(f"{type(self).__name__}: call compile(optimizer=..., loss=...) before fit/evaluate")
        return trainer

    def _predictor(self) -> Trainer:
        """The compiled trainer, or (``predict`` needs no ``compile``) an eager one."""
        return getattr(self, "_trainer", None) or Trainer(self, jit_compile=False)

    def fit(
        self,
        x: Any = None,
        y: Any = None,
        batch_size: int | None = None,
        epochs: int = 1,
        verbose: int | str = "auto",
        callbacks: list[Callback] | None = None,
        validation_split: float = 0.0,
        validation_data: Any = None,
        shuffle: bool = True,
        class_weight: dict[int, float] | None = None,
        sample_weight: Any = None,
        initial_epoch: int = 0,
        steps_per_epoch: int | None = None,
        validation_steps: int | None = None,
        validation_batch_size: int | None = None,
        validation_freq: int | list[int] = 1,
        max_queue_size: int = 10,
        workers: int = 1,
        use_multiprocessing: bool = False,
    ) -> History:
        """Train on ``x`` and ``y`` for ``epochs`` epochs and return the :class:`History`;
        see :mod:`braze.nn.adapters` for the data it takes. ``max_queue_size``, ``workers``
        and ``use_multiprocessing`` (Keras 2's loading options) change nothing: batches are
        made in this process, in order. Compiled with a
        ``braze.distributed.DistributedOptimizer``, each rank fits its shard and the epoch's
        metrics are summed over the ranks, so every rank's History holds the job's."""
        trainer = self._compiled()
        needs_targets = self.compiled_loss.spec is not None and type(self).train_step is KerasSteps.train_step
        train, validation = adapters.training_batches(
            x,
            y,
            batch_size,
            shuffle,
            validation_split,
            validation_data,
            sample_weight,
            class_weight,
            validation_batch_size,
            needs_targets,
        )
        history = History()
        steps = steps_per_epoch or len(train) or None  # None: a generator's (Keras's)
        # Keras 3's params, and tf.keras's do_validation (monitors of val_ names read it).
        params = {"verbose": verbose, "epochs": epochs, "steps": steps, "do_validation": validation is not None}
        hooks = CallbackList([*(callbacks or []), history], self, params)
        self.history = history
        self.stop_training = False
        was_training = self.training
        hooks.call("on_train_begin", {})
        last_logs: dict[str, Any] = {}
        try:
            for epoch in range(initial_epoch, epochs):
                start = time.perf_counter()
                hooks.call("on_epoch_begin", epoch, {})
                self.train()
                logs = trainer.train_epoch(train, steps_per_epoch, hooks, f"Epoch {epoch + 1}/{epochs}")
                if logs is None:
                    warnings.warn(
                        f"fit: the training data ran out at epoch {epoch + 1}; training stops (a generator gives "
                        "its batches once: give steps_per_epoch * epochs batches, or a loader)",
                        stacklevel=2,
                    )
                    break
                if validation is not None and _validates(epoch, validation_freq):
                    logs.update(trainer.evaluate(validation, validation_steps, hooks, prefix="val_", over_ranks=True))
                history.seconds.append(time.perf_counter() - start)
                if verbose:
                    print(f"Epoch {epoch + 1}/{epochs} - {_log_line(logs)} - {history.seconds[-1]:.1f} s", flush=True)
                hooks.call("on_epoch_end", epoch, logs)
                last_logs = logs
                if self._agreed_stop():
                    break
        finally:
            self.train(was_training)
        hooks.call("on_train_end", last_logs)  # Keras's: the last epoch's logs
        return history

    fit_generator = fit  # Keras's old name, taking the same arguments

    def _agreed_stop(self) -> bool:
        stop = self.stop_training
        agree = getattr(self.optimizer, "any_rank", None)
        if agree is not None:  # data-parallel: a rank stopping alone would leave the others waiting
            stop = agree(stop)
        return bool(stop)

    def evaluate(
        self,
        x: Any = None,
        y: Any = None,
        batch_size: int | None = None,
        verbose: int | str = "auto",
        sample_weight: Any = None,
        steps: int | None = None,
        callbacks: list[Callback] | None = None,
        return_dict: bool = False,
        **loading: Any,
    ) -> Any:
        """The loss, or ``[loss, metric, ...]`` with metrics (a dict with ``return_dict``)."""
        _loading_options("evaluate", loading)
        data = adapters.batches(x, y, batch_size, "evaluate", sample_weight)
        hooks = CallbackList(callbacks or [], self, _params(verbose, steps, data))
        logs = self._compiled().evaluate(data, steps, hooks)
        if verbose:
            print(_log_line(logs), flush=True)
        return logs if return_dict else self._in_order(logs)

    evaluate_generator = evaluate

    def predict(
        self,
        x: Any,
        batch_size: int | None = None,
        verbose: int | str = "auto",
        steps: int | None = None,
        callbacks: list[Callback] | None = None,
        **loading: Any,
    ) -> Any:
        """The outputs for every input, as NumPy (a list or dict of arrays for a model with
        several outputs); no ``compile`` needed."""
        _loading_options("predict", loading)
        data = adapters.prediction_batches(x, batch_size)
        hooks = CallbackList(callbacks or [], self, _params(verbose, steps, data))
        return self._predictor().predict(data, steps, hooks)

    predict_generator = predict

    def train_on_batch(
        self, x: Any, y: Any = None, sample_weight: Any = None, class_weight: Any = None, return_dict: bool = False
    ) -> Any:
        """One training step on one batch; the metrics' results after it."""
        trainer = self._compiled()
        batch = adapters.pack(x, y, sample_weight)
        if class_weight is not None:
            if sample_weight is not None:
                raise ValueError("train_on_batch: give class_weight or sample_weight, not both")
            batch = (x, y, adapters.class_weights(class_weight, y))
        self.reset_metrics()
        logs = pythonify(trainer._step(trainer.train_function, batch))
        return logs if return_dict else self._in_order(logs)

    def test_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None, return_dict: bool = False) -> Any:
        trainer = self._compiled()
        self.reset_metrics()
        logs = pythonify(trainer._step(trainer.test_function, adapters.pack(x, y, sample_weight)))
        return logs if return_dict else self._in_order(logs)

    def _in_order(self, logs: dict[str, Any]) -> Any:
        """The logs as Keras 3 lists them (its ``_flatten_metrics_in_order``): in the order
        of the model's metrics' names (a compiled metric's without its output's name, so a
        model of several outputs lists its metrics after the losses), the rest by sorted
        name; one value alone."""
        names: list[str] = []
        for metric in self.metrics:
            names += metric.base_names if isinstance(metric, CompileMetrics) else [metric.name]
        values = [logs[name] for name in names if name in logs]
        values += [logs[name] for name in sorted(logs) if name not in names]
        return values[0] if len(values) == 1 else values

    def predict_on_batch(self, x: Any) -> Any:
        return self.predict(x, batch_size=len(tree.leaves(x)[0]), verbose=0)

    def summary(
        self,
        line_length: int | None = None,
        positions: Any = None,
        print_fn: Any = None,
        expand_nested: bool = False,
        show_trainable: bool = False,
    ) -> None:
        """Print Keras's table of layers, output shapes and parameter counts through
        ``print_fn`` (``print``); the other arguments only shape Keras's table."""
        summary(self, print_fn or print)


def _params(verbose: int | str, steps: int | None, data: adapters.Batches) -> dict[str, Any]:
    """Keras 3's callback params of ``evaluate`` and ``predict``: one epoch of ``steps``
    batches, or of the data's (None for a generator)."""
    return {"verbose": verbose, "epochs": 1, "steps": steps or len(data) or None}


def _validates(epoch: int, frequency: int | list[int]) -> bool:
    """Keras's ``validation_freq``: every n-th epoch, or the listed epochs (from 1)."""
    if isinstance(frequency, int):
        return (epoch + 1) % frequency == 0
    return epoch + 1 in frequency


def _loading_options(caller: str, options: dict[str, Any]) -> None:
    """Keras 2's data-loading options change nothing here; anything else is an error."""
    unknown = set(options) - {"max_queue_size", "workers", "use_multiprocessing"}
    if unknown:
        raise TypeError(f"{caller}: unexpected argument(s) {sorted(unknown)}")
