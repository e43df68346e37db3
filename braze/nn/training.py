"""Training loops: Keras's ``compile``/``fit``/``evaluate``/``predict`` and the X10
tutorial's running statistics.

Statistics are kept as tensors on the training device and read only when an epoch is over
(that is when callbacks see them), so a lazy device never has to materialise a value in the
middle of an epoch and every step traces the same graph.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from braze import ops
from braze.autodiff import no_grad
from braze.ir.dtypes import float32, int32
from braze.lazy import barrier
from braze.nn import adapters, regularizers
from braze.nn.callbacks import CallbackList
from braze.nn.losses import get_loss
from braze.nn.progress import ProgressBar
from braze.runtime.device import Device, default_device
from braze.tensor import Tensor


def count_correct(outputs: Tensor, labels: Tensor) -> Tensor:
    """How many predictions are right: argmax for several classes (against integer labels or
    one-hot targets), 0.5 for one output."""
    if outputs.ndim == 2 and outputs.shape[1] > 1:
        truth = ops.argmax(labels, axis=1) if labels.shape == outputs.shape else labels.reshape(-1).astype(int32)
        return ops.sum(ops.argmax(outputs, axis=1) == truth)
    predicted = outputs.reshape(-1) > 0.5
    return ops.sum(predicted == (labels.reshape(-1).astype(outputs.dtype) > 0.5))


class Statistics:
    """Running loss and accuracy of an epoch, accumulated on the device."""

    def __init__(self, device: Device) -> None:
        # Device data, not zeros traced into the first step: every step then traces the same graph.
        self.correct = ops.tensor(0, int32, device=device)
        self.loss_sum = ops.tensor(0.0, float32, device=device)
        self.example_loss_sum = ops.tensor(0.0, float32, device=device)
        self.total = 0
        self.batches = 0

    def update(self, outputs: Tensor, labels: Tensor, loss: Tensor) -> None:
        with no_grad():
            self.correct += count_correct(outputs.detach(), labels)
            batch_loss = loss.detach().astype(float32)
            self.loss_sum += batch_loss
            self.example_loss_sum += batch_loss * labels.shape[0]
        self.total += labels.shape[0]
        self.batches += 1

    @property
    def correct_count(self) -> int:
        return int(self.correct.item())

    @property
    def average_loss(self) -> float:
        return float(self.loss_sum.item()) / max(self.batches, 1)

    @property
    def mean_loss(self) -> float:
        """The loss per example, Keras's epoch loss (a last, smaller batch weighs less)."""
        return float(self.example_loss_sum.item()) / max(self.total, 1)

    @property
    def accuracy(self) -> float:
        return 100.0 * self.correct_count / max(self.total, 1)

    def describe(self, name: str) -> str:
        return (
            f"{name} Loss: {self.average_loss:.3f}, {name} Accuracy: {self.correct_count}/{self.total} "
            f"({self.accuracy:.1f}%)"
        )


