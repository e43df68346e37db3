"""Losses, numerically stable, averaged over the batch (Keras's default reduction)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from braze import ops
from braze.ir.errors import ShapeError
from braze.tensor import Tensor, user_error

_EPSILON = 1e-7  # Keras's clipping of probabilities


def softmax_cross_entropy(logits: Tensor, labels: Any) -> Tensor:
    """Mean cross-entropy of integer class ``labels`` under ``softmax(logits)``."""
    labels = ops.as_tensor(labels, device=logits.device)
    if logits.ndim != 2 or labels.shape != logits.shape[:1]:
        raise user_error(
            ShapeError,
            f"softmax_cross_entropy: logits {logits.shape} need integer labels of shape {logits.shape[:1]}, "
            f"got {labels.shape}",
        )
    picked = ops.one_hot(labels, logits.shape[1], dtype=logits.dtype) * ops.log_softmax(logits)
    return -ops.sum(picked) / logits.shape[0]


def binary_cross_entropy(predictions: Tensor, targets: Any, from_logits: bool = False) -> Tensor:
    """Mean binary cross-entropy; probabilities are clipped to [1e-7, 1 - 1e-7] as in Keras,
    logits use ``max(x, 0) - x*y + log(1 + exp(-|x|))`` which never overflows."""
    y = ops.as_tensor(targets, dtype=predictions.dtype, device=predictions.device)
    x = predictions.reshape(-1) if predictions.ndim == 2 and predictions.shape[1] == 1 else predictions
    if x.shape != y.shape:
        raise user_error(
            ShapeError, f"binary_cross_entropy: predictions {predictions.shape} and targets {y.shape} differ"
        )
    if from_logits:
        per_example = ops.relu(x) - x * y + ops.log(1.0 + ops.exp(-ops.abs(x)))
    else:
        p = ops.clip(x, _EPSILON, 1.0 - _EPSILON)
        per_example = -(y * ops.log(p) + (1.0 - y) * ops.log(1.0 - p))
    return ops.mean(per_example)


def mean_squared_error(predictions: Tensor, targets: Any) -> Tensor:
    y = ops.as_tensor(targets, dtype=predictions.dtype, device=predictions.device)
    diff = predictions - ops.broadcast_to(y, predictions.shape) if y.shape != predictions.shape else predictions - y
    return ops.mean(diff * diff)


def sparse_categorical_crossentropy(probabilities: Tensor, labels: Any, from_logits: bool = False) -> Tensor:
    """Keras's loss: integer labels against class probabilities (or logits with ``from_logits``)."""
    if from_logits:
        return softmax_cross_entropy(probabilities, labels)
    clipped = ops.clip(probabilities, _EPSILON, 1.0 - _EPSILON)
    labels = ops.as_tensor(labels, device=probabilities.device)
    picked = ops.one_hot(labels, probabilities.shape[1], dtype=probabilities.dtype) * ops.log(clipped)
    return -ops.sum(picked) / probabilities.shape[0]


LOSSES: dict[str, Callable[..., Tensor]] = {
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
    "softmax_cross_entropy": softmax_cross_entropy,
    "binary_crossentropy": binary_cross_entropy,
    "mse": mean_squared_error,
    "mean_squared_error": mean_squared_error,
}


def get_loss(loss: str | Callable[..., Tensor]) -> Callable[..., Tensor]:
    if callable(loss):
        return loss
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}: expected one of {sorted(LOSSES)} or a function")
    return LOSSES[loss]
