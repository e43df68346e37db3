"""The standard's linear algebra functions of the main namespace: matmul,
matrix_transpose, tensordot and vecdot (the ``linalg`` extension is not provided)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import braze.ops as ops
from braze.array_api.array_object import Array, wrap
from braze.array_api.dtypes import promoted
from braze.array_api.elementwise import as_array
from braze.ir.prims import linalg
from braze.ops.core import broadcast_shapes, normalize_axis


def matmul(x1: Any, x2: Any, /) -> Array:
    a, b = promoted(as_array(x1, "matmul"), as_array(x2, "matmul"))
    return wrap(ops.matmul(a, b))


def matrix_transpose(x: Any, /) -> Array:
    """``x`` with its last two axes swapped."""
    x = as_array(x, "matrix_transpose")
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: needs an array of rank 2 or more, got shape {x.shape}")
    order = (*range(x.ndim - 2), x.ndim - 1, x.ndim - 2)
    return wrap(ops.transpose(x, order))


def tensordot(x1: Any, x2: Any, /, *, axes: int | tuple[Sequence[int], Sequence[int]] = 2) -> Array:
    """The sum of products over ``axes``: the last ``axes`` of ``x1`` with the first of
    ``x2``, or the pairs of axes given."""
    a, b = promoted(as_array(x1, "tensordot"), as_array(x2, "tensordot"))
    if isinstance(axes, int):
        if axes < 0:
            raise ValueError(f"tensordot: axes must be non-negative, got {axes}")
        left, right = tuple(range(a.ndim - axes, a.ndim)), tuple(range(axes))
    else:
        left = tuple(normalize_axis("tensordot", d, a.ndim) for d in axes[0])
        right = tuple(normalize_axis("tensordot", d, b.ndim) for d in axes[1])
    out = linalg.dot_general.bind(a, b, lhs_contracting=left, rhs_contracting=right, lhs_batch=(), rhs_batch=())
    return wrap(out)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Array:
    """The dot product of vectors along ``axis`` (after broadcasting the other axes)."""
    a, b = promoted(as_array(x1, "vecdot"), as_array(x2, "vecdot"))
    shape = broadcast_shapes("vecdot", a.shape, b.shape)
    d = normalize_axis("vecdot", axis, len(shape))
    if a.ndim and b.ndim and a.shape[d - len(shape)] != b.shape[d - len(shape)]:
        raise ValueError(f"vecdot: the vectors' lengths differ: {a.shape} and {b.shape} along axis {axis}")
    return wrap(ops.sum(ops.broadcast_to(a, shape) * ops.broadcast_to(b, shape), d))
