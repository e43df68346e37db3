"""Indexing Arrays: ``x[key]`` and ``x[key] = value`` with the standard's keys, and the
functions ``take`` and ``take_along_axis``.

Integers, slices, ``...`` and ``None`` index as braze's tensors do; integer arrays, with
integers, over the leading axes select elements (:mod:`braze.array_api.selection`), and
beside slices, ``...`` or ``None`` follow NumPy's rules, as a plain Tensor's do. A
boolean mask as the sole index selects a number of elements known only from its values: it
is read (see :mod:`braze.ops.values`) and becomes the positions of its True
elements. Assigning through a basic key places the value with pads (the selected box, its
strides and reversals) and selects it in; through a mask, the mask selects the value in
without reading it when the value is a scalar.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

import braze.ops as ops
from braze.array_api import selection
from braze.array_api.array_object import Array, wrap
from braze.array_api.dtypes import scalar_dtype
from braze.array_api.elementwise import as_array
from braze.ir.dtypes import bool_
from braze.ir.prims import structural
from braze.ops import values
from braze.tensor import Tensor


def _is_mask(key: Any) -> bool:
    return isinstance(key, Tensor) and key.dtype is bool_


def _items(key: Any) -> list[Any]:
    """The key as a list of items: 0-d integer arrays become integers, other arrays stay."""
    items = list(key) if isinstance(key, tuple) else [key]
    if any(_is_mask(i) for i in items) and len(items) > 1:
        raise IndexError("indexing: a boolean array must be the only index (the standard combines it with nothing)")
    return [operator.index(i) if isinstance(i, Tensor) and i.ndim == 0 and i.dtype.kind == "i" else i for i in items]


def _mask_positions(x: Tensor, mask: Tensor) -> tuple[Tensor, np.ndarray]:
    """``x`` with its first ``mask.ndim`` axes flattened into one, and the positions along
    it of the mask's True elements (row-major)."""
    shape = x.shape[: mask.ndim]
    # Each axis of a mask matches the axis it covers or is 0 (the standard's rule, and NumPy's).
    if mask.ndim > x.ndim or any(m not in (s, 0) for m, s in zip(mask.shape, shape, strict=False)):
        raise IndexError(f"indexing: a mask of shape {mask.shape} does not fit an array of shape {x.shape}")
    found = values.read("boolean indexing", mask).reshape(-1)
    lines = ops.reshape(x, (int(np.prod(shape, dtype=np.int64)), *x.shape[mask.ndim :]))
    return lines, np.flatnonzero(found)


def getitem(x: Tensor, key: Any) -> Array:
    """``x[key]`` with the standard's keys (module doc)."""
    items = _items(key)
    if len(items) == 1 and _is_mask(items[0]):
        mask = items[0]
        if mask.ndim == 0:
            selected = ops.expand_dims(x, 0)
            return wrap(selected if values.read("boolean indexing", mask) else selected[0:0])
        lines, positions = _mask_positions(x, mask)
        return take(lines, values.constant_like(positions.astype(np.int64), x), axis=0)
    arrays = any(isinstance(i, Tensor) for i in items)
    if arrays and all(isinstance(i, (int, Tensor)) for i in items) and len(items) <= x.ndim:
        return wrap(selection.by_arrays(x, items))  # the standard's integer-array indexing
    # Any other key (arrays beside slices, ``...`` or None: NumPy's rules) as a plain Tensor takes it.
    return wrap(ops.getitem(x, tuple(items)))


def take(x: Any, indices: Any, /, *, axis: int | None = None) -> Array:
    """The elements of ``x`` at ``indices`` along ``axis`` (optional for 1-D)."""
    x = as_array(x, "take")
    if axis is None and x.ndim != 1:
        raise ValueError(f"take: axis is required for an array of rank {x.ndim}")
    return wrap(ops.take(x, as_array(indices, "take"), 0 if axis is None else axis))


