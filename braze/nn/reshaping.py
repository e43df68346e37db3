"""Keras's reshaping layers beyond ``Flatten`` and ``Reshape``: ``RepeatVector``,
``Permute``, ``ZeroPadding1D``/``2D``/``3D`` and ``Cropping1D``/``2D``/``3D`` (channels
last, as braze's images are)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from braze import ops
from braze.ir.errors import ShapeError
from braze.nn.conv import channels_last
from braze.nn.layer import Layer
from braze.tensor import Tensor, user_error

__all__ = [
    "Cropping1D",
    "Cropping2D",
    "Cropping3D",
    "Permute",
    "RepeatVector",
    "ZeroPadding1D",
    "ZeroPadding2D",
    "ZeroPadding3D",
]


class RepeatVector(Layer):
    """``(batch, features)`` to ``(batch, n, features)``: the vector repeated ``n`` times."""

    def __init__(self, n: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.n = int(n)

    def call(self, x: Tensor) -> Tensor:
        if x.ndim != 2:
            raise user_error(ShapeError, f"{self.name}: inputs are (batch, features), got {x.shape}")
        return ops.broadcast_to(ops.expand_dims(x, 1), (x.shape[0], self.n, x.shape[1]))


class Permute(Layer):
    """The axes after the batch reordered: ``dims`` counts them from 1, as Keras does
    (``Permute((2, 1))`` swaps the two axes of (batch, steps, features))."""

    supports_masking = True

    def __init__(self, dims: Sequence[int], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.dims = tuple(int(d) for d in dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError(f"Permute: dims must be a permutation of 1..{len(self.dims)}, got {self.dims}")

    def call(self, x: Tensor) -> Tensor:
        if x.ndim != len(self.dims) + 1:
            raise user_error(ShapeError, f"{self.name}: dims {self.dims} for inputs of rank {x.ndim}")
        return ops.transpose(x, (0, *self.dims))


def _pairs(value: Any, count: int, what: str) -> tuple[tuple[int, int], ...]:
    """Keras's spellings of amounts per side for ``count`` axes: one int for every side, an
    int per axis (both its sides), or a (before, after) pair per axis."""
    if isinstance(value, int):
        return ((value, value),) * count
    items = tuple(value)
    if count == 1 and len(items) == 2 and all(isinstance(v, int) for v in items):
        return ((int(items[0]), int(items[1])),)
    if len(items) != count:
        raise ValueError(f"{what}: expected an int, {count} ints or {count} (before, after) pairs, got {value!r}")
    found = tuple((v, v) if isinstance(v, int) else tuple(int(e) for e in v) for v in items)
    if any(len(pair) != 2 or min(pair) < 0 for pair in found):
        raise ValueError(f"{what}: amounts are (before, after) pairs of non-negative ints, got {value!r}")
    return found


class _Spatial(Layer):
    """What the padding and cropping layers share: amounts per side of the axes between
    the batch and the channels."""

    axes = 1

    def __init__(self, amounts: Any, data_format: str | None = None, **kwargs: Any) -> None:
        channels_last(type(self).__name__, data_format)
        super().__init__(**kwargs)
        self.amounts = _pairs(amounts, self.axes, type(self).__name__)

    def _check(self, x: Tensor) -> None:
        if x.ndim != self.axes + 2:
            shape = {1: "(batch, steps, channels)", 2: "(batch, height, width, channels)"}.get(
                self.axes, "(batch, depth, height, width, channels)"
            )
            raise user_error(ShapeError, f"{self.name}: inputs are {shape}, got {x.shape}")


class ZeroPadding1D(_Spatial):
    """Zeros added before and after the steps of (batch, steps, channels) sequences."""

    def __init__(self, padding: Any = 1, **kwargs: Any) -> None:
        super().__init__(padding, **kwargs)

    def call(self, x: Tensor) -> Tensor:
        self._check(x)
        return ops.pad(x, ((0, 0), *self.amounts, (0, 0)))


class ZeroPadding2D(ZeroPadding1D):
    """Zeros added around NHWC images: ``padding`` an int, (rows, columns) or ((top,
    bottom), (left, right))."""

    axes = 2


class Cropping1D(_Spatial):
    """Steps removed from the start and the end of (batch, steps, channels) sequences."""

    def __init__(self, cropping: Any = (1, 1), **kwargs: Any) -> None:
        super().__init__(cropping, **kwargs)

    def call(self, x: Tensor) -> Tensor:
        self._check(x)
        index = [slice(None)]
        for (before, after), size in zip(self.amounts, x.shape[1:-1], strict=True):
            if before + after >= size:
                raise user_error(ShapeError, f"{self.name}: cropping {before} + {after} of an axis of {size}")
            index.append(slice(before, size - after))
        return x[tuple(index)]


class Cropping2D(Cropping1D):
    """Rows and columns removed around NHWC images: ``cropping`` an int, (rows, columns)
    or ((top, bottom), (left, right))."""

    axes = 2

    def __init__(self, cropping: Any = ((0, 0), (0, 0)), **kwargs: Any) -> None:
        super().__init__(cropping, **kwargs)


class ZeroPadding3D(ZeroPadding1D):
    """Zeros added around NDHWC volumes: ``padding`` an int, (depth, rows, columns) or a
    (before, after) pair for each."""

    axes = 3


class Cropping3D(Cropping1D):
    """Voxels removed around NDHWC volumes: ``cropping`` an int, (depth, rows, columns) or a
    (before, after) pair for each."""

    axes = 3

    def __init__(self, cropping: Any = ((1, 1), (1, 1), (1, 1)), **kwargs: Any) -> None:
        super().__init__(cropping, **kwargs)