@contextmanager
def evaluating(model: Any) -> Iterator[None]:
    """Inference mode (dropout off) for the block, then the mode the model was in."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


def epoch_logs(stats: Statistics, metrics: list[str]) -> dict[str, float]:
    logs = {"loss": stats.mean_loss}
    if metrics:
        logs["accuracy"] = stats.accuracy / 100
    return logs


def log_line(logs: dict[str, float]) -> str:
    return " - ".join(f"{name}: {value:.4f}" for name, value in logs.items() if name != "seconds")


class Trainer:
    """What ``compile`` sets up: the loss, optimizer and metrics, one training step (compiled
    with ``jit_compile``), one evaluation step, and an epoch of each."""

    def __init__(
        self, model: Any, loss: str | Callable, optimizer: Any, metrics: Any = (), jit_compile: bool = False
    ) -> None:
        from braze.jit import jit
        from braze.optim import get_optimizer

        self.model = model
        self.loss_fn = get_loss(loss)
        # Bound now, and again once the first batch builds the layers that had no input shape.
        self.optimizer = get_optimizer(optimizer, model)
        self._built = all(getattr(m, "built", True) for _, m in model.named_modules())
        metrics = [metrics] if isinstance(metrics, str) else list(metrics or ())
        unknown = [m for m in metrics if m not in ("accuracy", "acc")]
        if unknown:
            raise ValueError(f"unknown metrics {unknown}: braze supports 'accuracy'")
        self.metrics = metrics
        # jit_compile: the whole step (forward, backward, update) is one compiled function.
        self._compiled_step = jit(self._step) if jit_compile else None

    def _device(self) -> Device:
        """The model's device; before a model without any parameter is built, the default
        device, where its first batch builds it."""
        return self.model.device or default_device()

    def _loss(self, model: Any, outputs: Tensor, y: Tensor) -> Tensor:
        """The loss plus the layers' weight penalties, which Keras adds and reports too."""
        loss = self.loss_fn(outputs, y)
        penalty = regularizers.penalty(model)
        return loss if penalty is None else loss + penalty

    def _step(self, model: Any, optimizer: Any, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        optimizer.zero_grad()
        outputs = model(x)
        loss = self._loss(model, outputs, y)
        loss.backward()
        return outputs.detach(), loss.detach()

    def _tensors(self, x: Any, y: Any) -> tuple[Tensor, Tensor]:
        device = self._device()
        x, y = ops.tensor(adapters.as_input(x, self.model), device=device), ops.tensor(y, device=device)
        if not self._built:
            self._build(x)
        return x, y

    def _build(self, x: Tensor) -> None:
        """Build a model compiled without an input shape from its first batch, as Keras does:
        one forward pass in inference mode (no dropout draws) makes the parameters, which the
        optimizer then takes (a data-parallel one starting every rank from rank 0's)."""
        with no_grad(), evaluating(self.model):
            self.model(x)
        self.optimizer.bind(self.model)
        self._built = True

    def _job_statistics(self, stats: Statistics) -> Statistics:
        """The job's statistics: with a data-parallel optimizer (one that has
        ``reduce_statistics``, as ``braze.distributed.DistributedOptimizer`` does) this rank's
        share summed over the ranks, so every rank logs the whole epoch. Every rank calls
        this, batches or not, since the sum is a collective."""
        reduce = getattr(self.optimizer, "reduce_statistics", None)
        return stats if reduce is None else reduce(stats)

    def train_step(self, x: Any, y: Any, stats: Statistics) -> None:
        x, y = self._tensors(x, y)
        step = self._compiled_step or self._step
        outputs, loss = step(self.model, self.optimizer, x, y)
        # Statistics before the update: on a lazy device the update's barrier then runs
        # the whole step, statistics included, as one graph.
        stats.update(outputs, y, loss)
        self.optimizer.step()

    def eval_step(self, x: Any, y: Any, stats: Statistics) -> None:
        x, y = self._tensors(x, y)
        with no_grad():
            outputs = self.model(x)
            stats.update(outputs, y, self._loss(self.model, outputs, y))
        if x.device.is_lazy:
            barrier(x.device)

    def train_epoch(
        self, train: adapters.Batches, steps: int | None, hooks: CallbackList, title: str
    ) -> dict[str, float] | None:
        """One epoch of training steps; the epoch's logs, read once it is over, or None when
        the data had no batch left (a generator that ran out)."""
        stats = Statistics(self._device())
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
        self.model.train()
        bar = ProgressBar(steps or len(train), title)
        for batch, (x, y) in enumerate(train.epoch(steps)):
            hooks.call("on_train_batch_begin", batch, {"batch": batch})
            self.train_step(x, y, stats)
            hooks.call("on_train_batch_end", batch, {"batch": batch, "size": len(x)})
            bar.update()
        bar.close()
        stats = self._job_statistics(stats)
        return epoch_logs(stats, self.metrics) if stats.batches else None

    def evaluate(
        self,
        data: adapters.Batches,
        steps: int | None,
        hooks: CallbackList,
        prefix: str = "",
        over_ranks: bool = False,
    ) -> dict[str, float]:
        """The loss (and metrics) over ``steps`` batches of ``data``, names prefixed by
        ``prefix``; ``over_ranks`` (``fit``'s validation, which every rank runs): summed
        over a data-parallel job's ranks. A plain ``evaluate`` is this rank's alone, so that
        one rank may evaluate without the others."""
        stats = Statistics(self._device())
        hooks.call("on_test_begin", {})
        with evaluating(self.model):
            for batch, (x, y) in enumerate(data.epoch(steps)):
                hooks.call("on_test_batch_begin", batch, {"batch": batch})
                self.eval_step(x, y, stats)
                hooks.call("on_test_batch_end", batch, {"batch": batch, "size": len(x)})
        if over_ranks:
            stats = self._job_statistics(stats)
        if not stats.batches:
            raise ValueError(f"{data.caller}: the data yielded no batches")
        logs = epoch_logs(stats, self.metrics)
        hooks.call("on_test_end", logs)
        return {f"{prefix}{name}": value for name, value in logs.items()}
