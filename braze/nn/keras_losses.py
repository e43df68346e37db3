"""``keras.losses``: loss functions in Keras's argument order, ``(y_true, y_pred)``, returning
one value per example, and the ``Loss`` classes that reduce them (by default to the mean
over the batch, Keras's ``sum_over_batch_size``, with optional per-example weights).

braze's own losses (``braze.nn.binary_cross_entropy`` and the others) take
``(predictions, targets)`` and return the batch mean; ``compile`` takes either kind.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from braze import ops
from braze.nn import masks
from braze.nn.ctc import ctc
from braze.nn.losses import binary_cross_entropy_elements, cross_entropy, is_braze_loss, one_per_example
from braze.nn.names import snake_case
from braze.tensor import Tensor

_EPSILON = 1e-7


def _last_axis_mean(values: Tensor) -> Tensor:
    """Keras's per-example loss: the mean over the last axis (for more than one axis)."""
    return ops.mean(values, axis=-1) if values.ndim > 1 else values


def _matched(name: str, y_true: Any, y_pred: Any) -> tuple[Tensor, Tensor]:
    return one_per_example(name, ops.as_tensor(y_pred), y_true)


def mean_squared_error(y_true: Any, y_pred: Any) -> Tensor:
    x, y = _matched("mean_squared_error", y_true, y_pred)
    return _last_axis_mean((x - y) * (x - y))


def mean_absolute_error(y_true: Any, y_pred: Any) -> Tensor:
    x, y = _matched("mean_absolute_error", y_true, y_pred)
    return _last_axis_mean(ops.abs(x - y))


def mean_absolute_percentage_error(y_true: Any, y_pred: Any) -> Tensor:
    x, y = _matched("mean_absolute_percentage_error", y_true, y_pred)
    return _last_axis_mean(100.0 * ops.abs((y - x) / ops.maximum(ops.abs(y), _EPSILON)))


def huber(y_true: Any, y_pred: Any, delta: float = 1.0) -> Tensor:
    x, y = _matched("huber", y_true, y_pred)
    error = ops.abs(x - y)
    quadratic = ops.minimum(error, delta)
    return _last_axis_mean(0.5 * quadratic * quadratic + delta * (error - quadratic))


def log_cosh(y_true: Any, y_pred: Any) -> Tensor:
    x, y = _matched("log_cosh", y_true, y_pred)
    # Keras's x + softplus(-2x) - log 2, written as |x| + log1p(exp(-2|x|)) - log 2 (the
    # same value): exp never overflows, and the gradient is sign(x) * tanh(|x|) = tanh(x),
    # 0 where prediction and target agree.
    d = ops.abs(x - y)
    return _last_axis_mean(d + ops.log1p(ops.exp(-2.0 * d)) - math.log(2.0))


def binary_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False, label_smoothing: float = 0.0) -> Tensor:
    x, y = _matched("binary_crossentropy", y_true, y_pred)
    if label_smoothing:
        y = y * (1.0 - label_smoothing) + 0.5 * label_smoothing
    return _last_axis_mean(binary_cross_entropy_elements(x, y, from_logits))


def categorical_crossentropy(
    y_true: Any, y_pred: Any, from_logits: bool = False, label_smoothing: float = 0.0
) -> Tensor:
    return cross_entropy("categorical_crossentropy", ops.as_tensor(y_pred), y_true, from_logits, True, label_smoothing)


def sparse_categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False) -> Tensor:
    return cross_entropy("sparse_categorical_crossentropy", ops.as_tensor(y_pred), y_true, from_logits, True)


def kl_divergence(y_true: Any, y_pred: Any) -> Tensor:
    x, y = _matched("kl_divergence", y_true, y_pred)
    y, x = ops.clip(y, _EPSILON, 1.0), ops.clip(x, _EPSILON, 1.0)
    return ops.sum(y * ops.log(y / x), axis=-1)


def poisson(y_true: Any, y_pred: Any) -> Tensor:
    x, y = _matched("poisson", y_true, y_pred)
    return _last_axis_mean(x - y * ops.log(x + _EPSILON))


