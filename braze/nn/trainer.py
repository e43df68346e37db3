"""The loops of Keras's ``fit``, ``evaluate`` and ``predict`` over the model's
``train_step``, ``test_step`` and ``predict_step`` (its own, when a subclass overrides them).

Each batch's arrays become tensors on the model's device and the step runs: eagerly, on a
lazy device (``set_jit``; a barrier ends each step), or with ``jit_compile`` as one
compiled function of the model and the batch. What a step returns is read only once the
epoch is over (callbacks' batch hooks get only ``batch`` and ``size``), so a compiled step
is never cut in two. Metrics are reset at the start of each epoch and of each evaluation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from braze import ops
from braze.autodiff import no_grad
from braze.lazy import barrier
from braze.nn import adapters, tree
from braze.nn.callbacks import CallbackList
from braze.nn.progress import ProgressBar
from braze.nn.training import evaluating
from braze.ops import strings
from braze.runtime.device import Device, default_device, set_default_device
from braze.tensor import Tensor


def _train(model: Any, data: Any) -> Any:
    return model.train_step(data)


def _test(model: Any, data: Any) -> Any:
    return model.test_step(data)


def _predict(model: Any, data: Any) -> Any:
    return model.predict_step(data)


def as_float(value: Any) -> Any:
    """A logged value as Python: a float, or a list of floats for a vector."""
    if isinstance(value, Tensor):
        array = np.asarray(value.numpy(), dtype=np.float64)
        return float(array.reshape(())) if array.size == 1 else array.tolist()
    if isinstance(value, np.ndarray):
        return float(value.reshape(())) if value.size == 1 else value.tolist()
    return value


def pythonify(logs: Any) -> dict[str, Any]:
    """A step's returned logs as a flat dict of Python values (nested dicts flattened)."""
    flat: dict[str, Any] = {}
    for name, value in (logs or {}).items():
        if isinstance(value, dict):
            flat.update(pythonify(value))
        else:
            flat[name] = as_float(value)
    return flat


