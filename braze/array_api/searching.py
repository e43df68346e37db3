"""The standard's searching functions: argmax, argmin, count_nonzero, nonzero,
searchsorted and where. Positions are int32, the default index dtype."""

from __future__ import annotations

from typing import Any

import numpy as np

import braze.ops as ops
from braze.array_api.array_object import Array, wrap
from braze.array_api.dtypes import promoted
from braze.array_api.elementwise import as_array
from braze.ir.dtypes import bool_, int32, int64
from braze.ir.errors import DTypeError
from braze.ops import values
from braze.tensor import Tensor


def _arg(native: Any, x: Any, axis: int | None, keepdims: bool, op: str) -> Array:
    x = as_array(x, op)
    out = native(x, axis, keepdims)
    if axis is None and keepdims:
        out = ops.reshape(out, (1,) * x.ndim)
    return wrap(out)


def argmax(x: Any, /, *, axis: int | None = None, keepdims: bool = False) -> Array:
    """The position of the first maximum along ``axis`` (of the flattened array when None)."""
    return _arg(ops.argmax, x, axis, keepdims, "argmax")


def argmin(x: Any, /, *, axis: int | None = None, keepdims: bool = False) -> Array:
    """The position of the first minimum along ``axis`` (of the flattened array when None)."""
    return _arg(ops.argmin, x, axis, keepdims, "argmin")


def count_nonzero(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Array:
    """How many elements along ``axis`` are not zero."""
    x = as_array(x, "count_nonzero")
    found = x if x.dtype is bool_ else x != 0
    return wrap(ops.sum(found, axis, keepdims))


def nonzero(x: Any, /) -> tuple[Array, ...]:
    """The positions of the nonzero elements, one array per axis, in row-major order. Their
    length depends on the values: see :mod:`braze.ops.values`."""
    x = as_array(x, "nonzero")
    if x.ndim == 0:
        raise ValueError("nonzero: a 0-d array has no positions; use x[None]")
    found = np.nonzero(values.read("nonzero", x))
    dtype = np.int32 if x.size < 2**31 else np.int64
    return tuple(wrap(values.constant_like(p.astype(dtype), x)) for p in found)


def searchsorted(x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None) -> Array:
    """Where each of ``x2`` would go in the sorted 1-D ``x1`` (``sorter``: the positions
    that sort it): the count of elements that sort before it (``left``) or not after it
    (``right``), NaN after every number. A count needs no sorted order, so ``sorter``
    changes nothing but is checked."""
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    line, queries = promoted(as_array(x1, "searchsorted"), as_array(x2, "searchsorted"))
    if line.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-D, got shape {line.shape}")
    if sorter is not None and (not isinstance(sorter, Tensor) or sorter.shape != line.shape):
        raise ValueError(f"searchsorted: sorter must be an integer array of shape {line.shape}")
    if line.shape[0] == 0:
        return wrap(ops.zeros_like(queries, int32))
    elements = ops.broadcast_to(line, (*queries.shape, line.shape[0]))
    query = ops.expand_dims(queries, -1)
    found = _goes_before(elements, query) if side == "left" else ops.logical_not(_goes_before(query, elements))
    count = ops.sum(found, axis=-1)
    return wrap(count if line.shape[0] < 2**31 else ops.astype(count, int64))


def _goes_before(u: Tensor, v: Tensor) -> Tensor:
    """Whether ``u`` sorts strictly before ``v``, NaN last (as ``braze.sort``)."""
    less = u < v
    if not u.dtype.is_float:
        return less
    return ops.logical_or(less, ops.logical_and(v != v, u == u))


def where(condition: Any, x1: Any, x2: Any, /) -> Array:
    """``x1`` where ``condition`` holds, else ``x2`` (promoted and broadcast)."""
    condition = as_array(condition, "where")
    if condition.dtype is not bool_:
        raise DTypeError(f"where: the condition must be a bool array, got {condition.dtype.name}")
    a, b = promoted(x1, x2)
    return wrap(ops.where(condition, a, b))
