"""PyTorch's class losses as PyTorch programs call them: ``cross_entropy`` and
``nll_loss`` of ``torch.nn.functional`` and the modules ``CrossEntropyLoss`` and ``NLLLoss``,
with PyTorch's arguments, defaults and formulas; and what every PyTorch loss shares (the
``reduction``: ``"mean"``, the default, ``"sum"`` or ``"none"``, the unreduced losses; the
``Loss`` module base). The elementwise losses are in ``torch_elementwise_losses``.

Class losses: the classes are axis 1 of ``(N, C, d1, ...)`` scores (axis 0 of one
example's ``(C,)``); targets are integer classes of the scores' shape without that axis
(or, for ``cross_entropy``, class probabilities of the scores' shape). ``ignore_index``
(default -100) drops a target from the loss and from the mean's count; ``weight`` scales
each class, and the mean of integer targets divides by the targets' summed weights;
``label_smoothing`` mixes the target with the uniform distribution. Integer targets take
the label's score by a gather (``losses.py``), never a one-hot over the classes.
"""

from __future__ import annotations

import math
from typing import Any

from braze import ops
from braze.ir.errors import DTypeError, ShapeError
from braze.nn.losses import label_cross_entropy
from braze.nn.module import Module
from braze.ops.indexing import checked
from braze.tensor import Tensor, user_error

REDUCTIONS = ("mean", "sum", "none")
_NAME = "cross_entropy"


def check_reduction(name: str, reduction: str, allowed: tuple[str, ...] = REDUCTIONS) -> None:
    if reduction not in allowed:
        raise ValueError(f"{name}: reduction must be one of {', '.join(allowed)}, got {reduction!r}")


def reduce_losses(losses: Tensor, reduction: str, count: Tensor | int) -> Tensor:
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


# Class losses ----------------------------------------------------------------------------


def _classes_last(x: Tensor, axis: int) -> Tensor:
    order = [k for k in range(x.ndim) if k != axis] + [axis]
    return x if order == list(range(x.ndim)) else ops.transpose(x, order)


def _class_scores(name: str, input: Any) -> tuple[Tensor, int]:
    """Floating scores and their class axis: 1 of ``(N, C, d1, ...)``, 0 of ``(C,)``."""
    scores = ops.as_tensor(input)
    if scores.ndim == 0 or scores.dtype.kind != "f":
        raise user_error(
            DTypeError, f"{name}: input must be floating scores with a class axis, got {scores.dtype}{scores.shape}"
        )
    return scores, 0 if scores.ndim == 1 else 1


def _class_weights(name: str, weight: Any, scores: Tensor, classes: int) -> Tensor | None:
    if weight is None:
        return None
    w = ops.as_tensor(weight, dtype=scores.dtype, device=scores.device)
    if w.shape != (classes,):
        raise user_error(ShapeError, f"{name}: weight must hold one value per class, ({classes},), got {w.shape}")
    return w


def _labels(name: str, y: Tensor, scores: Tensor, axis: int, classes_last: Tensor, expected: str) -> Tensor:
    """Integer targets of the scores' shape without the class axis."""
    if y.dtype.kind not in "iu":
        raise user_error(DTypeError, f"{name}: target must be {expected}, got {y.dtype}")
    if y.shape != classes_last.shape[:-1]:
        raise user_error(
            ShapeError,
            f"{name}: input {scores.shape} takes integer targets of shape {classes_last.shape[:-1]} "
            f"(the input's without the class axis {axis}), got {y.shape}",
        )
    return y


def _labels_reduced(losses: Tensor, kept: Tensor, label_weights: Tensor | None, reduction: str) -> Tensor:
    """Losses of kept targets (weighted already), reduced; the mean divides by the kept
    targets' summed weights (their count without weights), as PyTorch's."""
    kept_share = kept.astype(losses.dtype)
    counted = kept_share if label_weights is None else kept_share * label_weights
    # Selected, not multiplied by the share: an ignored target's loss may be inf (a -inf
    # score where its placeholder class 0 is read), and inf * 0 would make the total NaN.
    kept_losses = ops.where(kept, losses, 0.0)
    return reduce_losses(kept_losses, reduction, ops.sum(counted) if reduction == "mean" else 1)


