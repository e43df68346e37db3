"""Sorting and cumulative ops along one axis: sort, argsort, cumsum and cumprod.

Sorts are stable in both directions and put NaN last (first, descending), as NumPy's
stable sort does; argsort gives int32 positions (int64 for lines past int32's range).
"""

from __future__ import annotations

from typing import Any

from braze.ir.dtypes import int32, int64
from braze.ir.errors import DTypeError
from braze.ir.prims import scans
from braze.ops.core import as_tensor, astype, normalize_axis
from braze.ops.shape import reshape
from braze.tensor import Tensor, user_error


def _line(op: str, x: Any, axis: int | None) -> tuple[Tensor, int]:
    """``x`` (flattened when ``axis`` is None, as NumPy does) and its axis."""
    x = as_tensor(x)
    if axis is None:
        return reshape(x, (x.size,)), 0
    if x.ndim == 0:
        return reshape(x, (1,)), 0
    return x, normalize_axis(op, axis, x.ndim)


def sort(x: Any, axis: int = -1, descending: bool = False) -> Tensor:
    """``x`` sorted along ``axis`` (stable; NaN last ascending, first descending)."""
    shape = as_tensor(x).shape
    line, dimension = _line("sort", x, axis)
    out = scans.sort.bind(line, dimension=dimension, descending=bool(descending))
    return reshape(out, shape) if axis is not None else out


def argsort(x: Any, axis: int = -1, descending: bool = False) -> Tensor:
    """The positions that sort ``x`` along ``axis`` (stable: ties keep their order)."""
    shape = as_tensor(x).shape
    line, dimension = _line("argsort", x, axis)
    dtype = int32 if line.shape[dimension] <= 2**31 - 1 else int64
    out = scans.argsort.bind(line, dimension=dimension, descending=bool(descending), dtype=dtype)
    return reshape(out, shape) if axis is not None else out


def _cumulative(op: str, primitive, x: Any, axis: int | None) -> Tensor:
    line, dimension = _line(op, x, axis)
    if line.dtype.kind == "b":
        line = astype(line, int32)
    if not line.dtype.is_float and line.dtype.kind != "i":
        raise user_error(DTypeError, f"{op}: expected a numeric tensor, got {line.dtype.name}")
    if line.shape[dimension] == 0:
        return line
    return primitive.bind(line, dimension=dimension)


def cumsum(x: Any, axis: int | None = None) -> Tensor:
    """Running sums along ``axis`` (of the flattened tensor when None); bools count as int32."""
    return _cumulative("cumsum", scans.cumsum, x, axis)


def cumprod(x: Any, axis: int | None = None) -> Tensor:
    """Running products along ``axis`` (of the flattened tensor when None)."""
    return _cumulative("cumprod", scans.cumprod, x, axis)
