"""Losses, numerically stable, averaged over the batch (Keras's default reduction).

Targets come in the shapes Keras accepts: for one output per example either ``(N,)`` or
``(N, 1)`` whatever the predictions' trailing axis of 1 (Keras squeezes it); for class
scores ``(N, C)`` either integer labels ``(N,)``/``(N, 1)`` or one-hot (or soft) targets
``(N, C)``, in both the categorical and the sparse categorical loss. Any other pair of
shapes is a :class:`ShapeError` naming the loss and both shapes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from braze import ops
from braze.function_replay import replaying
from braze.ir.dtypes import int32, int64
from braze.ir.errors import ShapeError
from braze.ops.indexing import checked, rows
from braze.ops.tensorflow import softplus_parts
from braze.tensor import Tensor, user_error

_EPSILON = 1e-7  # Keras's clipping of probabilities


def one_per_example(name: str, predictions: Tensor, targets: Any) -> tuple[Tensor, Tensor]:
    """Predictions and float targets of one shape, dropping a trailing axis of 1 on the side
    that has one more axis than the other (Keras's ``squeeze_or_expand_dimensions``)."""
    y = ops.as_tensor(targets, dtype=predictions.dtype, device=predictions.device)
    x = predictions
    if x.ndim == y.ndim + 1 and x.shape[-1] == 1:
        x = x.reshape(x.shape[:-1])
    elif y.ndim == x.ndim + 1 and y.shape[-1] == 1:
        y = y.reshape(y.shape[:-1])
    if x.shape != y.shape:
        accepted = f"{predictions.shape}"
        if predictions.shape[-1:] == (1,):
            accepted += f" or {predictions.shape[:-1]}"
        raise user_error(
            ShapeError,
            f"{name}: predictions {predictions.shape} and targets {y.shape} do not match "
            f"(targets of shape {accepted} are expected)",
        )
    return x, y


def integer_labels(name: str, scores: Tensor, targets: Any) -> Tensor | None:
    """Integer labels of the scores' shape without the classes, from labels of that shape
    (or with a trailing 1); None for one-hot (or soft) targets of the scores' shape."""
    y = ops.as_tensor(targets, device=scores.device)
    if scores.ndim < 2:
        raise user_error(ShapeError, f"{name}: scores must have shape (batch, classes), got {scores.shape}")
    outer = scores.shape[:-1]
    if y.shape == scores.shape:
        return None
    if y.shape in (outer, (*outer, 1)):
        return y.reshape(outer) if y.dtype.kind == "i" else y.reshape(outer).astype(int32)
    expected = f"integer labels of shape {outer} or {(*outer, 1)}, or one-hot targets of shape {scores.shape}"
    raise user_error(
        ShapeError, f"{name}: scores {scores.shape} and targets {y.shape} do not match: expected {expected}"
    )


def class_targets(name: str, scores: Tensor, targets: Any) -> Tensor:
    """Targets as a distribution over the last axis of ``scores`` (``(N, C)``, or
    ``(N, T, C)`` for a sequence): one-hot (or soft) targets as they are, integer labels of
    the scores' shape without the classes (or with a trailing 1) turned one-hot."""
    labels = integer_labels(name, scores, targets)
    if labels is None:
        return ops.as_tensor(targets, device=scores.device).astype(scores.dtype)
    return ops.one_hot(labels, scores.shape[-1], dtype=scores.dtype)


@replaying
def cross_entropy(
    name: str, scores: Tensor, targets: Any, from_logits: bool, per_example: bool = False, smoothing: float = 0.0
) -> Tensor:
    """The mean cross-entropy over the batch, or with ``per_example`` one value per example
    (summed over the classes); ``smoothing`` is Keras's ``label_smoothing``."""
    labels = integer_labels(name, scores, targets)
    if labels is not None and from_logits and not smoothing:
        losses = label_cross_entropy(name, scores, labels)
        return losses if per_example else ops.sum(losses) / scores.shape[0]
    distribution = class_targets(name, scores, targets)
    if smoothing:
        distribution = distribution * (1.0 - smoothing) + smoothing / scores.shape[-1]
    if from_logits:
        log_probabilities = ops.log_softmax(scores)
    else:
        # Keras's (the categorical and the sparse loss alike): the probabilities rescaled to
        # sum to 1 over the classes, then kept from 0 and 1.
        probabilities = scores / ops.sum(scores, axis=-1, keepdims=True)
        log_probabilities = ops.log(ops.clip(probabilities, _EPSILON, 1.0 - _EPSILON))
    if per_example:
        return -ops.sum(distribution * log_probabilities, axis=-1)
    return -ops.sum(distribution * log_probabilities) / scores.shape[0]


def label_cross_entropy(name: str, logits: Tensor, labels: Tensor) -> Tensor:
    """``logsumexp(logits) - logits[label]`` per example: the label's logit gathered (its
    gradient a scatter-add), never a one-hot the size of the classes, and the softmax
    computed once, in the gradient of the logsumexp. Labels outside ``[0, classes)`` raise
    an IndexError when eager (a one-hot would silently drop them); compiled, they clamp to
    that range. The logits are gathered as rows of one element at ``example * classes +
    label``: an index of one component, computed in each kernel that reads it, where a
    (example, label) pair would be a kernel of its own."""
    classes = logits.shape[-1]
    labels = ops.clip(checked(name, labels, classes, labels.ndim, negative=False), 0, classes - 1)
    if logits.size > 2**31 - 1:  # the flat index would overflow 32 bits
        labels = labels.astype(int64)
    examples = ops.arange(0, labels.size * classes, classes, dtype=labels.dtype, device=logits.device)
    flat = rows(logits.reshape((logits.size, 1)), examples.reshape(labels.shape) + labels, name)
    return ops.logsumexp(logits, axis=-1) - flat.reshape(labels.shape)


def binary_cross_entropy_elements(x: Tensor, y: Tensor, from_logits: bool) -> Tensor:
    """Elementwise binary cross-entropy of matched predictions and targets."""
    if from_logits:
        # max(x, 0) - x * y + log1p(exp(-|x|)), the parts by where (softplus_parts): with
        # relu and abs the slope at x = 0 would be -y, not sigmoid(0) - y = 1/2 - y. The
        # small log1p term is added last, so a confident logit's loss keeps its digits.
        linear, tail = softplus_parts(x)
        return linear - x * y + tail
    p = ops.clip(x, _EPSILON, 1.0 - _EPSILON)
    return -(y * ops.log(p) + (1.0 - y) * ops.log(1.0 - p))


def softmax_cross_entropy(logits: Tensor, labels: Any) -> Tensor:
    """Mean cross-entropy of the targets (integer labels or one-hot) under ``softmax(logits)``."""
    return cross_entropy("softmax_cross_entropy", logits, labels, from_logits=True)


def categorical_crossentropy(probabilities: Tensor, targets: Any, from_logits: bool = False) -> Tensor:
    """Keras's loss: targets (one-hot, or integer labels) against class probabilities,
    rescaled to sum to 1 and clipped to [1e-7, 1 - 1e-7] as in Keras, or against logits with
    ``from_logits``."""
    return cross_entropy("categorical_crossentropy", probabilities, targets, from_logits)


def sparse_categorical_crossentropy(probabilities: Tensor, labels: Any, from_logits: bool = False) -> Tensor:
    """Keras's loss for integer labels; one-hot targets are accepted too (the same loss)."""
    return cross_entropy("sparse_categorical_crossentropy", probabilities, labels, from_logits)


def binary_cross_entropy(predictions: Tensor, targets: Any, from_logits: bool = False) -> Tensor:
    """Mean binary cross-entropy; probabilities are clipped to [1e-7, 1 - 1e-7] as in Keras,
    logits use ``max(x, 0) - x*y + log(1 + exp(-|x|))`` which never overflows."""
    x, y = one_per_example("binary_crossentropy", predictions, targets)
    return ops.mean(binary_cross_entropy_elements(x, y, from_logits))


def mean_squared_error(predictions: Tensor, targets: Any) -> Tensor:
    """The mean of ``(predictions - targets) ** 2``; targets of shape ``(N,)`` or ``(N, 1)`` for one output."""
    x, y = one_per_example("mean_squared_error", predictions, targets)
    diff = x - y
    return ops.mean(diff * diff)


LOSSES: dict[str, Callable[..., Tensor]] = {
    "categorical_crossentropy": categorical_crossentropy,
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
    "softmax_cross_entropy": softmax_cross_entropy,
    "binary_crossentropy": binary_cross_entropy,
    "mse": mean_squared_error,
    "mean_squared_error": mean_squared_error,
}


def is_braze_loss(loss: Any) -> bool:
    """Whether ``loss`` is one of this module's functions, which take (predictions, targets)
    (Keras's losses take ``(y_true, y_pred)``)."""
    return any(loss is fn for fn in LOSSES.values())