def hinge(y_true: Any, y_pred: Any) -> Tensor:
    x, y = _matched("hinge", y_true, y_pred)
    y = ops.where(y == 0, -1.0, y)  # 0/1 labels as -1/1, as Keras does
    return _last_axis_mean(ops.relu(1.0 - y * x))


def cosine_similarity(y_true: Any, y_pred: Any, axis: int = -1) -> Tensor:
    x, y = _matched("cosine_similarity", y_true, y_pred)

    def normalized(t: Tensor) -> Tensor:
        return t * ops.rsqrt(ops.maximum(ops.sum(t * t, axis=axis, keepdims=True), 1e-12))

    return -ops.sum(normalized(x) * normalized(y), axis=axis)


FUNCTIONS: dict[str, Callable[..., Tensor]] = {
    "mean_squared_error": mean_squared_error,
    "mse": mean_squared_error,
    "mean_absolute_error": mean_absolute_error,
    "mae": mean_absolute_error,
    "mean_absolute_percentage_error": mean_absolute_percentage_error,
    "mape": mean_absolute_percentage_error,
    "huber": huber,
    "log_cosh": log_cosh,
    "logcosh": log_cosh,
    "binary_crossentropy": binary_crossentropy,
    "categorical_crossentropy": categorical_crossentropy,
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
    "kl_divergence": kl_divergence,
    "kld": kl_divergence,
    "poisson": poisson,
    "hinge": hinge,
    "cosine_similarity": cosine_similarity,
    "ctc": ctc,
}
mse, mae, mape, kld, logcosh = (
    mean_squared_error,
    mean_absolute_error,
    mean_absolute_percentage_error,
    kl_divergence,
    log_cosh,
)

_REDUCTIONS = ("sum_over_batch_size", "sum", "none", None, "auto")


def reduce_weighted(values: Tensor, sample_weight: Any, reduction: str | None) -> Tensor:
    """Per-example ``values`` times ``sample_weight`` (broadcast over trailing axes), then
    summed (``"sum"``), divided by their count (``"sum_over_batch_size"``, Keras's
    default, so weights scale the loss rather than renormalise it), or left (``"none"``)."""
    if sample_weight is not None:
        values = values * masks.ranked_weight(sample_weight, values)
    if reduction in ("none", None):
        return values
    total = ops.sum(values)
    return total if reduction == "sum" else total / max(values.size, 1)


class Loss:
    """Keras's base: ``loss(y_true, y_pred, sample_weight=None)`` is the reduced value of
    ``call(y_true, y_pred)``, the per-example losses."""

    def __init__(self, name: str | None = None, reduction: str | None = "sum_over_batch_size", dtype: Any = None):
        if reduction not in _REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
        self.name = name or snake_case(type(self).__name__)
        self.reduction = "sum_over_batch_size" if reduction == "auto" else reduction

    def call(self, y_true: Any, y_pred: Any) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must define call(y_true, y_pred)")

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Tensor:
        """The reduced loss; where ``y_pred`` carries a mask its masked steps weigh nothing
        (and a mean is over the kept steps), as Keras's."""
        values = self.call(y_true, y_pred)
        mask = getattr(y_pred, "_keras_mask", None)
        if mask is not None:
            rescale = self.reduction in ("sum_over_batch_size", "mean")
            sample_weight = masks.weigh(sample_weight, mask, values, rescale)
        return reduce_weighted(values, sample_weight, self.reduction)

    def get_config(self) -> dict[str, Any]:
        return {"name": self.name, "reduction": self.reduction}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Loss:
        return cls(**config)


class LossFunctionWrapper(Loss):
    """A per-example loss function with its keyword arguments, as a ``Loss``."""

    def __init__(self, fn: Callable[..., Tensor], name: str | None = None, reduction: str | None = "auto", **kwargs):
        super().__init__(name or getattr(fn, "__name__", "loss"), reduction)
        self.fn, self.kwargs = fn, kwargs

    def call(self, y_true: Any, y_pred: Any) -> Tensor:
        return self.fn(y_true, y_pred, **self.kwargs)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), **self.kwargs}


