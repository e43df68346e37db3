"""``keras.metrics``: stateful metrics whose state lives in tensors on the training device.

``update_state`` adds a batch to the state in place (a traced update on a lazy device or
under ``@jit``, so a compiled step updates its metrics as the eager one does), ``result``
computes the value from the state, ``reset_state`` starts over. ``fit`` resets its metrics
at every epoch and reads them once the epoch is over.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from braze import ops
from braze.autodiff import no_grad
from braze.ir.dtypes import float32, int32
from braze.nn import initializers, keras_losses, masks
from braze.nn.names import snake_case
from braze.nn.state import set_value
from braze.runtime.device import default_device
from braze.tensor import Tensor

_EPSILON = 1e-7


def divide_no_nan(numerator: Tensor, denominator: Tensor) -> Tensor:
    """``numerator / denominator``, 0 where the denominator is 0 (no NaN, no warning)."""
    zero = denominator == 0
    return ops.where(zero, 0.0, numerator / ops.where(zero, 1.0, denominator))


class Metric:
    """Keras's base: state variables made by ``add_variable``, ``update_state``, ``result``."""

    def __init__(self, name: str | None = None, dtype: Any = None) -> None:
        self.name = name or snake_case(type(self).__name__)
        self.dtype = dtype or "float32"
        self.variables: list[Tensor] = []
        self._initial: list[np.ndarray] = []

    def add_variable(
        self, shape: Sequence[int] = (), initializer: Any = "zeros", dtype: Any = None, name: str = ""
    ) -> Tensor:
        """A state tensor of ``shape`` as device data, from ``initializer``: a Keras
        initializer (its name, as ``"zeros"``, or the object) or the array itself."""
        if isinstance(initializer, str) or callable(initializer):
            array = np.asarray(initializers.get(initializer)(tuple(shape), None, None).numpy(), np.float32)
        else:
            array = np.asarray(initializer, np.float32)
        if dtype is not None:
            array = array.astype(np.dtype(str(dtype)))
        variable = Tensor.from_numpy(array.copy(), default_device())
        self.variables.append(variable)
        self._initial.append(array)
        return variable

    def add_weight(
        self, shape: Sequence[int] = (), initializer: Any = None, dtype: Any = None, name: str | None = None
    ) -> Tensor:
        """Keras's other name of ``add_variable`` (zeros unless ``initializer`` says)."""
        return self.add_variable(shape, "zeros" if initializer is None else initializer, dtype, name or "")

    @property
    def state(self) -> list[Tensor]:
        """Every tensor of the metric's state (a container's: its metrics')."""
        return self.variables

    def update_state(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define update_state")

    def result(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must define result")

    def reset_state(self) -> None:
        for variable, initial in zip(self.variables, self._initial, strict=True):
            set_value(variable, initial.copy())

    reset_states = reset_state  # Keras 2's name

    def __call__(self, *args: Any, **kwargs: Any) -> Tensor:
        self.update_state(*args, **kwargs)
        self._last_result = self.result()
        return self._last_result

    @property
    def last_result(self) -> Tensor | None:
        """What the last call returned (``add_metric`` knows its metric by it)."""
        return getattr(self, "_last_result", None)

    def accumulate(self, variable: Tensor, increment: Tensor) -> None:
        """``variable += increment`` in place, the state following the data's device."""
        if increment.device != variable.device:
            for v in self.variables:
                v.move_(increment.device)
        with no_grad():
            variable._assign(variable + increment.astype(variable.dtype))

    def get_config(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Metric:
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name}>"


def _weights(values: Tensor, sample_weight: Any) -> Tensor | None:
    if sample_weight is None:
        return None
    return ops.broadcast_to(masks.ranked_weight(sample_weight, values), values.shape)


class Mean(Metric):
    """The (weighted) mean of every value given."""

    def __init__(self, name: str = "mean", dtype: Any = None) -> None:
        super().__init__(name, dtype)
        self.total = self.add_variable(name="total")
        self.count = self.add_variable(name="count")

    def update_state(self, values: Any, sample_weight: Any = None) -> None:
        values = ops.as_tensor(values)
        values = values if values.dtype.is_float else values.astype(float32)
        weight = _weights(values, sample_weight)
        if weight is None:
            self.accumulate(self.total, ops.sum(values))
            self.accumulate(self.count, ops.full((), values.size, values.dtype, values.device))
        else:
            self.accumulate(self.total, ops.sum(values * weight))
            self.accumulate(self.count, ops.sum(weight))

    def result(self) -> Tensor:
        return divide_no_nan(self.total, self.count)


class Sum(Metric):
    def __init__(self, name: str = "sum", dtype: Any = None) -> None:
        super().__init__(name, dtype)
        self.total = self.add_variable(name="total")

    def update_state(self, values: Any, sample_weight: Any = None) -> None:
        values = ops.as_tensor(values).astype(float32)
        weight = _weights(values, sample_weight)
        self.accumulate(self.total, ops.sum(values if weight is None else values * weight))

    def result(self) -> Tensor:
        return self.total


class MeanMetricWrapper(Mean):
    """The mean of ``fn(y_true, y_pred, **kwargs)``, one value per example."""

    def __init__(self, fn: Callable[..., Tensor], name: str | None = None, dtype: Any = None, **kwargs: Any) -> None:
        super().__init__(name or getattr(fn, "__name__", "mean"), dtype)
        self.fn, self.kwargs = fn, kwargs

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        """Add the batch's values; where ``y_pred`` carries a mask and weights are given,
        the masked steps weigh nothing (Keras 3's rule: without weights, every step counts)."""
        mask = getattr(y_pred, "_keras_mask", None)
        y_pred = ops.as_tensor(y_pred)
        y_true = ops.as_tensor(y_true, device=y_pred.device)
        values = self.fn(y_true, y_pred, **self.kwargs)
        if mask is not None and sample_weight is not None:
            sample_weight = masks.weigh(sample_weight, mask, values, rescale=False)
        super().update_state(values, sample_weight)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), **self.kwargs}


