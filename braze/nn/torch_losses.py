"""PyTorch's cross-entropy as PyTorch programs call it: ``braze.nn.functional.cross_entropy``
and the ``braze.nn.CrossEntropyLoss`` module, with PyTorch's layout and options.

The classes are axis 1 of ``(N, C, d1, ...)`` scores (axis 0 of one example's ``(C,)``);
targets are integer classes of the scores' shape without that axis, or class probabilities
of the scores' shape. ``ignore_index`` (default -100) drops a target from the loss and from
the mean's count; ``weight`` scales each class, and the mean of integer targets divides by
the targets' summed weights; ``label_smoothing`` mixes the target with the uniform
distribution. Integer targets take the label's logit by a gather (``losses.py``), never a
one-hot over the classes, smoothing included.
"""

from __future__ import annotations

import math
from typing import Any

from braze import ops
from braze.ir.errors import DTypeError, ShapeError
from braze.nn.losses import label_cross_entropy
from braze.nn.module import Module
from braze.tensor import Tensor, user_error

_REDUCTIONS = ("mean", "sum", "none")
_NAME = "cross_entropy"


def _classes_last(x: Tensor, axis: int) -> Tensor:
    order = [k for k in range(x.ndim) if k != axis] + [axis]
    return x if order == list(range(x.ndim)) else ops.transpose(x, order)


def _class_weights(weight: Any, scores: Tensor, classes: int) -> Tensor | None:
    if weight is None:
        return None
    w = ops.as_tensor(weight, dtype=scores.dtype, device=scores.device)
    if w.shape != (classes,):
        raise user_error(ShapeError, f"{_NAME}: weight must hold one value per class, ({classes},), got {w.shape}")
    return w


def _check_options(reduction: str, label_smoothing: float) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{_NAME}: reduction must be one of {', '.join(_REDUCTIONS)}, got {reduction!r}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"{_NAME}: label_smoothing must be between 0 and 1, got {label_smoothing}")


def _reduce(losses: Tensor, reduction: str, count: Tensor | int) -> Tensor:
    if reduction == "none":
        return losses
    total = ops.sum(losses)
    if reduction == "sum":
        return total
    if isinstance(count, Tensor):
        # Nothing counted (every target ignored): the mean is NaN, as PyTorch's, and its
        # gradient 0 (a division by the zero count would make every gradient NaN).
        counted = count > 0
        return ops.where(counted, total / ops.where(counted, count, 1.0), math.nan)
    return total / count


def _probability_targets(
    logits: Tensor, targets: Tensor, weight: Tensor | None, reduction: str, smoothing: float
) -> Tensor:
    """``-sum_c w_c q_c log p_c`` per example; the mean divides by the examples (PyTorch)."""
    if smoothing:
        targets = targets * (1.0 - smoothing) + smoothing / logits.shape[-1]
    terms = targets * ops.log_softmax(logits, axis=-1)
    if weight is not None:
        terms = terms * weight
    return _reduce(-ops.sum(terms, axis=-1), reduction, max(1, terms.size // logits.shape[-1]))


def _class_targets(
    logits: Tensor, targets: Tensor, weight: Tensor | None, ignore_index: int, reduction: str, smoothing: float
) -> Tensor:
    kept = ops.not_equal(targets, ignore_index)
    labels = ops.where(kept, targets, 0)
    losses = label_cross_entropy(_NAME, logits, labels)
    label_weights = None if weight is None else ops.take(weight, labels)
    if label_weights is not None:
        losses = losses * label_weights
    if smoothing:
        # The uniform part, (1/C) sum_c w_c (logsumexp - x_c), from row sums: no one-hot.
        spread = ops.logsumexp(logits, axis=-1)
        if weight is None:
            uniform = spread - ops.mean(logits, axis=-1)
        else:
            uniform = (spread * ops.sum(weight) - ops.matmul(logits, weight)) / logits.shape[-1]
        losses = losses * (1.0 - smoothing) + uniform * smoothing
    kept_share = kept.astype(logits.dtype)
    counted = kept_share if label_weights is None else kept_share * label_weights
    return _reduce(losses * kept_share, reduction, ops.sum(counted) if reduction == "mean" else 1)


def cross_entropy(
    input: Any,
    target: Any,
    weight: Any = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """``torch.nn.functional.cross_entropy``: the cross-entropy of ``softmax(input)`` over
    axis 1 (axis 0 for a single example) against ``target``, integer classes or class
    probabilities. A mean over targets that are all ignored is NaN, as in PyTorch."""
    _check_options(reduction, label_smoothing)
    scores = ops.as_tensor(input)
    if scores.ndim == 0 or scores.dtype.kind != "f":
        raise user_error(
            DTypeError, f"{_NAME}: input must be floating scores with a class axis, got {scores.dtype}{scores.shape}"
        )
    axis = 0 if scores.ndim == 1 else 1
    classes = scores.shape[axis]
    logits = _classes_last(scores, axis)
    w = _class_weights(weight, scores, classes)
    y = ops.as_tensor(target, device=scores.device)
    if y.dtype.kind == "f":
        if ignore_index != -100:  # PyTorch refuses it too: no class of a probability target can be ignored
            raise user_error(
                ValueError,
                f"{_NAME}: ignore_index is not supported for floating point (class probability) targets, "
                f"got ignore_index={ignore_index}",
            )
        if y.shape != scores.shape:
            raise user_error(
                ShapeError, f"{_NAME}: class probabilities {y.shape} must have the input's shape {scores.shape}"
            )
        return _probability_targets(logits, _classes_last(y.astype(scores.dtype), axis), w, reduction, label_smoothing)
    if y.dtype.kind not in "iu":
        raise user_error(DTypeError, f"{_NAME}: target must be integer classes or float probabilities, got {y.dtype}")
    if y.shape != logits.shape[:-1]:
        raise user_error(
            ShapeError,
            f"{_NAME}: input {scores.shape} takes integer targets of shape {logits.shape[:-1]} "
            f"(the input's without the class axis {axis}), got {y.shape}",
        )
    return _class_targets(logits, y, w, ignore_index, reduction, label_smoothing)


class CrossEntropyLoss(Module):
    """``torch.nn.CrossEntropyLoss``: ``cross_entropy`` with its options fixed; the class
    weights are a buffer (moved by ``.to()``, saved in ``state_dict``)."""

    def __init__(
        self, weight: Any = None, ignore_index: int = -100, reduction: str = "mean", label_smoothing: float = 0.0
    ) -> None:
        super().__init__()
        _check_options(reduction, label_smoothing)
        self.weight = None
        if weight is not None:
            self.register_buffer("weight", ops.as_tensor(weight))
        self.ignore_index = ignore_index
        self.reduction = reduction
        self.label_smoothing = label_smoothing

    def forward(self, input: Any, target: Any) -> Tensor:
        return cross_entropy(input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing)
