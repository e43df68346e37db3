"""The standard's statistical and utility functions: reductions, cumulative sums and
products, ``all``, ``any`` and ``diff``.

Sums and products of int32 and bool arrays give int32 (braze's default integer), of int64
int64, of floats their own dtype, unless ``dtype`` says otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import braze.ops as ops
from braze.array_api.array_object import Array, wrap
from braze.array_api.dtypes import as_array_dtype, promoted
from braze.array_api.elementwise import as_array
from braze.ir.dtypes import DEFAULT_INT, bool_
from braze.ir.errors import DTypeError
from braze.ops.core import normalize_axis
from braze.tensor import Tensor


def _accumulated(x: Tensor, dtype: Any) -> Tensor:
    """``x`` in the dtype a sum or product of it accumulates in."""
    if dtype is not None:
        return ops.astype(x, as_array_dtype(dtype))
    return ops.astype(x, DEFAULT_INT) if x.dtype is bool_ else x


def sum(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Array:  # noqa: A001
    return wrap(ops.sum(_accumulated(as_array(x, "sum"), dtype), axis, keepdims))


def prod(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Array:
    return wrap(ops.prod(_accumulated(as_array(x, "prod"), dtype), axis, keepdims))


def max(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Array:  # noqa: A001
    return wrap(ops.max(as_array(x, "max"), axis, keepdims))


def min(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Array:  # noqa: A001
    return wrap(ops.min(as_array(x, "min"), axis, keepdims))


def _float(op: str, x: Any) -> Tensor:
    x = as_array(x, op)
    if not x.dtype.is_float:
        raise DTypeError(f"{op}: expected a floating array, got {x.dtype.name}")
    return x


def mean(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Array:
    return wrap(ops.mean(_float("mean", x), axis, keepdims))


def var(x: Any, /, *, axis: Any = None, correction: int | float = 0.0, keepdims: bool = False) -> Array:
    """The variance, dividing by the count less ``correction`` (1 for the sample's)."""
    return wrap(ops.var(_float("var", x), axis, keepdims, ddof=correction))


def std(x: Any, /, *, axis: Any = None, correction: int | float = 0.0, keepdims: bool = False) -> Array:
    """The standard deviation, dividing by the count less ``correction``."""
    return wrap(ops.sqrt(ops.var(_float("std", x), axis, keepdims, ddof=correction)))


def _cumulative(
    op: str, native: Callable[[Tensor, int], Tensor], initial: int, x: Any, axis: Any, dtype: Any, include: bool
) -> Array:
    x = _accumulated(as_array(x, op), dtype)
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{op}: axis is required for an array of rank {x.ndim}")
        axis = 0
    if x.ndim == 0:
        raise ValueError(f"{op}: needs an array of rank 1 or more")
    d = normalize_axis(op, axis, x.ndim)
    out = native(x, d)
    if include:
        pairs = [(1, 0) if k == d else (0, 0) for k in range(x.ndim)]
        out = ops.pad(out, pairs, value=initial)
    return wrap(out)


def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> Array:
    """Running sums along ``axis`` (optional for 1-D), with a leading 0 when ``include_initial``."""
    return _cumulative("cumulative_sum", ops.cumsum, 0, x, axis, dtype, include_initial)


def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> Array:
    """Running products along ``axis`` (optional for 1-D), with a leading 1 when ``include_initial``."""
    return _cumulative("cumulative_prod", ops.cumprod, 1, x, axis, dtype, include_initial)


def _count(x: Tensor, truth: bool, axis: Any, keepdims: bool) -> Tensor:
    """How many elements along ``axis`` are nonzero (``truth``) or zero: a count is 0 over
    an empty axis, where a maximum has nothing to take."""
    nonzero = x if x.dtype is bool_ else x != 0
    return ops.sum(nonzero if truth else ops.logical_not(nonzero), axis, keepdims)


def all(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Array:  # noqa: A001
    """Whether every element along ``axis`` is nonzero (True over an empty axis)."""
    return wrap(_count(as_array(x, "all"), False, axis, keepdims) == 0)


def any(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Array:  # noqa: A001
    """Whether some element along ``axis`` is nonzero (False over an empty axis)."""
    return wrap(_count(as_array(x, "any"), True, axis, keepdims) > 0)


def diff(x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None, append: Any = None) -> Array:
    """The ``n``-th differences along ``axis``, after joining ``prepend`` and ``append``."""
    x = as_array(x, "diff")
    d = normalize_axis("diff", axis, x.ndim)
    parts = [p for p in (prepend, x, append) if p is not None]
    out = ops.concatenate(promoted(*parts), d) if len(parts) > 1 else x
    for _ in range(n):
        head = ops.getitem(out, (slice(None),) * d + (slice(1, None),))
        tail = ops.getitem(out, (slice(None),) * d + (slice(None, -1),))
        out = head != tail if out.dtype is bool_ else head - tail
    return wrap(out)
