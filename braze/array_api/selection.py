"""Selecting elements by integer-array keys with the standard's conventions (integer dtypes
only, negative positions counted from the end) over braze's gather."""

from __future__ import annotations

import numpy as np

import braze.ops as ops
from braze.ir.dtypes import int64
from braze.ops.core import broadcast_shapes
from braze.tensor import Tensor, user_error


def in_range(op: str, indices: Tensor, size: int) -> Tensor:
    """Integer ``indices`` into an axis of ``size``, negative ones counted from its end."""
    if indices.dtype.kind != "i":
        raise user_error(TypeError, f"{op}: indices must be integers, got {indices.dtype.name}")
    return ops.where(indices < 0, indices + size, indices)


def by_arrays(x: Tensor, items: list[Tensor | int]) -> Tensor:
    """``x[items]`` for a key of integers and integer arrays over ``x``'s first axes: the
    arrays broadcast together, and each of their positions selects one element of those
    axes (the axes after them are kept whole)."""
    count = len(items)
    arrays = [i for i in items if isinstance(i, Tensor)]
    shape = broadcast_shapes("indexing", *(a.shape for a in arrays))
    flat: Tensor | int = 0
    for axis, item in enumerate(items):
        size = x.shape[axis]
        if isinstance(item, Tensor):
            item = ops.astype(in_range("indexing", item, size), int64)
        elif not -size <= item < size:
            raise user_error(IndexError, f"indexing: index {item} is out of bounds for axis {axis} of size {size}")
        else:
            item %= size
        flat = flat * size + item
    lines = ops.reshape(x, (int(np.prod(x.shape[:count], dtype=np.int64)), *x.shape[count:]))
    return ops.take(lines, ops.broadcast_to(flat, shape), 0)