def _loss_class(name: str, fn: Callable[..., Tensor], **defaults: Any) -> type[Loss]:
    """A Loss class over ``fn`` whose constructor takes ``defaults`` by name, as Keras's."""

    def __init__(self, *args: Any, name: str | None = None, reduction: str | None = "auto", **kwargs: Any) -> None:  # noqa: N807
        options = dict(defaults)
        keys = list(defaults)
        if len(args) > len(keys):
            raise TypeError(f"{type(self).__name__}: too many positional arguments")
        options.update(zip(keys, args, strict=False))
        unknown = set(kwargs) - set(defaults)
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected argument(s) {sorted(unknown)}")
        options.update(kwargs)
        unsupported = {k: v for k, v in options.items() if k in _UNSUPPORTED and v not in (None, -1)}
        if unsupported:
            raise NotImplementedError(f"{type(self).__name__}: {sorted(unsupported)} not supported")
        LossFunctionWrapper.__init__(
            self,
            fn,
            name or snake_case(type(self).__name__),
            reduction,
            **{k: v for k, v in options.items() if k not in _UNSUPPORTED},
        )

    return type(name, (LossFunctionWrapper,), {"__init__": __init__, "__module__": __name__})


_UNSUPPORTED = ("ignore_class", "axis")
MeanSquaredError = _loss_class("MeanSquaredError", mean_squared_error)
MeanAbsoluteError = _loss_class("MeanAbsoluteError", mean_absolute_error)
MeanAbsolutePercentageError = _loss_class("MeanAbsolutePercentageError", mean_absolute_percentage_error)
Huber = _loss_class("Huber", huber, delta=1.0)
LogCosh = _loss_class("LogCosh", log_cosh)
BinaryCrossentropy = _loss_class(
    "BinaryCrossentropy", binary_crossentropy, from_logits=False, label_smoothing=0.0, axis=-1
)
CategoricalCrossentropy = _loss_class(
    "CategoricalCrossentropy", categorical_crossentropy, from_logits=False, label_smoothing=0.0, axis=-1
)
SparseCategoricalCrossentropy = _loss_class(
    "SparseCategoricalCrossentropy", sparse_categorical_crossentropy, from_logits=False, ignore_class=None
)
KLDivergence = _loss_class("KLDivergence", kl_divergence)
Poisson = _loss_class("Poisson", poisson)
Hinge = _loss_class("Hinge", hinge)
CosineSimilarity = _loss_class("CosineSimilarity", cosine_similarity, axis=-1)
CTC = _loss_class("CTC", ctc)

CLASSES: dict[str, type[Loss]] = {
    cls.__name__: cls
    for cls in (
        MeanSquaredError,
        MeanAbsoluteError,
        MeanAbsolutePercentageError,
        Huber,
        LogCosh,
        BinaryCrossentropy,
        CategoricalCrossentropy,
        SparseCategoricalCrossentropy,
        KLDivergence,
        Poisson,
        Hinge,
        CosineSimilarity,
        CTC,
    )
}


class _PredictionsFirst(Loss):
    """One of braze's own losses (predictions first, batch mean) inside Keras's machinery."""

    def __init__(self, fn: Callable[..., Tensor]) -> None:
        super().__init__(fn.__name__)
        self.fn = fn

    def call(self, y_true: Any, y_pred: Any) -> Tensor:
        return self.fn(y_pred, y_true)


def get(loss: Any) -> Loss:
    """A ``Loss`` from a Keras name (``"mse"``, ``"BinaryCrossentropy"``), a ``Loss``, a
    function ``f(y_true, y_pred)`` (Keras's order), or one of braze's losses."""
    if isinstance(loss, Loss):
        return loss
    if isinstance(loss, str):
        if loss == "softmax_cross_entropy":
            return CategoricalCrossentropy(from_logits=True, name=loss)
        if loss in CLASSES:
            return CLASSES[loss]()
        if loss not in FUNCTIONS:
            raise ValueError(f"unknown loss {loss!r}: expected one of {sorted(FUNCTIONS)}, a Loss or a function")
        return LossFunctionWrapper(FUNCTIONS[loss], name=loss)
    if is_braze_loss(loss):
        return _PredictionsFirst(loss)
    if callable(loss):
        return LossFunctionWrapper(loss)
    raise TypeError(f"a loss must be a name, a Loss or a function, got {type(loss).__name__}")
