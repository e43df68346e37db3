"""The standard's manipulation functions, on braze's movement primitives: every one of
them keeps its shape static, so it records into a lazy trace like any op (``repeat``
with an array of counts reads the counts first)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import braze.ops as ops
from braze.array_api.array_object import Array, copied, wrap
from braze.array_api.dtypes import promoted
from braze.array_api.elementwise import as_array
from braze.ops.core import broadcast_shapes, normalize_axis
from braze.tensor import Tensor


def broadcast_arrays(*arrays: Any) -> list[Array]:
    """The arrays broadcast to their common shape."""
    items = [as_array(a, "broadcast_arrays") for a in arrays]
    shape = broadcast_shapes("broadcast_arrays", *(a.shape for a in items)) if items else ()
    return [wrap(ops.broadcast_to(a, shape)) for a in items]


def broadcast_to(x: Any, /, shape: Sequence[int]) -> Array:
    return wrap(ops.broadcast_to(as_array(x, "broadcast_to"), tuple(shape)))


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Array:
    """The arrays (promoted to one dtype) joined along ``axis``; flattened first when None."""
    items = promoted(*arrays)
    if axis is None:
        items = [ops.reshape(a, (a.size,)) for a in items]
        axis = 0
    return wrap(ops.concatenate(items, axis))


def expand_dims(x: Any, /, axis: int = 0) -> Array:
    return wrap(ops.expand_dims(as_array(x, "expand_dims"), axis))


def flip(x: Any, /, *, axis: int | Sequence[int] | None = None) -> Array:
    return wrap(ops.flip(as_array(x, "flip"), axis))


def permute_dims(x: Any, /, axes: Sequence[int]) -> Array:
    return wrap(ops.transpose(as_array(x, "permute_dims"), tuple(axes)))


def moveaxis(x: Any, source: int | Sequence[int], destination: int | Sequence[int], /) -> Array:
    """``x`` with the ``source`` axes moved to the positions ``destination``."""
    return wrap(ops.shape.moveaxis(as_array(x, "moveaxis"), source, destination))


def reshape(x: Any, /, shape: Sequence[int], *, copy: bool | None = None) -> Array:
    """``x`` in another shape (one size may be -1). braze's reshapes never need a copy
    (values never change in place), so ``copy=False`` always holds; ``copy=True`` copies."""
    x = as_array(x, "reshape")
    return wrap(ops.reshape(copied(x) if copy else x, tuple(shape)))  # copied first: a lazy reshape is pending


def roll(x: Any, /, shift: int | Sequence[int], *, axis: int | Sequence[int] | None = None) -> Array:
    """``x`` with its elements shifted by ``shift`` along each ``axis``, wrapping around
    (the flattened array when ``axis`` is None)."""
    x = as_array(x, "roll")
    if axis is None:
        return wrap(ops.reshape(roll(ops.reshape(x, (x.size,)), shift, axis=0), x.shape))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    shifts = (shift,) * len(axes) if isinstance(shift, (int, np.integer)) else tuple(shift)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: {len(shifts)} shifts for {len(axes)} axes")
    out: Tensor = x
    for a, s in zip(axes, shifts, strict=True):
        d = normalize_axis("roll", a, x.ndim)
        size = x.shape[d]
        if size == 0 or s % size == 0:
            continue
        cut = size - s % size
        head = ops.getitem(out, (slice(None),) * d + (slice(cut, None),))
        tail = ops.getitem(out, (slice(None),) * d + (slice(None, cut),))
        out = ops.concatenate([head, tail], d)
    return wrap(out)


def squeeze(x: Any, /, axis: int | Sequence[int]) -> Array:
    return wrap(ops.squeeze(as_array(x, "squeeze"), axis))


def stack(arrays: Sequence[Any], /, *, axis: int = 0) -> Array:
    return wrap(ops.stack(promoted(*arrays), axis))


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Array, ...]:
    """The slices of ``x`` along ``axis``, each without that axis."""
    x = as_array(x, "unstack")
    d = normalize_axis("unstack", axis, x.ndim)
    return tuple(wrap(ops.getitem(x, (slice(None),) * d + (k,))) for k in range(x.shape[d]))


def tile(x: Any, repetitions: Sequence[int], /) -> Array:
    """``x`` repeated ``repetitions[k]`` times along each axis k (leading axes added as NumPy)."""
    x = as_array(x, "tile")
    reps = tuple(int(r) for r in repetitions)
    rank = max(x.ndim, len(reps))
    shape = (1,) * (rank - x.ndim) + x.shape
    reps = (1,) * (rank - len(reps)) + reps
    interleaved = tuple(v for pair in zip(reps, shape, strict=True) for v in pair)
    expanded = ops.reshape(x, tuple(v for s in shape for v in (1, s)))
    tiled = ops.broadcast_to(expanded, interleaved)
    return wrap(ops.reshape(tiled, tuple(r * s for r, s in zip(reps, shape, strict=True))))


def repeat(x: Any, repeats: int | Any, /, *, axis: int | None = None) -> Array:
    """Each element repeated ``repeats`` times along ``axis`` (the flattened array when
    None). Counts given as an array decide the result's shape by their values: they are
    read (on a lazy device, a barrier; under ``@jit``, an error)."""
    from braze.array_api import indexing
    from braze.ops import values

    x = as_array(x, "repeat")
    if axis is None:
        x, axis = ops.reshape(x, (x.size,)), 0
    d = normalize_axis("repeat", axis, x.ndim)
    size = x.shape[d]
    if isinstance(repeats, Tensor):
        counts = values.read("repeat", repeats).astype(np.int64)
        if counts.shape in ((), (1,)):  # one count for every element, as NumPy broadcasts it
            counts = np.full(size, int(counts.reshape(())))
        if counts.shape != (size,) or (counts < 0).any():
            raise ValueError(f"repeat: needs {size} non-negative counts for axis {d}, got {counts.tolist()}")
        positions = np.repeat(np.arange(size), counts)
        return indexing.take(x, values.constant_like(positions, x), axis=d)
    count = int(repeats)
    if count < 0:
        raise ValueError(f"repeat: repeats must be non-negative, got {count}")
    expanded = ops.expand_dims(x, d + 1)
    shape = (*x.shape[: d + 1], count, *x.shape[d + 1 :])
    spread = ops.broadcast_to(expanded, shape)
    return wrap(ops.reshape(spread, (*x.shape[:d], size * count, *x.shape[d + 1 :])))