def _check_options(reduction: str, label_smoothing: float) -> None:
    check_reduction(_NAME, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"{_NAME}: label_smoothing must be between 0 and 1, got {label_smoothing}")


def _probability_targets(
    logits: Tensor, targets: Tensor, weight: Tensor | None, reduction: str, smoothing: float
) -> Tensor:
    """``-sum_c w_c q_c log p_c`` per example; the mean divides by the examples (PyTorch), so
    it is NaN over none, as PyTorch's."""
    if smoothing:
        targets = targets * (1.0 - smoothing) + smoothing / logits.shape[-1]
    terms = targets * ops.log_softmax(logits, axis=-1)
    if weight is not None:
        terms = terms * weight
    return reduce_losses(-ops.sum(terms, axis=-1), reduction, math.prod(logits.shape[:-1]))


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
    return _labels_reduced(losses, kept, label_weights, reduction)


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
    scores, axis = _class_scores(_NAME, input)
    logits = _classes_last(scores, axis)
    w = _class_weights(_NAME, weight, scores, logits.shape[-1])
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
    y = _labels(_NAME, y, scores, axis, logits, "integer classes or float probabilities")
    return _class_targets(logits, y, w, ignore_index, reduction, label_smoothing)


def nll_loss(input: Any, target: Any, weight: Any = None, ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    """``torch.nn.functional.nll_loss``: ``-weight[y] * input[y]`` for each integer target
    ``y`` of the log-probabilities ``input`` (classes on axis 1, axis 0 for one example);
    the mean divides by the kept targets' summed weights, and is NaN when all are ignored.
    Eager targets outside ``[0, C)`` (but ``ignore_index``) raise an IndexError."""
    name = "nll_loss"
    check_reduction(name, reduction)
    scores, axis = _class_scores(name, input)
    log_probabilities = _classes_last(scores, axis)
    classes = log_probabilities.shape[-1]
    w = _class_weights(name, weight, scores, classes)
    y = ops.as_tensor(target, device=scores.device)
    y = _labels(name, y, scores, axis, log_probabilities, "integer classes")
    kept = ops.not_equal(y, ignore_index)
    # Compiled code cannot raise for a class out of range: it is clamped, as cross_entropy's.
    labels = ops.clip(checked(name, ops.where(kept, y, 0), classes, axis, negative=False), 0, classes - 1)
    picked = ops.take_along_axis(log_probabilities, labels.reshape((*labels.shape, 1)), axis=-1)
    losses = -picked.reshape(labels.shape)
    label_weights = None if w is None else ops.take(w, labels)
    if label_weights is not None:
        losses = losses * label_weights
    return _labels_reduced(losses, kept, label_weights, reduction)


# Modules ---------------------------------------------------------------------------------------


class Loss(Module):
    """A loss module: its function with the options fixed at construction (checked then);
    tensors of weights are buffers (moved by ``.to()``, saved in ``state_dict``)."""

    def __init__(self, name: str, reduction: str, allowed: tuple[str, ...] = REDUCTIONS) -> None:
        super().__init__()
        check_reduction(name, reduction, allowed)
        self.reduction = reduction

    def _hold(self, name: str, value: Any) -> None:
        setattr(self, name, None)
        if value is not None:
            self.register_buffer(name, ops.as_tensor(value))


class CrossEntropyLoss(Loss):
    """``torch.nn.CrossEntropyLoss``: :func:`cross_entropy` with its options fixed."""

    def __init__(
        self, weight: Any = None, ignore_index: int = -100, reduction: str = "mean", label_smoothing: float = 0.0
    ) -> None:
        _check_options(reduction, label_smoothing)
        super().__init__(_NAME, reduction)
        self._hold("weight", weight)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Any, target: Any) -> Tensor:
        return cross_entropy(input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing)


class NLLLoss(Loss):
    """``torch.nn.NLLLoss``: :func:`nll_loss` with its options fixed."""

    def __init__(self, weight: Any = None, ignore_index: int = -100, reduction: str = "mean") -> None:
        super().__init__("nll_loss", reduction)
        self._hold("weight", weight)
        self.ignore_index = ignore_index

    def forward(self, input: Any, target: Any) -> Tensor:
        return nll_loss(input, target, self.weight, self.ignore_index, self.reduction)
