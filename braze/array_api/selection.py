"""Selecting elements by integer positions (``take``, ``take_along_axis``) from the
primitives braze has: each position is compared with every index of its axis, and the
one match is kept by a maximum over that axis (the others stand at the dtype's lowest
value, so NaN, -0.0 and the extremes come through unchanged).

The work is the axis' length times the number of indices, which suits the standard's uses
(masks, reorders, small lookups); a gather primitive would do it in one pass.
"""

from __future__ import annotations

import numpy as np

import braze.ops as ops
from braze.ir.dtypes import DType, int64
from braze.ir.prims import sources
from braze.ops.core import broadcast_shapes, normalize_axis
from braze.tensor import Tensor, user_error


def _lowest(dtype: DType) -> float | int | bool:
    if dtype.kind == "b":
        return False
    if dtype.kind == "i":
        return int(np.iinfo(dtype.numpy).min)
    return -np.inf


def in_range(op: str, indices: Tensor, size: int) -> Tensor:
    """Integer ``indices`` into an axis of ``size``, negative ones counted from its end."""
    if indices.dtype.kind != "i":
        raise user_error(TypeError, f"{op}: indices must be integers, got {indices.dtype.name}")
    return ops.where(indices < 0, indices + size, indices)


def _candidates(size: int, at: int, rank: int, indices: Tensor) -> Tensor:
    """The positions 0 .. size-1 of an axis along axis ``at`` of ``rank`` axes (1 long
    but that one), in the dtype and on the device of ``indices``."""
    shape = (1,) * at + (size,) + (1,) * (rank - at - 1)
    return sources.iota.bind(shape=shape, dimension=at, dtype=indices.dtype, like=indices.device)


def _keep_matches(x: Tensor, hits: Tensor, axis: int) -> Tensor:
    """The maximum over ``axis`` of ``x`` where ``hits``, the dtype's lowest elsewhere."""
    shape = broadcast_shapes("take", x.shape, hits.shape)
    picked = ops.where(hits, x, ops.full((), _lowest(x.dtype), x.dtype, device=x.device))
    if 0 in shape:
        return ops.zeros(shape[:axis] + shape[axis + 1 :], x.dtype, device=x.device)
    return ops.max(picked, axis=axis)


def take(x: Tensor, indices: Tensor, axis: int) -> Tensor:
    """``x``'s elements at ``indices`` along ``axis``: the result's shape is
    ``x.shape[:axis] + indices.shape + x.shape[axis + 1:]``."""
    axis = normalize_axis("take", axis, x.ndim)
    size, rank = x.shape[axis], indices.ndim
    positions = ops.reshape(in_range("take", indices, size), (1,) * axis + indices.shape + (1,) * (x.ndim - axis))
    hits = positions == _candidates(size, axis + rank, x.ndim + rank, indices)
    spread = ops.reshape(x, x.shape[:axis] + (1,) * rank + x.shape[axis:])
    return _keep_matches(spread, hits, axis + rank)


def take_along_axis(x: Tensor, indices: Tensor, axis: int) -> Tensor:
    """``out[..., j, ...] = x[..., indices[..., j, ...], ...]`` along ``axis``; the other
    axes broadcast."""
    if indices.ndim != x.ndim:
        raise user_error(ValueError, f"take_along_axis: indices of rank {indices.ndim} need the array's rank {x.ndim}")
    axis = normalize_axis("take_along_axis", axis, x.ndim)
    size = x.shape[axis]
    positions = ops.expand_dims(in_range("take_along_axis", indices, size), axis + 1)
    hits = positions == _candidates(size, axis + 1, x.ndim + 1, indices)
    return _keep_matches(ops.expand_dims(x, axis), hits, axis + 1)


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
    return take(lines, ops.broadcast_to(flat, shape), 0)