class Trainer:
    """The steps ``compile`` chose (compiled with ``jit_compile``) and their loops."""

    def __init__(self, model: Any, jit_compile: bool) -> None:
        from braze.jit import jit

        self.model = model
        self.jit_compile = jit_compile
        self.train_function = jit(_train) if jit_compile else _train
        self.test_function = jit(_test) if jit_compile else _test
        self.predict_function = jit(_predict) if jit_compile else _predict
        self._built = all(getattr(m, "built", True) for _, m in model.named_modules())

    @property
    def optimizer(self) -> Any:
        return self.model.optimizer

    def device(self) -> Device:
        """The model's device; before a model without any parameter is built, the default
        device, where its first batch builds it."""
        return self.model.device or default_device()

    def tensors(self, batch: Any) -> Any:
        """A batch (arrays in any nesting) as tensors on the model's device."""
        device = self.device()

        def convert(value: Any) -> Any:
            if value is None or strings.is_text(value):
                return value
            if isinstance(value, Tensor):
                return value if value.device == device else value.to(device)
            return ops.tensor(adapters.as_input(value, self.model), device=device)

        data = tree.map_leaves(convert, batch)
        graph = getattr(self.model, "_graph", None)
        if graph is not None and graph.text_nodes:
            # The text layers run here, on the host, where text lives; a compiled step
            # takes the tensors they make.
            x, y, sample_weight = adapters.unpack(data)
            read = graph.with_text_read(x)
            read.tensors = [convert(t) for t in read.tensors]
            data = adapters.pack(read, y, sample_weight)
        if not self._built:
            self._build(data)
        return data

    def _build(self, data: Any) -> None:
        """Build a model compiled without an input shape from its first batch, as Keras does:
        one forward pass in inference mode (no dropout draws) makes the weights, which the
        optimizer then takes (a data-parallel one starting every rank from rank 0's); a
        model without a ``call`` of its own (a GAN's ``train_step`` does everything) is not
        called."""
        x = adapters.unpack(data)[0]
        if getattr(self.model, "computes", True):
            with no_grad(), evaluating(self.model):
                self.model(x, training=False)
        weights = getattr(self.model, "trainable_weights", None)
        self.optimizer.bind(weights if weights is not None else self.model)
        self._built = True

    def _step(self, function: Any, batch: Any) -> Any:
        data = self.tensors(batch)
        device = self.device()
        # Tensors the step makes without a device (a GAN's noise) are made on the model's,
        # whichever device is the default (set_jit called after the model was made).
        before = default_device()
        set_default_device(device)
        try:
            result = function(self.model, data)
        finally:
            set_default_device(before)
        if device.is_lazy:
            barrier(device)  # a step ends here even if it never called the optimizer
        return result

    def _reduce(self, logs: Any, over_ranks: bool) -> dict[str, Any]:
        """The logs; in a data-parallel job (``over_ranks``), the metrics' state summed over
        the ranks first, then their results, so every rank logs the whole job's epoch."""
        reduce = getattr(self.optimizer, "reduce_statistics", None) if over_ranks else None
        if reduce is None:
            return pythonify(logs)
        reduce(self.model.metrics)
        return pythonify(self.model.get_metrics_result())

    def train_epoch(
        self, train: adapters.Batches, steps: int | None, hooks: CallbackList, title: str
    ) -> dict[str, Any] | None:
        """One epoch of training steps; the epoch's logs, read once it is over, or None when
        the data had no batch left (a generator that ran out)."""
        given = steps is not None  # the user's steps per epoch, which take up where the last epoch stopped
        agree = getattr(self.optimizer, "agree_steps", None)
        if agree is not None:  # data-parallel: every step is a collective, so every rank takes as many
            if not train.sized and steps is None:
                raise ValueError(
                    f"{train.caller}: data-parallel training on data without a length (a generator) needs "
                    "steps_per_epoch, so that every rank takes as many steps"
                )
            if train.sized:
                steps = len(train) if steps is None else min(steps, len(train))
            steps = agree(steps)
            if steps == 0:  # some rank has no batch this epoch: none steps
                return None
        self.model.reset_metrics()
        bar = ProgressBar(steps or len(train), title)
        logs, batches = None, 0
        read = hooks.read_batch_logs("on_train_batch_end")
        for batch_number, batch in enumerate(train.epoch(steps, resume=given)):
            hooks.call("on_train_batch_begin", batch_number, {})
            logs = self._step(self.train_function, batch)
            batches += 1
            hooks.call("on_train_batch_end", batch_number, pythonify(logs) if read else {})
            bar.update()
            if getattr(self.model, "stop_training", False) and agree is None:
                # A batch hook stopped training: Keras ends the epoch here (its validation still
                # runs). Data-parallel ranks stop together at the epoch's end instead.
                break
        bar.close()
        if not batches and agree is None:
            return None
        return self._reduce(logs, over_ranks=True)

    def evaluate(
        self, data: adapters.Batches, steps: int | None, hooks: CallbackList, prefix: str = "", over_ranks: bool = False
    ) -> dict[str, Any]:
        """The logs of ``test_step`` over ``steps`` batches of ``data``, names prefixed by
        ``prefix``; ``over_ranks`` (``fit``'s validation, which every rank runs): summed
        over a data-parallel job's ranks. A plain ``evaluate`` is this rank's alone, so that
        one rank may evaluate without the others."""
        self.model.reset_metrics()
        hooks.call("on_test_begin", {})
        logs, batches = None, 0
        read = hooks.read_batch_logs("on_test_batch_end")
        with evaluating(self.model):
            for batch_number, batch in enumerate(data.epoch(steps)):
                hooks.call("on_test_batch_begin", batch_number, {})
                logs = self._step(self.test_function, batch)
                batches += 1
                hooks.call("on_test_batch_end", batch_number, pythonify(logs) if read else {})
        if not batches and not over_ranks:
            raise ValueError(f"{data.caller}: the data yielded no batches")
        result = self._reduce(logs, over_ranks)
        hooks.call("on_test_end", result)
        return {f"{prefix}{name}": value for name, value in result.items()}

    def predict(self, data: adapters.Batches, steps: int | None, hooks: CallbackList) -> Any:
        """Every batch's ``predict_step`` outputs, joined along the batch axis (NumPy)."""
        outputs = []
        hooks.call("on_predict_begin", {})
        with evaluating(self.model), no_grad():
            for batch_number, batch in enumerate(data.epoch(steps)):
                hooks.call("on_predict_batch_begin", batch_number, {})
                result = self._step(self.predict_function, batch)
                outputs.append(tree.map_leaves(lambda t: np.array(t.numpy()) if isinstance(t, Tensor) else t, result))
                hooks.call("on_predict_batch_end", batch_number, {"outputs": outputs[-1]})
        hooks.call("on_predict_end", {})
        if not outputs:
            raise ValueError("predict: the data yielded no batches")
        joined = [np.concatenate(parts) for parts in zip(*(tree.leaves(o) for o in outputs), strict=True)]
        return tree.unflatten(outputs[0], joined)
