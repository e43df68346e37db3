"""Shape manipulation and indexing: reshape, transpose, swapaxes, flip, flatten, squeeze,
expand_dims, concatenate, stack, split, chunk, pad and ``tensor[index]`` with ints, slices
(negative steps too), ``...``, ``None``, ``True`` / ``False`` (NumPy's new axis of length
1 / 0), and the integer arrays and boolean masks of ``braze.ops.indexing``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from braze.ir.errors import ShapeError
from braze.ir.prims import structural
from braze.ir.prims.checks import fmt_shape
from braze.ops.core import as_tensor, normalize_axes, normalize_axis
from braze.tensor import Tensor, user_error


def reshape(x: Any, shape: Sequence[int] | int) -> Tensor:
    """Reshape; one dimension may be -1 and is inferred."""
    x = as_tensor(x)
    shape = [int(shape)] if isinstance(shape, (int, np.integer)) else [int(s) for s in shape]
    if shape.count(-1) > 1:
        raise user_error(ShapeError, f"reshape: only one dimension can be -1, got {tuple(shape)}")
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or x.size % known:
            raise user_error(ShapeError, f"reshape: cannot reshape {fmt_shape(x.shape)} into {fmt_shape(shape)}")
        shape[shape.index(-1)] = x.size // known
    if tuple(shape) == x.shape:
        return x
    try:
        return structural.reshape.bind(x, new_sizes=tuple(shape))
    except ShapeError as error:
        raise ShapeError(str(error)) from None


def transpose(x: Any, axes: Sequence[int] | None = None) -> Tensor:
    """Permute axes (reverse them when ``axes`` is None), as ``np.transpose``."""
    x = as_tensor(x)
    if axes is None:
        permutation = tuple(reversed(range(x.ndim)))
    else:
        permutation = tuple(normalize_axis("transpose", a, x.ndim) for a in axes)
        if sorted(permutation) != list(range(x.ndim)):
            raise user_error(ShapeError, f"transpose: {tuple(axes)} is not a permutation of {x.ndim} axes")
    if permutation == tuple(range(x.ndim)):
        return x
    return structural.transpose.bind(x, permutation=permutation)


def ordered_axes(op: str, axes: int | Sequence[int], ndim: int) -> tuple[int, ...]:
    """Axes in the order given (negatives counted from the end), each once."""
    given = (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
    found = tuple(normalize_axis(op, a, ndim) for a in given)
    if len(set(found)) != len(found):
        raise user_error(ValueError, f"{op}: repeated axis in {given}")
    return found


def moveaxis(x: Any, source: int | Sequence[int], destination: int | Sequence[int], op: str = "moveaxis") -> Tensor:
    """``x`` with the ``source`` axes moved to the positions ``destination``, the others
    kept in order (``np.moveaxis``; PyTorch's ``movedim``)."""
    x = as_tensor(x)
    sources = ordered_axes(op, source, x.ndim)
    targets = ordered_axes(op, destination, x.ndim)
    if len(sources) != len(targets):
        raise user_error(ShapeError, f"{op}: {len(sources)} source axes but {len(targets)} destinations")
    order = [d for d in range(x.ndim) if d not in sources]
    for target, source_axis in sorted(zip(targets, sources, strict=True)):
        order.insert(target, source_axis)
    return transpose(x, tuple(order))


def swapaxes(x: Any, axis1: int, axis2: int) -> Tensor:
    """``x`` with two axes exchanged, as ``np.swapaxes`` and ``torch.transpose(x, a, b)``."""
    x = as_tensor(x)
    first, second = normalize_axis("swapaxes", axis1, x.ndim), normalize_axis("swapaxes", axis2, x.ndim)
    permutation = list(range(x.ndim))
    permutation[first], permutation[second] = second, first
    return transpose(x, permutation)


def flip(x: Any, axis: int | Sequence[int] | None = None) -> Tensor:
    """Reverse the order of elements along ``axis`` (every axis when None), as ``np.flip``."""
    x = as_tensor(x)
    dimensions = tuple(d for d in normalize_axes("flip", axis, x.ndim) if x.shape[d] > 1)
    return structural.rev.bind(x, dimensions=dimensions) if dimensions else x


def flatten(x: Any, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge axes ``start_dim..end_dim`` into one (``torch.flatten``)."""
    x = as_tensor(x)
    if x.ndim == 0:
        return reshape(x, (1,))
    start = normalize_axis("flatten", start_dim, x.ndim)
    end = normalize_axis("flatten", end_dim, x.ndim)
    if start > end:
        raise user_error(ShapeError, f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    merged = math.prod(x.shape[start : end + 1])
    return reshape(x, (*x.shape[:start], merged, *x.shape[end + 1 :]))


def squeeze(x: Any, axis: Any = None) -> Tensor:
    """``x`` without its dimensions of size 1 (all of them, or those in ``axis``)."""
    x = as_tensor(x)
    if axis is None:
        axes = tuple(d for d, s in enumerate(x.shape) if s == 1)
    else:
        axes = normalize_axes("squeeze", axis, x.ndim)
        wrong = [a for a in axes if x.shape[a] != 1]
        if wrong:
            raise user_error(ShapeError, f"squeeze: axis {wrong[0]} of {fmt_shape(x.shape)} is not of size 1")
    return reshape(x, tuple(s for d, s in enumerate(x.shape) if d not in axes))


def expand_dims(x: Any, axis: int) -> Tensor:
    """``x`` with a new dimension of size 1 at ``axis``."""
    x = as_tensor(x)
    position = normalize_axis("expand_dims", axis, x.ndim + 1)
    return reshape(x, (*x.shape[:position], 1, *x.shape[position:]))


def concatenate(tensors: Sequence[Any], axis: int = 0) -> Tensor:
    """The tensors joined along an existing ``axis``, as ``np.concatenate``."""
    items = [as_tensor(t) for t in tensors]
    if not items:
        raise user_error(ValueError, "concatenate: needs at least one tensor")
    dimension = normalize_axis("concatenate", axis, items[0].ndim)
    if len(items) == 1:
        return items[0]
    return structural.concatenate.bind(*items, dimension=dimension)


def cat(tensors: Sequence[Any], dim: int = 0) -> Tensor:
    """The tensors joined along an existing ``dim``: PyTorch's name of ``concatenate``."""
    return concatenate(tensors, dim)


def stack(tensors: Sequence[Any], axis: int = 0, *, dim: int | None = None) -> Tensor:
    """The tensors joined along a new ``axis`` (PyTorch's ``dim``), as ``np.stack``."""
    axis = axis if dim is None else dim
    items = [as_tensor(t) for t in tensors]
    if not items:
        raise user_error(ValueError, "stack: needs at least one tensor")
    position = normalize_axis("stack", axis, items[0].ndim + 1)
    return concatenate([expand_dims(t, position) for t in items], position)


def split(x: Any, split_size_or_sections: int | Sequence[int], dim: int = 0) -> list[Tensor]:
    """Pieces of ``x`` along ``dim``, as ``torch.split``: of ``split_size_or_sections``
    elements each (the last one smaller when they do not divide the axis), or of the sizes
    listed, which must add up to the axis."""
    x = as_tensor(x)
    axis = normalize_axis("split", dim, x.ndim)
    length = x.shape[axis]
    if isinstance(split_size_or_sections, (int, np.integer)):
        size = int(split_size_or_sections)
        if size <= 0:
            raise user_error(ValueError, f"split: the size of a piece must be positive, got {size}")
        sizes = [min(size, length - start) for start in range(0, length, size)] or [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if any(s < 0 for s in sizes) or sum(sizes) != length:
            raise user_error(
                ShapeError, f"split: sizes {sizes} do not add up to axis {axis} of {fmt_shape(x.shape)} ({length})"
            )
    if len(sizes) == 1:
        return [x]
    # Each piece one slice of the axis, bound straight (``x[..., a:b]`` would parse an index).
    pieces, start = [], 0
    starts, limits, strides = [0] * x.ndim, list(x.shape), (1,) * x.ndim
    for size in sizes:
        starts[axis], limits[axis] = start, start + size
        pieces.append(
            structural.slice_.bind(x, start_indices=tuple(starts), limit_indices=tuple(limits), strides=strides)
        )
        start += size
    return pieces


def chunk(x: Any, chunks: int, dim: int = 0) -> list[Tensor]:
    """``x`` cut into at most ``chunks`` pieces along ``dim`` of ``ceil(length / chunks)``
    elements each (the last one smaller), as ``torch.chunk``."""
    x = as_tensor(x)
    if not isinstance(chunks, (int, np.integer)) or chunks <= 0:
        raise user_error(ValueError, f"chunk: the number of chunks must be a positive integer, got {chunks!r}")
    length = x.shape[normalize_axis("chunk", dim, x.ndim)]
    return split(x, max(-(-length // int(chunks)), 1), dim)


def pad(x: Any, pad_width: Sequence[Sequence[int]] | int, value: float = 0.0) -> Tensor:
    """Constant padding with ``np.pad``'s ``pad_width`` ((before, after) per axis, or an int)."""
    x = as_tensor(x)
    pairs = [(pad_width, pad_width)] * x.ndim if isinstance(pad_width, int) else [tuple(p) for p in pad_width]
    if len(pairs) != x.ndim or any(len(p) != 2 or p[0] < 0 or p[1] < 0 for p in pairs):
        raise user_error(ShapeError, f"pad: need {x.ndim} non-negative (before, after) pairs, got {pad_width}")
    return structural.pad.bind(
        x, low=tuple(p[0] for p in pairs), high=tuple(p[1] for p in pairs), interior=(0,) * x.ndim, value=value
    )


def _is_bool_scalar(item: Any) -> bool:
    """Whether an indexing item is a boolean scalar (``True``, ``np.True_``, a 0-d NumPy
    boolean array), which NumPy reads as no integer but a new axis of length 1 or 0."""
    if isinstance(item, (bool, np.bool_)):
        return True
    return isinstance(item, np.ndarray) and item.ndim == 0 and item.dtype == np.bool_


def _getitem_bool_scalars(x: Tensor, items: list[Any]) -> Tensor:
    """``x[items]`` where some items are boolean scalars, as NumPy reads them: each inserts
    an axis of length 1 that it then indexes by ``zeros(1)`` (True) or ``zeros(0)`` (False),
    an integer-array index that uses no axis of ``x``. A lone one among slices, ``...`` and
    ``None`` is a basic slice of that axis; beside integers or arrays, NumPy's rules for
    array indices place the new axis (they broadcast together)."""
    from braze.ops.indexing import is_index_array

    flags = [bool(item) if _is_bool_scalar(item) else None for item in items]
    basic = sum(f is not None for f in flags) == 1 and not any(
        f is None and (is_index_array(item) or isinstance(item, (int, np.integer)))
        for item, f in zip(items, flags, strict=True)
    )
    # First the new axes (the other indices kept for the second step), then the indices.
    widened = getitem(
        x,
        tuple(
            None if f is not None or item is None else item if item is Ellipsis else slice(None)
            for item, f in zip(items, flags, strict=True)
        ),
    )
    second = []
    for item, f in zip(items, flags, strict=True):
        if f is not None:
            second.append(slice(0, int(f)) if basic else np.zeros(int(f), dtype=np.int64))
        else:
            second.append(slice(None) if item is None else item)
    return getitem(widened, tuple(second))


def getitem(x: Tensor, index: Any) -> Tensor:
    """Indexing as NumPy's: integers, slices (a negative step reverses the axis, then slices
    it), ``...`` and ``None``, integer arrays (tensors, NumPy arrays, lists), which
    gather (``table[idx]``; see ``braze.ops.indexing``), boolean masks, which index by the
    positions of their True elements, and ``True`` / ``False``, which add an axis of length
    1 / 0 as in NumPy."""
    from braze.ops.indexing import expand_masks, index_by_arrays, is_index_array

    items = expand_masks(x, list(index) if isinstance(index, tuple) else [index])
    if any(_is_bool_scalar(item) for item in items):
        return _getitem_bool_scalars(x, items)
    arrays = False
    for item in items:
        if is_index_array(item):
            arrays = True
        elif not (item is None or item is Ellipsis or isinstance(item, (int, np.integer, slice))):
            raise user_error(
                TypeError,
                f"indexing: only integers, slices, ..., None, integer arrays and boolean masks are supported, "
                f"got {type(item).__name__}",
            )
    ellipses = [k for k, item in enumerate(items) if item is Ellipsis]  # by identity: a tensor's == is elementwise
    if len(ellipses) > 1:
        raise user_error(IndexError, "indexing: an index can only have one ellipsis (...)")
    consumed = sum(1 for i in items if i is not None and i is not Ellipsis)
    if consumed > x.ndim:
        raise user_error(IndexError, f"indexing: too many indices ({consumed}) for a tensor of rank {x.ndim}")
    if ellipses:
        at = ellipses[0]
        items[at : at + 1] = [slice(None)] * (x.ndim - consumed)
    else:
        items += [slice(None)] * (x.ndim - consumed)
    if arrays:
        return index_by_arrays(x, items)
    starts, limits, strides, out_shape, flipped = [], [], [], [], []
    dim = 0
    for item in items:
        if item is None:
            out_shape.append(1)
            continue
        size = x.shape[dim]
        if isinstance(item, slice):
            start, stop, step = item.indices(size)
            count = len(range(start, stop, step))
            if step < 0:  # element i of the axis is element size-1-i of the reversed axis
                if count > 1:
                    flipped.append(dim)
                start, step = (size - 1 - start if count > 1 else max(min(start, size - 1), 0)), -step
            starts.append(start)
            limits.append(start + (count - 1) * step + 1 if count else start)
            strides.append(step)
            out_shape.append(count)
        else:
            position = int(item)
            if not -size <= position < size:
                raise user_error(
                    IndexError, f"indexing: index {position} is out of bounds for axis {dim} of size {size}"
                )
            position %= size
            starts.append(position)
            limits.append(position + 1)
            strides.append(1)
        dim += 1
    out = structural.rev.bind(x, dimensions=tuple(flipped)) if flipped else x
    if (tuple(starts), tuple(limits), tuple(strides)) != ((0,) * x.ndim, x.shape, (1,) * x.ndim):
        out = structural.slice_.bind(
            out, start_indices=tuple(starts), limit_indices=tuple(limits), strides=tuple(strides)
        )
    return reshape(out, tuple(out_shape))
