"""Indexing by an integer tensor: ``gather`` (XLA's Gather) and ``scatter_add`` (XLA's
Scatter with addition), each the other's transpose.

Both take ``indices`` whose last axis is the index vector (XLA's ``index_vector_dim`` is
always the last one, as in JAX's ``lax.gather``); the axes before it are the batch. For a
batch position, component ``k`` of its index vector is the start, in operand axis
``start_index_map[k]`` (``scatter_dims_to_operand_dims``), of a window of
``slice_sizes`` (the update's window sizes) whose other axes start at 0:

- ``gather(operand, indices)`` reads the windows. The result has the batch axes, and the
  window's axes at the positions ``offset_dims`` (``update_window_dims``), less the
  ``collapsed_slice_dims`` (``inserted_window_dims``), whose size is 1. Rows of an
  embedding table: ``operand (V, C)``, ``indices (B, T, 1)``, ``offset_dims=(2,)``,
  ``collapsed_slice_dims=(0,)``, ``start_index_map=(0,)``, ``slice_sizes=(1, C)``.
- ``scatter_add(updates, indices, shape=...)`` adds each update window into zeros of
  ``shape`` where gather would have read it; windows that meet (duplicate indices) add up.

An index is clamped so that its window lies inside the operand (XLA's rule for gather; the
scatter here clamps alike, so that a gather's gradient goes where its values came from).
The op library checks eager indices and raises on one out of range; compiled code, which
cannot raise, clamps.
"""

from __future__ import annotations

import math

import numpy as np

from braze.ir.errors import DTypeError, ShapeError
from braze.ir.primitive import Aval, Category, Primitive, register
from braze.ir.prims import checks, derived
from braze.ir.prims.checks import fmt_shape

GATHER_ATTRS = ("offset_dims", "collapsed_slice_dims", "start_index_map", "slice_sizes")
SCATTER_ATTRS = ("shape", "update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims")


def window_axes(rank: int, collapsed: tuple[int, ...]) -> list[int]:
    """The operand axes whose window offsets are axes of a gather's result (or of a
    scatter's updates), in order."""
    return [d for d in range(rank) if d not in collapsed]


def _check_dimension_numbers(
    op: str, operand_shape: tuple[int, ...], indices: Aval, collapsed, index_map, sizes, window_positions, rank: int
) -> tuple[int, ...]:
    """Validate the dimension numbers; returns the batch shape."""
    if indices.dtype.kind != "i":
        raise DTypeError(f"{op}: indices must be integers, got {indices.dtype.name}{fmt_shape(indices.shape)}")
    if indices.ndim < 1 or indices.shape[-1] != len(index_map):
        raise ShapeError(
            f"{op}: the last axis of indices {fmt_shape(indices.shape)} is the index vector, which needs "
            f"{len(index_map)} components (start_index_map {tuple(index_map)})"
        )
    n = len(operand_shape)
    checks.check_axes(op, index_map, n)
    checks.check_axes(op, collapsed, n)
    if list(collapsed) != sorted(collapsed):
        raise ShapeError(f"{op}: collapsed dimensions {tuple(collapsed)} must increase")
    if len(sizes) != n:
        raise ShapeError(f"{op}: needs {n} window sizes for an operand {fmt_shape(operand_shape)}, got {tuple(sizes)}")
    for d, (size, bound) in enumerate(zip(sizes, operand_shape, strict=True)):
        if not 0 <= size <= bound:
            raise ShapeError(f"{op}: window size {size} of axis {d} does not fit an operand {fmt_shape(operand_shape)}")
        if d in collapsed and size != 1:
            raise ShapeError(f"{op}: collapsed axis {d} needs a window of size 1, got {size}")
        if d in index_map and bound == 0:
            raise ShapeError(f"{op}: axis {d} of {fmt_shape(operand_shape)} is empty: no index selects from it")
    windows = len(window_axes(n, collapsed))
    if len(window_positions) != windows:
        raise ShapeError(f"{op}: {windows} window axes need {windows} positions, got {tuple(window_positions)}")
    checks.check_axes(op, window_positions, rank)
    if list(window_positions) != sorted(window_positions):
        raise ShapeError(f"{op}: window positions {tuple(window_positions)} must increase")
    return tuple(indices.shape[:-1])


def _arranged(batch: tuple[int, ...], windows: list[int], window_positions) -> tuple[int, ...]:
    """The shape of a gather's result (a scatter's updates): batch axes, with the windows'
    at ``window_positions``."""
    rank = len(batch) + len(windows)
    sizes, batch_sizes, window_sizes = [], iter(batch), iter(windows)
    for position in range(rank):
        sizes.append(next(window_sizes) if position in window_positions else next(batch_sizes))
    return tuple(sizes)


def _gather_rule(operand: Aval, indices: Aval, *, offset_dims, collapsed_slice_dims, start_index_map, slice_sizes):
    rank = indices.ndim - 1 + operand.ndim - len(collapsed_slice_dims)
    batch = _check_dimension_numbers(
        "gather", operand.shape, indices, collapsed_slice_dims, start_index_map, slice_sizes, offset_dims, rank
    )
    windows = [slice_sizes[d] for d in window_axes(operand.ndim, collapsed_slice_dims)]
    return Aval(_arranged(batch, windows, offset_dims), operand.dtype)


def _batch_first(rank: int, window_positions) -> list[int]:
    """The axes of a gather's result (a scatter's updates), batch axes first."""
    return [p for p in range(rank) if p not in window_positions] + list(window_positions)


