"""Training loops: Keras-style ``compile``/``fit``/``evaluate`` and the X10 tutorial's
running statistics.

Statistics are kept as tensors on the training device and read only when reported, so a
lazy device never has to materialise a value in the middle of an epoch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from braze import ops
from braze.autodiff import no_grad
from braze.ir.dtypes import float32, int32
from braze.lazy import barrier
from braze.nn.losses import get_loss
from braze.nn.progress import ProgressBar
from braze.runtime.device import Device
from braze.tensor import Tensor


def count_correct(outputs: Tensor, labels: Tensor) -> Tensor:
    """How many predictions are right: argmax for several classes, 0.5 for one output."""
    if outputs.ndim == 2 and outputs.shape[1] > 1:
        return ops.sum(ops.argmax(outputs, axis=1) == labels.astype(int32))
    predicted = outputs.reshape(-1) > 0.5
    return ops.sum(predicted == (labels.reshape(-1).astype(outputs.dtype) > 0.5))


class Statistics:
    """Running loss and accuracy of an epoch, accumulated on the device."""

    def __init__(self, device: Device) -> None:
        # Device data, not zeros traced into the first step: every step then traces the same graph.
        self.correct = ops.tensor(0, int32, device=device)
        self.loss_sum = ops.tensor(0.0, float32, device=device)
        self.total = 0
        self.batches = 0

    def update(self, outputs: Tensor, labels: Tensor, loss: Tensor) -> None:
        with no_grad():
            self.correct += count_correct(outputs.detach(), labels)
            self.loss_sum += loss.detach().astype(float32)
        self.total += labels.shape[0]
        self.batches += 1

    @property
    def correct_count(self) -> int:
        return int(self.correct.item())

    @property
    def average_loss(self) -> float:
        return float(self.loss_sum.item()) / max(self.batches, 1)

    @property
    def accuracy(self) -> float:
        return 100.0 * self.correct_count / max(self.total, 1)

    def describe(self, name: str) -> str:
        return (
            f"{name} Loss: {self.average_loss:.3f}, {name} Accuracy: {self.correct_count}/{self.total} "
            f"({self.accuracy:.1f}%)"
        )


@dataclass
class History:
    """What ``fit`` returns: one value per epoch for each metric (``history.history[name]``)."""

    history: dict[str, list[float]] = field(default_factory=dict)

    def append(self, name: str, value: float) -> None:
        self.history.setdefault(name, []).append(value)


def as_batches(data: Any, batch_size: int | None) -> Iterable:
    """Batches from an iterable of (x, y) batches, or from an (x, y) pair of whole arrays."""
    if isinstance(data, tuple) and len(data) == 2 and all(isinstance(a, (np.ndarray, Tensor)) for a in data):
        from braze.data import DataLoader

        arrays = tuple(np.asarray(a) for a in data)
        return DataLoader(arrays, batch_size or 32, shuffle=False)
    return data


def _take(batches: Iterable, steps: int | None) -> Iterable:
    for i, batch in enumerate(batches):
        if steps is not None and i >= steps:
            return
        yield batch


class Trainer:
    """What ``Module.compile`` sets up: one training step, one evaluation step, the loops."""

    def __init__(
        self, model: Any, loss: str | Callable, optimizer: Any, metrics: Any = (), jit_compile: bool = False
    ) -> None:
        from braze.jit import jit
        from braze.optim import get_optimizer

        self.model = model
        self.loss_fn = get_loss(loss)
        self.optimizer = get_optimizer(optimizer, model)
        unknown = [m for m in metrics if m not in ("accuracy", "acc")]
        if unknown:
            raise ValueError(f"unknown metrics {unknown}: braze supports 'accuracy'")
        self.metrics = list(metrics)
        # jit_compile: the whole step (forward, backward, update) is one compiled function.
        self._compiled_step = jit(self._step) if jit_compile else None

    def _device(self) -> Device:
        device = self.model.device
        if device is None:
            raise RuntimeError("the model has no parameters yet: give its first layer an input_shape")
        return device

    def _step(self, model: Any, optimizer: Any, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        optimizer.zero_grad()
        outputs = model(x)
        loss = self.loss_fn(outputs, y)
        loss.backward()
        return outputs.detach(), loss.detach()

    def train_step(self, x: Any, y: Any, stats: Statistics) -> None:
        device = self._device()
        x, y = ops.tensor(x, device=device), ops.tensor(y, device=device)
        if self._compiled_step is not None:
            outputs, loss = self._compiled_step(self.model, self.optimizer, x, y)
        else:
            outputs, loss = self._step(self.model, self.optimizer, x, y)
        # Statistics before the update: on a lazy device the update's barrier then runs
        # the whole step, statistics included, as one graph.
        stats.update(outputs, y, loss)
        self.optimizer.step()

    def eval_step(self, x: Any, y: Any, stats: Statistics) -> None:
        device = self._device()
        x, y = ops.tensor(x, device=device), ops.tensor(y, device=device)
        with no_grad():
            outputs = self.model(x)
            stats.update(outputs, y, self.loss_fn(outputs, y))
        if device.is_lazy:
            barrier(device)

    def fit(
        self,
        data: Any,
        epochs: int = 1,
        validation_data: Any = None,
        batch_size: int | None = None,
        steps_per_epoch: int | None = None,
        validation_steps: int | None = None,
        verbose: int = 1,
    ) -> History:
        history = History()
        batches = as_batches(data, batch_size)
        for epoch in range(epochs):
            start = time.perf_counter()
            stats = Statistics(self._device())
            self.model.train()
            total = steps_per_epoch or (len(batches) if hasattr(batches, "__len__") else 0)
            bar = ProgressBar(total, f"Epoch {epoch + 1}/{epochs}")
            for x, y in _take(batches, steps_per_epoch):
                self.train_step(x, y, stats)
                bar.update()
            bar.close()
            history.append("loss", stats.average_loss)
            if self.metrics:
                history.append("accuracy", stats.accuracy / 100)
            line = f"Epoch {epoch + 1}/{epochs} - loss: {stats.average_loss:.4f}"
            if self.metrics:
                line += f" - accuracy: {stats.accuracy / 100:.4f}"
            if validation_data is not None:
                result = self.evaluate(validation_data, batch_size=batch_size, steps=validation_steps, verbose=0)
                for name, value in result.items():
                    history.append(f"val_{name}", value)
                    line += f" - val_{name}: {value:.4f}"
            seconds = time.perf_counter() - start
            history.append("seconds", seconds)
            if verbose:
                print(f"{line} - {seconds:.1f} s", flush=True)
        return history

    def evaluate(self, data: Any, batch_size: int | None = None, steps: int | None = None, verbose: int = 0) -> dict:
        stats = Statistics(self._device())
        self.model.eval()
        for x, y in _take(as_batches(data, batch_size), steps):
            self.eval_step(x, y, stats)
        self.model.train()
        result = {"loss": stats.average_loss}
        if self.metrics:
            result["accuracy"] = stats.accuracy / 100
        if verbose:
            print(" - ".join(f"{k}: {v:.4f}" for k, v in result.items()))
        return result