def take_along_axis(x: Any, indices: Any, /, *, axis: int = -1) -> Array:
    """``out[..., j, ...] = x[..., indices[..., j, ...], ...]`` along ``axis``."""
    return wrap(ops.take_along_axis(as_array(x, "take_along_axis"), as_array(indices, "take_along_axis"), axis))


def _value(x: Tensor, value: Any) -> Tensor:
    """The assigned value in ``x``'s dtype: an array, or a scalar of the array's kind."""
    if isinstance(value, Tensor):
        return ops.astype(value, x.dtype)
    scalar_dtype(x.dtype, value)  # a TypeError for a scalar of another kind
    return ops.as_tensor(value, x.dtype, like=x)


def setitem(x: Tensor, key: Any, value: Any) -> Tensor:
    """The value ``x`` has after ``x[key] = value`` (the Array's __setitem__ assigns it)."""
    items = _items(key)
    new = _value(x, value)
    if len(items) == 1 and _is_mask(items[0]):
        return _set_masked(x, items[0], new)
    if any(isinstance(i, Tensor) for i in items):
        raise IndexError("assignment: integer-array keys are not supported (the standard assigns by masks and slices)")
    return _set_box(x, items, new)


def _set_masked(x: Tensor, mask: Tensor, new: Tensor) -> Tensor:
    if mask.ndim > x.ndim or mask.shape != x.shape[: mask.ndim]:
        raise IndexError(f"assignment: a mask of shape {mask.shape} does not fit an array of shape {x.shape}")
    spread = ops.broadcast_to(ops.reshape(mask, mask.shape + (1,) * (x.ndim - mask.ndim)), x.shape)
    if new.ndim == 0:
        return ops.where(spread, ops.broadcast_to(new, x.shape), x)
    lines, positions = _mask_positions(x, mask)
    if len(positions) == 0:
        return x
    rows = ops.broadcast_to(new, (len(positions), *lines.shape[1:]))
    # Each selected line takes the next row of the value: its rank among the selected lines.
    order = np.zeros(lines.shape[0], np.int64)
    order[positions] = np.arange(len(positions))
    placed = ops.take(rows, values.constant_like(order, x), 0)
    return ops.where(spread, ops.reshape(placed, x.shape), x)


def _set_box(x: Tensor, items: list[Any], new: Tensor) -> Tensor:
    """``x`` with the box a basic key selects replaced by ``new`` (broadcast to it): the
    value padded into place (strides as interior padding, a negative step as a reversal)
    and selected in by the same padding of a mask."""
    selected = ops.getitem(x, tuple(items))  # checks the key, and gives the value's shape
    box = ops.broadcast_to(new, selected.shape)
    if selected.size == 0:
        return x
    consumed = sum(1 for i in items if i is not None and i is not Ellipsis)
    if Ellipsis in items:
        at = next(k for k, i in enumerate(items) if i is Ellipsis)
        items[at : at + 1] = [slice(None)] * (x.ndim - consumed)
    else:
        items += [slice(None)] * (x.ndim - consumed)
    axes = [i for i in items if i is not None]
    counts, low, high, interior, flipped = [], [], [], [], []
    for d, (item, size) in enumerate(zip(axes, x.shape, strict=True)):
        if isinstance(item, slice):
            start, stop, step = item.indices(size)
            count = len(range(start, stop, step))
            if step < 0:
                start, step = start + (count - 1) * step, -step
                flipped.append(d)
        else:
            start, count, step = int(item) % size, 1, 1  # in range: the getitem above checked it
        counts.append(count)
        low.append(start)
        interior.append(step - 1)
        high.append(size - (start + (count - 1) * step + 1))
    block = ops.reshape(box, tuple(counts))
    if flipped:
        block = structural.rev.bind(block, dimensions=tuple(flipped))
    where = {"low": tuple(low), "high": tuple(high), "interior": tuple(interior)}
    placed = structural.pad.bind(block, value=0, **where)
    inside = structural.pad.bind(ops.full_like(block, True, bool_), value=False, **where)
    return ops.where(inside, placed, x)
