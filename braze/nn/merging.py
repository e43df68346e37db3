"""Layers that merge a list of inputs, as Keras's: ``Add``, ``Subtract``, ``Multiply``,
``Average``, ``Maximum``, ``Minimum``, ``Concatenate``, and their lower-case functional
spellings (``layers.add([a, b])``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import reduce
from typing import Any

from braze import ops
from braze.ir.errors import ShapeError
from braze.nn import masks
from braze.nn.layer import Layer
from braze.tensor import Tensor, user_error

__all__ = [
    "Add",
    "Average",
    "Concatenate",
    "Maximum",
    "Minimum",
    "Multiply",
    "Subtract",
    "add",
    "average",
    "concatenate",
    "maximum",
    "minimum",
    "multiply",
    "subtract",
]


class _Merge(Layer):
    combine: Callable[[Tensor, Tensor], Tensor] = staticmethod(ops.add)
    needs_two = False
    supports_masking = True

    def compute_mask(self, inputs: Any, mask: Any = None) -> Tensor | None:
        """The steps every masked input keeps (Keras's rule: an input without a mask
        keeps every step)."""
        if mask is None:
            return None
        return reduce(masks.both, mask, None)

    def call(self, inputs: Sequence[Tensor]) -> Tensor:
        inputs = list(inputs)
        if len(inputs) < 2 or (self.needs_two and len(inputs) != 2):
            expected = "exactly 2" if self.needs_two else "at least 2"
            raise ValueError(f"{self.name}: expects a list of {expected} inputs, got {len(inputs)}")
        return self.merge(_one_dtype(inputs))

    def merge(self, inputs: list[Tensor]) -> Tensor:
        return reduce(self.combine, inputs)


def _one_dtype(inputs: list[Any]) -> list[Tensor]:
    """The inputs in one dtype, as Keras's merge layers promote them: the widest float among
    them, else the widest integer (an int64 one-hot beside float32 features is float32)."""
    tensors = [ops.as_tensor(x) for x in inputs]
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) == 1:
        return tensors
    target = max(dtypes, key=lambda d: (d.is_float, d.kind != "b", d.itemsize))
    return [t if t.dtype == target else t.astype(target) for t in tensors]


class Add(_Merge):
    """The sum of a list of inputs of one shape (or shapes that broadcast)."""


class Subtract(_Merge):
    """The first of two inputs minus the second."""

    combine = staticmethod(ops.subtract)
    needs_two = True


class Multiply(_Merge):
    """The elementwise product of a list of inputs."""

    combine = staticmethod(ops.multiply)


class Maximum(_Merge):
    """The elementwise maximum of a list of inputs."""

    combine = staticmethod(ops.maximum)


class Minimum(_Merge):
    """The elementwise minimum of a list of inputs."""

    combine = staticmethod(ops.minimum)


class Average(_Merge):
    """The elementwise mean of a list of inputs."""

    def merge(self, inputs: list[Tensor]) -> Tensor:
        return reduce(ops.add, inputs) / len(inputs)


class Concatenate(_Merge):
    """Join the inputs along ``axis`` (the last by default); the other axes must agree."""

    def __init__(self, axis: int = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = axis

    def merge(self, inputs: list[Tensor]) -> Tensor:
        ndim = inputs[0].ndim
        axis = self.axis % ndim
        first = [s for d, s in enumerate(inputs[0].shape) if d != axis]
        for t in inputs[1:]:
            if t.ndim != ndim or [s for d, s in enumerate(t.shape) if d != axis] != first:
                shapes = [x.shape for x in inputs]
                raise user_error(ShapeError, f"{self.name}: inputs {shapes} differ outside the concatenation axis")
        return ops.concatenate(inputs, axis=axis)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Tensor | None:
        """Keras's rule: each input's mask spread over its features (all kept for an input
        without one), joined along ``axis``; a step is kept where any of its features is."""
        if mask is None or all(m is None for m in mask):
            return None
        spread = [
            ops.ones(x.shape, dtype="bool", device=x.device)
            if m is None
            else ops.broadcast_to(ops.expand_dims(m, -1), x.shape)
            if m.ndim < x.ndim
            else m
            for x, m in zip(inputs, mask, strict=True)
        ]
        return ops.max(ops.concatenate(spread, axis=self.axis).astype("int32"), axis=-1) > 0


def _functional(cls: type[_Merge]) -> Callable[..., Any]:
    def merge(inputs: Sequence[Any], **kwargs: Any) -> Any:
        return cls(**kwargs)(list(inputs))

    merge.__name__ = merge.__qualname__ = cls.__name__.lower()
    merge.__doc__ = f"``{cls.__name__}(**kwargs)(inputs)``: the layer made and called at once."
    return merge


add = _functional(Add)
subtract = _functional(Subtract)
multiply = _functional(Multiply)
average = _functional(Average)
maximum = _functional(Maximum)
minimum = _functional(Minimum)
concatenate = _functional(Concatenate)
