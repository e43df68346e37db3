"""The X10 tutorial's running statistics of a training loop, and the inference-mode block.

Statistics are kept as tensors on the training device and read only when an epoch is over,
so a lazy device never has to materialise a value in the middle of an epoch and every step
traces the same graph.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from braze import ops
from braze.autodiff import no_grad
from braze.ir.dtypes import float32, int32
from braze.runtime.device import Device
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