def _positions(shape: tuple[int, ...], indices: np.ndarray, index_map, windows: dict[int, int]) -> tuple:
    """Per operand axis, where every (batch..., window...) element reads or writes: its
    start, clamped so that the window fits, plus its offset in the window. ``windows``
    gives the window axes (operand axes, in order) and their sizes; other axes have
    windows of size 1."""
    batch = indices.shape[:-1]
    axes = list(windows)
    grid = (*batch, *windows.values())
    positions = []
    for d, bound in enumerate(shape):
        start = np.zeros(batch, np.int64)
        if d in index_map:
            component = indices[..., list(index_map).index(d)].astype(np.int64)
            start = np.clip(component, 0, bound - windows.get(d, 1))
        start = start.reshape((*batch, *(1,) * len(axes)))
        if d in windows:
            offset = np.arange(windows[d]).reshape([windows[d] if a == d else 1 for a in axes])
            start = start + offset.reshape((1,) * len(batch) + offset.shape)
        positions.append(np.broadcast_to(start, grid))
    return tuple(positions)


def _gather_impl(operand, indices, *, offset_dims, collapsed_slice_dims, start_index_map, slice_sizes):
    rank = indices.ndim - 1 + operand.ndim - len(collapsed_slice_dims)
    windows = {d: slice_sizes[d] for d in window_axes(operand.ndim, collapsed_slice_dims)}
    out_shape = _arranged(indices.shape[:-1], list(windows.values()), offset_dims)
    if math.prod(out_shape) == 0:
        return np.zeros(out_shape, operand.dtype)
    values = operand[_positions(operand.shape, indices, start_index_map, windows)]  # batch axes, then windows
    return np.transpose(values, np.argsort(_batch_first(rank, offset_dims)))


def _as_gather(update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims) -> dict:
    """scatter_add's dimension numbers as gather's, whose transpose it is."""
    return {
        "offset_dims": update_window_dims,
        "collapsed_slice_dims": inserted_window_dims,
        "start_index_map": scatter_dims_to_operand_dims,
    }


def _update_windows(shape, updates_shape, collapsed, window_positions) -> dict[int, int]:
    """The window axes of a scatter (operand axes, in order) and their sizes: those of the
    updates' axes at ``window_positions``."""
    axes = window_axes(len(shape), collapsed)
    if len(window_positions) != len(axes) or any(not 0 <= p < len(updates_shape) for p in window_positions):
        raise ShapeError(
            f"scatter_add: {len(axes)} window axes need as many positions among the axes of updates "
            f"{fmt_shape(updates_shape)}, got {tuple(window_positions)}"
        )
    return {d: updates_shape[p] for d, p in zip(axes, window_positions, strict=True)}


def _scatter_rule(updates: Aval, indices: Aval, *, shape, **dims) -> Aval:
    numbers = _as_gather(**dims)
    collapsed, positions = numbers["collapsed_slice_dims"], numbers["offset_dims"]
    windows = _update_windows(shape, updates.shape, collapsed, positions)
    sizes = [windows.get(d, 1) for d in range(len(shape))]
    batch = _check_dimension_numbers(
        "scatter_add", tuple(shape), indices, collapsed, numbers["start_index_map"], sizes, positions, updates.ndim
    )
    expected = _arranged(batch, list(windows.values()), positions)
    if tuple(updates.shape) != expected:
        raise ShapeError(
            f"scatter_add: updates {fmt_shape(updates.shape)} do not match indices {fmt_shape(indices.shape)}: "
            f"expected {fmt_shape(expected)}"
        )
    return Aval(tuple(shape), updates.dtype)


def _scatter_impl(updates, indices, *, shape, **dims):
    numbers = _as_gather(**dims)
    positions = numbers["offset_dims"]
    windows = _update_windows(shape, updates.shape, numbers["collapsed_slice_dims"], positions)
    out = np.zeros(shape, updates.dtype)
    if updates.size:
        arranged = np.transpose(updates, _batch_first(updates.ndim, positions))
        np.add.at(out, _positions(tuple(shape), indices, numbers["start_index_map"], windows), arranged)
    return out


def _gather_vjp(g, operand, indices, out, *, offset_dims, collapsed_slice_dims, start_index_map, slice_sizes):
    spread = scatter_add.bind(
        g,
        indices,
        shape=tuple(operand.shape),
        update_window_dims=offset_dims,
        inserted_window_dims=collapsed_slice_dims,
        scatter_dims_to_operand_dims=start_index_map,
    )
    return spread, None


def _scatter_vjp(g, updates, indices, out, *, shape, **dims):
    numbers = _as_gather(**dims)
    windows = _update_windows(shape, updates.shape, numbers["collapsed_slice_dims"], numbers["offset_dims"])
    sizes = tuple(windows.get(d, 1) for d in range(len(shape)))
    return gather.bind(g, indices, slice_sizes=sizes, **numbers), None


gather = register(
    Primitive(
        "gather",
        _gather_rule,
        _gather_impl,
        _gather_vjp,
        GATHER_ATTRS,
        category=Category.MOVEMENT,
        jvp=derived.Linear(0),
    )
)
scatter_add = register(
    Primitive(
        "scatter_add",
        _scatter_rule,
        _scatter_impl,
        _scatter_vjp,
        SCATTER_ATTRS,
        category=Category.SCATTER,
        jvp=derived.Linear(0),
    )
)
