"""Indexing by integer tensors: ``take``, ``take_along_axis`` and NumPy's integer-array
indexing (``table[idx]``), each one ``gather`` whose gradient is a ``scatter_add``; a
boolean mask (``x[x > 0]``) is read and indexes by the positions of its True elements, as
NumPy's ``nonzero`` gives them (on a lazy device a barrier, under ``@jit`` an error: see
``braze.ops.values``).

Indices count from the end when negative, as in NumPy. An eager index out of range raises
an ``IndexError`` naming the op and the bound; a lazy or jitted one cannot be seen before
the compiled code runs, which clamps it to the nearest valid index (XLA's rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from braze.ir.errors import DTypeError, ShapeError
from braze.ir.prims import indexing, sources
from braze.ir.prims.checks import fmt_shape
from braze.ops.core import as_tensor, astype, broadcast_shapes, broadcast_to, full, normalize_axis
from braze.ops.math import where
from braze.ops.shape import concatenate, reshape
from braze.ops.values import read
from braze.tensor import Tensor, user_error


def is_index_array(item: Any) -> bool:
    """Whether an indexing item is an array of indices (a tensor, NumPy array or list)
    rather than a basic index (an integer, a slice, ``...`` or None)."""
    return isinstance(item, (Tensor, np.ndarray, list))


def index_tensor(op: str, value: Any, device: Any) -> Tensor:
    """``value`` as an integer tensor on ``device`` (a boolean mask is refused: its result's
    shape would depend on its values)."""
    if isinstance(value, Tensor):
        indices = value
    else:
        array = np.asarray(value)
        if array.size == 0 and array.dtype.kind == "f":  # [] as NumPy reads it
            array = array.astype(np.int32)
        indices = as_tensor(array, device=device)
    if indices.dtype.kind == "b":
        raise user_error(
            TypeError, f"{op}: boolean masks select a number of elements known only from their values; use where()"
        )
    if indices.dtype.kind != "i":
        raise user_error(DTypeError, f"{op}: indices must be integers, got {indices.dtype.name}")
    return indices


_BOOLS = (bool, np.bool_)


def _mask_values(item: Any) -> np.ndarray | None:
    """The values of a boolean index array (a tensor, NumPy array or list of booleans),
    read on the host; None for any other item."""
    if isinstance(item, Tensor):
        return read("indexing", item) if item.dtype.kind == "b" else None
    if isinstance(item, (np.ndarray, list)):
        array = np.asarray(item)
        return array if array.dtype == np.bool_ else None
    return None


def expand_masks(x: Tensor, items: list[Any]) -> list[Any]:
    """``items`` (an index of ``x``) with each boolean mask of rank k replaced by the k
    integer arrays of its True elements' positions, as NumPy reads a mask (``np.nonzero``),
    and each 0-d one by its boolean (NumPy's new axis of length 1 or 0). A mask's shape must
    be that of the axes it covers."""
    masks = [_mask_values(item) for item in items]
    if all(mask is None for mask in masks):
        return items
    # Axes each item covers: a mask its rank, None, ... and a boolean scalar none of their own.
    spans = [
        mask.ndim if mask is not None else 0 if item is None or item is Ellipsis or isinstance(item, _BOOLS) else 1
        for item, mask in zip(items, masks, strict=True)
    ]
    if sum(spans) > x.ndim:
        raise user_error(IndexError, f"indexing: too many indices ({sum(spans)}) for a tensor of rank {x.ndim}")
    expanded: list[Any] = []
    axis = 0
    for item, mask, span in zip(items, masks, spans, strict=True):
        if mask is not None and mask.ndim == 0:
            expanded.append(bool(mask))
        elif mask is not None:
            covered = x.shape[axis : axis + span]
            if mask.shape != covered:
                raise user_error(
                    IndexError,
                    f"indexing: a boolean mask of shape {fmt_shape(mask.shape)} does not match the axes it indexes, "
                    f"{fmt_shape(covered)} (from axis {axis} of a tensor of shape {fmt_shape(x.shape)})",
                )
            expanded += list(np.nonzero(mask))
        else:
            expanded.append(item)
        axis += x.ndim - sum(spans) if item is Ellipsis else span
    return expanded


def checked(op: str, indices: Tensor, size: int, axis: int, negative: bool = True) -> Tensor:
    """``indices`` into an axis of ``size``, negative ones counted from the end (when
    ``negative``): eager indices out of range raise, lazy ones are left to the compiled
    code's clamp."""
    low = -size if negative else 0
    if not indices.device.is_lazy:
        values = indices.numpy()
        outside = (values < low) | (values >= size)
        if outside.any():
            bad = int(values[outside].flat[0])
            raise user_error(
                IndexError,
                f"{op}: index {bad} is out of bounds for axis {axis} of size {size} (valid: {low} to {size - 1})",
            )
        if not negative or not (values < 0).any():
            return indices
    if not negative:
        return indices
    return where(indices < 0, indices + size, indices)


def _gather_rows(x: Tensor, axes: Sequence[int], vectors: Tensor, batch_first: bool) -> Tensor:
    """The elements of ``x`` at the index vectors ``vectors`` (last axis: one component
    per axis of ``axes``), the other axes of ``x`` kept whole; the batch axes of
    ``vectors`` go first (``batch_first``) or where the first of ``axes`` was."""
    batch = vectors.ndim - 1
    kept = [d for d in range(x.ndim) if d not in axes]
    first = 0 if batch_first else min(axes)
    before = sum(1 for d in kept if d < first)
    offsets = tuple(range(before)) + tuple(range(before + batch, batch + len(kept)))
    if any(x.shape[d] == 0 for d in axes):
        # An empty axis has no element to gather (an eager index into it has raised) and no
        # slice of one fits it: the result, empty unless indices were clamped, is zeros.
        sizes = [x.shape[d] for d in kept]
        shape = (*sizes[:before], *vectors.shape[:-1], *sizes[before:])
        return full(shape, 0, x.dtype, x.device)
    return indexing.gather.bind(
        x,
        vectors,
        offset_dims=offsets,
        collapsed_slice_dims=tuple(sorted(axes)),
        start_index_map=tuple(axes),
        slice_sizes=tuple(1 if d in axes else size for d, size in enumerate(x.shape)),
    )


def take(a: Any, indices: Any, axis: int | None = None) -> Tensor:
    """``np.take``: the elements of ``a`` at ``indices`` along ``axis`` (of the flattened
    ``a`` when None); the result's shape is ``a.shape[:axis] + indices.shape +
    a.shape[axis + 1:]``."""
    a = as_tensor(a)
    if axis is None:
        a, axis = reshape(a, (a.size,)), 0
    axis = normalize_axis("take", axis, a.ndim)
    idx = checked("take", index_tensor("take", indices, a.device), a.shape[axis], axis)
    vectors = reshape(idx, (*idx.shape, 1))
    return _gather_rows(a, (axis,), vectors, batch_first=False)


def rows(table: Tensor, indices: Any, op: str = "embedding") -> Tensor:
    """The rows of ``table`` at ``indices``, which must be in ``[0, rows)`` as PyTorch's
    embeddings require (no counting from the end): an eager one outside raises, a lazy one
    is clamped."""
    idx = checked(op, index_tensor(op, indices, table.device), table.shape[0], 0, negative=False)
    return _gather_rows(table, (0,), reshape(idx, (*idx.shape, 1)), batch_first=False)


def take_along_axis(arr: Any, indices: Any, axis: int | None) -> Tensor:
    """``np.take_along_axis``: ``out[..., j, ...] = arr[..., indices[..., j, ...], ...]``
    along ``axis`` (of the flattened ``arr`` when None); the other axes of ``indices``
    broadcast against those of ``arr``."""
    arr = as_tensor(arr)
    idx = index_tensor("take_along_axis", indices, arr.device)
    if axis is None:
        arr, axis = reshape(arr, (arr.size,)), 0
    axis = normalize_axis("take_along_axis", axis, arr.ndim)
    if idx.ndim != arr.ndim:
        raise user_error(
            ShapeError,
            f"take_along_axis: indices {fmt_shape(idx.shape)} need the rank of the array {fmt_shape(arr.shape)}",
        )
    others = broadcast_shapes(
        "take_along_axis", *(tuple(1 if d == axis else s for d, s in enumerate(t.shape)) for t in (arr, idx))
    )
    shape = tuple(idx.shape[d] if d == axis else size for d, size in enumerate(others))
    source = broadcast_to(arr, tuple(arr.shape[d] if d == axis else size for d, size in enumerate(others)))
    idx = checked("take_along_axis", broadcast_to(idx, shape), arr.shape[axis], axis)
    # Every element's index vector: its own position on the other axes, the index on axis.
    components = [
        idx if d == axis else sources.iota.bind(shape=shape, dimension=d, dtype=idx.dtype, like=idx.device)
        for d in range(len(shape))
    ]
    vectors = concatenate([reshape(c, (*shape, 1)) for c in components], axis=-1)
    return _gather_rows(source, tuple(range(len(shape))), vectors, batch_first=True)


def index_by_arrays(x: Tensor, items: list[Any]) -> Tensor:
    """NumPy's integer-array indexing of ``x`` by ``items`` (one per axis, ``...`` already
    expanded; ``None`` adds an axis): the arrays (and the integers among them) broadcast
    together, their result axes replace the indexed ones where those are adjacent, else go
    first; slices select as basic indexing does."""
    from braze.ops.shape import getitem  # getitem hands integer arrays to this function

    basic = [slice(None) if is_index_array(i) or isinstance(i, (int, np.integer)) else i for i in items]
    kept = getitem(x, tuple(basic))
    axes, arrays, axis = [], [], 0
    for item in items:
        if item is None:
            axis += 1
            continue
        if is_index_array(item) or isinstance(item, (int, np.integer)):
            size = kept.shape[axis]
            idx = index_tensor("indexing", item, x.device)
            axes.append(axis)
            arrays.append(checked("indexing", idx, size, axis))
        axis += 1
    dtype = next((a.dtype for a in arrays if a.dtype.itemsize == 8), arrays[0].dtype)
    shape = broadcast_shapes("indexing", *(a.shape for a in arrays))
    vectors = concatenate([reshape(broadcast_to(astype(a, dtype), shape), (*shape, 1)) for a in arrays], axis=-1)
    adjacent = axes == list(range(axes[0], axes[0] + len(axes)))
    return _gather_rows(kept, axes, vectors, batch_first=not adjacent)


__all__ = ["index_by_arrays", "rows", "take", "take_along_axis"]