# Accuracies, one value per example -------------------------------------------------------


def _squeezed_labels(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """Labels of ``y_pred``'s shape without the classes (a trailing 1 dropped)."""
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1:
        y_true = y_true.reshape(y_true.shape[:-1])
    return y_true


def accuracy(y_true: Tensor, y_pred: Tensor) -> Tensor:
    return (ops.as_tensor(y_true).astype(y_pred.dtype) == y_pred).astype(float32)


def binary_accuracy(y_true: Tensor, y_pred: Tensor, threshold: float = 0.5) -> Tensor:
    y_true = ops.as_tensor(y_true, device=y_pred.device)
    if y_true.ndim == y_pred.ndim - 1 and y_pred.shape[-1] == 1:
        y_pred = y_pred.reshape(y_pred.shape[:-1])
    elif y_pred.ndim == y_true.ndim - 1 and y_true.shape[-1] == 1:
        y_true = y_true.reshape(y_true.shape[:-1])
    # Keras compares the thresholded prediction with the target itself: a soft target matches nothing.
    matches = ((y_pred > threshold).astype(y_pred.dtype) == y_true.astype(y_pred.dtype)).astype(float32)
    return ops.mean(matches, axis=-1) if matches.ndim > 1 else matches


def categorical_accuracy(y_true: Tensor, y_pred: Tensor) -> Tensor:
    return (ops.argmax(y_true, axis=-1) == ops.argmax(y_pred, axis=-1)).astype(float32)


def sparse_categorical_accuracy(y_true: Tensor, y_pred: Tensor) -> Tensor:
    labels = _squeezed_labels(ops.as_tensor(y_true, device=y_pred.device), y_pred)
    return (ops.argmax(y_pred, axis=-1) == labels.astype(int32)).astype(float32)


def sparse_top_k_categorical_accuracy(y_true: Tensor, y_pred: Tensor, k: int = 5) -> Tensor:
    """1 where the label's score is among the ``k`` highest (ties with the k-th count as in,
    as TensorFlow's ``in_top_k``)."""
    labels = _squeezed_labels(ops.as_tensor(y_true, device=y_pred.device), y_pred).astype(int32)
    score = ops.take_along_axis(y_pred, ops.expand_dims(labels, -1), axis=-1)
    return (ops.sum((y_pred > score).astype(int32), axis=-1) < k).astype(float32)


def top_k_categorical_accuracy(y_true: Tensor, y_pred: Tensor, k: int = 5) -> Tensor:
    return sparse_top_k_categorical_accuracy(ops.argmax(y_true, axis=-1), y_pred, k)


def auto_accuracy(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """``"accuracy"`` as Keras resolves it: binary for one output per example, sparse
    categorical for integer labels, categorical for one-hot targets."""
    if y_pred.ndim < 2 or y_pred.shape[-1] == 1:
        return binary_accuracy(y_true, y_pred)
    if y_true.ndim < y_pred.ndim or y_true.shape[-1] == 1:
        return sparse_categorical_accuracy(y_true, y_pred)
    return categorical_accuracy(y_true, y_pred)


def _wrapper(name: str, fn: Callable[..., Tensor], default: str, **defaults: Any) -> type[MeanMetricWrapper]:
    def __init__(self, name: str = default, dtype: Any = None, **kwargs: Any) -> None:  # noqa: N807
        unknown = set(kwargs) - set(defaults)
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected argument(s) {sorted(unknown)}")
        MeanMetricWrapper.__init__(self, fn, name, dtype, **{**defaults, **kwargs})

    return type(name, (MeanMetricWrapper,), {"__init__": __init__, "__module__": __name__})


Accuracy = _wrapper("Accuracy", accuracy, "accuracy")
BinaryAccuracy = _wrapper("BinaryAccuracy", binary_accuracy, "binary_accuracy", threshold=0.5)
CategoricalAccuracy = _wrapper("CategoricalAccuracy", categorical_accuracy, "categorical_accuracy")
SparseCategoricalAccuracy = _wrapper(
    "SparseCategoricalAccuracy", sparse_categorical_accuracy, "sparse_categorical_accuracy"
)


class TopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the one-hot target's class is among the ``k`` highest predictions."""

    def __init__(self, k: int = 5, name: str = "top_k_categorical_accuracy", dtype: Any = None) -> None:
        super().__init__(top_k_categorical_accuracy, name, dtype, k=int(k))


class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the integer label is among the ``k`` highest predictions."""

    def __init__(self, k: int = 5, name: str = "sparse_top_k_categorical_accuracy", dtype: Any = None) -> None:
        super().__init__(sparse_top_k_categorical_accuracy, name, dtype, k=int(k))


MeanSquaredError = _wrapper("MeanSquaredError", keras_losses.mean_squared_error, "mean_squared_error")
MeanAbsoluteError = _wrapper("MeanAbsoluteError", keras_losses.mean_absolute_error, "mean_absolute_error")
MeanAbsolutePercentageError = _wrapper(
    "MeanAbsolutePercentageError", keras_losses.mean_absolute_percentage_error, "mean_absolute_percentage_error"
)
BinaryCrossentropy = _wrapper(
    "BinaryCrossentropy",
    keras_losses.binary_crossentropy,
    "binary_crossentropy",
    from_logits=False,
    label_smoothing=0.0,
)
CategoricalCrossentropy = _wrapper(
    "CategoricalCrossentropy",
    keras_losses.categorical_crossentropy,
    "categorical_crossentropy",
    from_logits=False,
    label_smoothing=0.0,
)
SparseCategoricalCrossentropy = _wrapper(
    "SparseCategoricalCrossentropy",
    keras_losses.sparse_categorical_crossentropy,
    "sparse_categorical_crossentropy",
    from_logits=False,
)


def cosine_similarity(y_true: Any, y_pred: Any, axis: int = -1) -> Tensor:
    """The cosine of the angle between target and prediction along ``axis``: Keras's metric,
    the loss of that name negated (a loss falls as the vectors align, the metric rises)."""
    return -keras_losses.cosine_similarity(y_true, y_pred, axis)


CosineSimilarity = _wrapper("CosineSimilarity", cosine_similarity, "cosine_similarity", axis=-1)


class RootMeanSquaredError(Mean):
    def __init__(self, name: str = "root_mean_squared_error", dtype: Any = None) -> None:
        super().__init__(name, dtype)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        y_pred = ops.as_tensor(y_pred)
        super().update_state(keras_losses.mean_squared_error(y_true, y_pred), sample_weight)

    def result(self) -> Tensor:
        return ops.sqrt(super().result())


# Confusion-matrix metrics ----------------------------------------------------------------


class _Confusion(Metric):
    """Counts of true/false positives/negatives at each threshold (predictions above it
    are positive), over every element of the flattened labels and predictions."""

    def __init__(self, thresholds: Sequence[float], name: str | None, dtype: Any, class_id: int | None = None) -> None:
        super().__init__(name, dtype)
        self.thresholds = [float(t) for t in thresholds]
        self.class_id = class_id
        shape = (len(self.thresholds),)
        self.true_positives = self.add_variable(shape, name="true_positives")
        self.false_positives = self.add_variable(shape, name="false_positives")
        self.true_negatives = self.add_variable(shape, name="true_negatives")
        self.false_negatives = self.add_variable(shape, name="false_negatives")

    def _predictions(self, y_pred: Tensor) -> Tensor:
        return y_pred

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        y_pred = ops.as_tensor(y_pred)
        y_true = ops.as_tensor(y_true, device=y_pred.device)
        if self.class_id is not None:
            y_true, y_pred = y_true[..., self.class_id], y_pred[..., self.class_id]
        predictions = self._predictions(y_pred).astype(float32).reshape(-1, 1)
        labels = (y_true.astype(float32).reshape(-1, 1) > 0.5).astype(float32)
        weight = _weights(y_pred.astype(float32), sample_weight)
        weight = ops.ones_like(labels) if weight is None else weight.reshape(-1, 1)
        thresholds = ops.tensor(np.array(self.thresholds, np.float32), device=y_pred.device)
        above = (predictions > thresholds).astype(float32)
        positives, negatives = labels * weight, (1.0 - labels) * weight
        true_positives = ops.sum(above * positives, axis=0)
        false_positives = ops.sum(above * negatives, axis=0)
        self.accumulate(self.true_positives, true_positives)
        self.accumulate(self.false_positives, false_positives)
        self.accumulate(self.false_negatives, ops.sum(positives) - true_positives)
        self.accumulate(self.true_negatives, ops.sum(negatives) - false_positives)


def _threshold_list(thresholds: float | Sequence[float] | None) -> tuple[list[float], bool]:
    if thresholds is None:
        return [0.5], False
    if isinstance(thresholds, (int, float)):
        return [float(thresholds)], False
    return [float(t) for t in thresholds], True


class _PrecisionRecall(_Confusion):
    def __init__(
        self,
        thresholds: float | Sequence[float] | None = None,
        top_k: int | None = None,
        class_id: int | None = None,
        name: str | None = None,
        dtype: Any = None,
    ) -> None:
        if top_k is not None:
            raise NotImplementedError(f"{type(self).__name__}: top_k is not supported")
        values, self._listed = _threshold_list(thresholds)
        super().__init__(values, name, dtype, class_id)

    def _result(self, value: Tensor) -> Tensor:
        return value if self._listed else value.reshape(())

    def get_config(self) -> dict[str, Any]:
        thresholds = self.thresholds if self._listed else self.thresholds[0]
        return {**super().get_config(), "thresholds": thresholds, "class_id": self.class_id}


class Precision(_PrecisionRecall):
    def result(self) -> Tensor:
        return self._result(divide_no_nan(self.true_positives, self.true_positives + self.false_positives))


class Recall(_PrecisionRecall):
    def result(self) -> Tensor:
        return self._result(divide_no_nan(self.true_positives, self.true_positives + self.false_negatives))


class _Count(_Confusion):
    """One of the four counts at each threshold (0.5 by default), as a metric."""

    count = "true_positives"

    def __init__(self, thresholds: float | Sequence[float] | None = None, name: str | None = None, dtype: Any = None):
        values, self._listed = _threshold_list(thresholds)
        super().__init__(values, name, dtype)

    def result(self) -> Tensor:
        value = getattr(self, self.count)
        return value if self._listed else value.reshape(())

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "thresholds": self.thresholds if self._listed else self.thresholds[0]}


class TruePositives(_Count):
    count = "true_positives"


class FalsePositives(_Count):
    count = "false_positives"


class TrueNegatives(_Count):
    count = "true_negatives"


class FalseNegatives(_Count):
    count = "false_negatives"


class AUC(_Confusion):
    """The area under the ROC or precision-recall curve, from counts at
    ``num_thresholds`` thresholds spread evenly over [0, 1], as Keras computes it."""

    def __init__(
        self,
        num_thresholds: int = 200,
        curve: str = "ROC",
        summation_method: str = "interpolation",
        name: str | None = None,
        dtype: Any = None,
        thresholds: Sequence[float] | None = None,
        multi_label: bool = False,
        num_labels: int | None = None,
        label_weights: Any = None,
        from_logits: bool = False,
    ) -> None:
        if multi_label or label_weights is not None or num_labels is not None:
            raise NotImplementedError("AUC: multi_label, num_labels and label_weights are not supported")
        if curve.upper() not in ("ROC", "PR") or summation_method not in ("interpolation", "minoring", "majoring"):
            raise ValueError(
                f"AUC: curve must be 'ROC' or 'PR' and summation_method one of interpolation, "
                f"minoring, majoring; got {curve!r}, {summation_method!r}"
            )
        if thresholds is None:
            if num_thresholds < 2:
                raise ValueError(f"AUC: num_thresholds must be at least 2, got {num_thresholds}")
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        else:
            inner = sorted(float(t) for t in thresholds)
        super().__init__([0.0 - _EPSILON, *inner, 1.0 + _EPSILON], name or "auc", dtype)
        self.num_thresholds = len(self.thresholds)
        self.curve, self.summation_method, self.from_logits = curve.upper(), summation_method, from_logits

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "num_thresholds": self.num_thresholds,
            "curve": self.curve,
            "summation_method": self.summation_method,
            "from_logits": self.from_logits,
        }

    def _predictions(self, y_pred: Tensor) -> Tensor:
        return ops.sigmoid(y_pred) if self.from_logits else y_pred

    def result(self) -> Tensor:
        tp, fp, tn, fn = self.true_positives, self.false_positives, self.true_negatives, self.false_negatives
        if self.curve == "PR" and self.summation_method == "interpolation":
            return _interpolated_pr_auc(tp, fp, fn)
        if self.curve == "ROC":
            x, y = divide_no_nan(fp, fp + tn), divide_no_nan(tp, tp + fn)
        else:
            x, y = divide_no_nan(tp, tp + fn), divide_no_nan(tp, tp + fp)
        if self.summation_method == "interpolation":
            heights = (y[:-1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = ops.minimum(y[:-1], y[1:])
        else:
            heights = ops.maximum(y[:-1], y[1:])
        return ops.sum((x[:-1] - x[1:]) * heights)


def _interpolated_pr_auc(tp: Tensor, fp: Tensor, fn: Tensor) -> Tensor:
    """Davis and Goadrich's interpolation of the precision-recall curve (Keras's)."""
    dtp = tp[:-1] - tp[1:]
    p = tp + fp
    dp = p[:-1] - p[1:]
    slope = divide_no_nan(dtp, ops.maximum(dp, 0.0))
    intercept = tp[1:] - slope * p[1:]
    both = ops.logical_and(p[:-1] > 0, p[1:] > 0)
    ratio = ops.where(both, divide_no_nan(p[:-1], ops.maximum(p[1:], 0.0)), 1.0)
    increments = divide_no_nan(slope * (dtp + intercept * ops.log(ratio)), ops.maximum(tp[1:] + fn[1:], 0.0))
    return ops.sum(increments)


CLASSES: dict[str, type[Metric]] = {
    cls.__name__: cls
    for cls in (
        Mean,
        Sum,
        Accuracy,
        BinaryAccuracy,
        CategoricalAccuracy,
        SparseCategoricalAccuracy,
        TopKCategoricalAccuracy,
        SparseTopKCategoricalAccuracy,
        MeanSquaredError,
        MeanAbsoluteError,
        MeanAbsolutePercentageError,
        RootMeanSquaredError,
        CosineSimilarity,
        BinaryCrossentropy,
        CategoricalCrossentropy,
        SparseCategoricalCrossentropy,
        Precision,
        Recall,
        AUC,
        TruePositives,
        FalsePositives,
        TrueNegatives,
        FalseNegatives,
    )
}
_FUNCTIONS: dict[str, Callable[..., Tensor]] = {
    "accuracy": auto_accuracy,
    "acc": auto_accuracy,
    "binary_accuracy": binary_accuracy,
    "categorical_accuracy": categorical_accuracy,
    "sparse_categorical_accuracy": sparse_categorical_accuracy,
    "top_k_categorical_accuracy": top_k_categorical_accuracy,
    "sparse_top_k_categorical_accuracy": sparse_top_k_categorical_accuracy,
    **keras_losses.FUNCTIONS,
    "cosine_similarity": cosine_similarity,  # as a metric it rises: the loss's negation
}
_NAMED_CLASSES = {"auc": AUC, "precision": Precision, "recall": Recall, "rmse": RootMeanSquaredError}


def get(metric: Any) -> Metric:
    """A metric from a Keras name (``"accuracy"``, ``"mae"``, ``"AUC"``), a ``Metric``, or a
    function ``f(y_true, y_pred)`` averaged over the examples; a name is kept as the log's key."""
    if isinstance(metric, Metric):
        return metric
    if isinstance(metric, str):
        if metric in CLASSES:
            return CLASSES[metric]()
        if metric in _NAMED_CLASSES:
            return _NAMED_CLASSES[metric](name=metric)
        if metric not in _FUNCTIONS:
            known = sorted({*_FUNCTIONS, *_NAMED_CLASSES, *CLASSES})
            raise ValueError(f"unknown metric {metric!r}: expected one of {known}, a Metric or a function")
        return MeanMetricWrapper(_FUNCTIONS[metric], name=metric)
    if callable(metric):
        return MeanMetricWrapper(metric)
    raise TypeError(f"a metric must be a name, a Metric or a function, got {type(metric).__name__}")
