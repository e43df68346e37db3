"""Choosing elements by position or value: masked_fill, the triangles tril and triu, topk."""

from __future__ import annotations

from typing import Any

import numpy as np

from braze.ir.dtypes import int32
from braze.ir.errors import DTypeError, ShapeError
from braze.ir.prims import sources
from braze.ir.prims.checks import fmt_shape
from braze.ops.bitwise import bitwise_not
from braze.ops.core import as_tensor, astype, normalize_axis
from braze.ops.creation import one_hot, zeros_like
from braze.ops.math import logical_and, logical_not, logical_or, where
from braze.ops.reduction import max as reduce_max
from braze.ops.reduction import sum as reduce_sum
from braze.ops.shape import stack, swapaxes
from braze.tensor import Tensor, user_error


def masked_fill(x: Any, mask: Any, value: Any) -> Tensor:
    """``x`` with ``value`` where the boolean ``mask`` (broadcast to ``x``) is true, as
    ``torch.Tensor.masked_fill``."""
    x, mask = as_tensor(x), as_tensor(mask, like=x if not isinstance(mask, Tensor) else None)
    if mask.dtype.kind != "b":
        raise user_error(DTypeError, f"masked_fill: the mask must be a bool tensor, got {mask.dtype.name}")
    filled = where(mask, value.astype(x.dtype) if isinstance(value, Tensor) else value, x)
    if filled.dtype != x.dtype:
        raise user_error(
            DTypeError,
            f"masked_fill: {x.dtype.name}{list(x.shape)} cannot take the value {value!r} (it would become "
            f"{filled.dtype.name}); convert the tensor or the value",
        )
    if filled.shape != x.shape:
        raise user_error(
            ShapeError,
            f"masked_fill: a mask of shape {fmt_shape(mask.shape)} does not broadcast to {fmt_shape(x.shape)}",
        )
    return filled


def _triangle(op: str, x: Any, diagonal: int, lower: bool) -> Tensor:
    x = as_tensor(x)
    if x.ndim < 2:
        raise user_error(ShapeError, f"{op}: needs a tensor of at least 2 dimensions, got {fmt_shape(x.shape)}")
    shape = x.shape[-2:]
    rows = sources.iota.bind(shape=shape, dimension=0, dtype=int32, like=x.device)
    columns = sources.iota.bind(shape=shape, dimension=1, dtype=int32, like=x.device)
    offset = columns - rows  # 0 on the main diagonal, k on the k-th diagonal above it
    keep = offset <= int(diagonal) if lower else offset >= int(diagonal)
    return where(keep, x, zeros_like(x))


def tril(x: Any, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two axes (the elements on and below the ``diagonal``-th
    diagonal), zeros elsewhere, as ``np.tril`` and ``torch.tril``."""
    return _triangle("tril", x, diagonal, lower=True)


def triu(x: Any, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two axes (on and above the ``diagonal``-th diagonal),
    zeros elsewhere, as ``np.triu`` and ``torch.triu``."""
    return _triangle("triu", x, diagonal, lower=False)


def topk(x: Any, k: int, dim: int = -1, largest: bool = True) -> tuple[Tensor, Tensor]:
    """The ``k`` largest (or smallest) elements along ``dim`` and their indices (int32), in
    order, as ``torch.topk``; of equal elements the first comes first, and a NaN is larger
    than any number (the first taken by ``largest``, the last otherwise). Each of the ``k``
    is found by one reduction over the axis, so ``k`` should be small beside its length."""
    x = as_tensor(x)
    if x.dtype.kind not in "fi":
        raise user_error(DTypeError, f"topk: expected a float or integer tensor, got {x.dtype.name}")
    axis = normalize_axis("topk", dim, x.ndim)
    length = x.shape[axis]
    if not isinstance(k, (int, np.integer)) or not 0 < k <= length:
        raise user_error(
            ValueError, f"topk: k must be in [1, {length}] for axis {axis} of {fmt_shape(x.shape)}, got {k!r}"
        )
    moved = x if axis == x.ndim - 1 else swapaxes(x, axis, -1)
    # The first index of the element to take is the largest of (n - index) among those
    # whose key is the largest left: the key reverses the order for the smallest, by a
    # negation that cannot overflow (~x for integers, as argmin does).
    keyed = moved.detach() if largest else (-moved.detach() if x.dtype.is_float else bitwise_not(moved.detach()))
    countdown = sources.iota.bind(shape=moved.shape, dimension=moved.ndim - 1, dtype=int32, like=x.device) * -1 + length
    if x.dtype.is_float:
        # A NaN takes the extreme key (+inf for the largest, -inf for the smallest), and of
        # the elements at that key the NaNs come first (largest) or last (smallest): they
        # rank above or below the others by ``length``.
        nan = moved.detach() != moved.detach()
        keyed = where(nan, np.inf if largest else -np.inf, keyed)
        countdown = countdown + astype(nan if largest else logical_not(nan), int32) * length
    lowest = -np.inf if x.dtype.is_float else np.iinfo(x.dtype.numpy).min
    taken = zeros_like(moved, dtype="bool")
    values, indices = [], []
    for _ in range(int(k)):
        best = reduce_max(where(taken, lowest, keyed), axis=-1, keepdims=True)
        candidates = logical_and(keyed == best, logical_not(taken))
        ranked = reduce_max(where(candidates, countdown, 0), axis=-1)
        index = -where(ranked > length, ranked - length, ranked) + length
        chosen = one_hot(index, length, dtype="bool")
        values.append(reduce_sum(where(chosen, moved, zeros_like(moved)), axis=-1))
        indices.append(index)
        taken = logical_or(taken, chosen)
    out_values, out_indices = stack(values, axis=-1), stack(indices, axis=-1)
    if axis != x.ndim - 1:
        out_values, out_indices = swapaxes(out_values, axis, -1), swapaxes(out_indices, axis, -1)
    return out_values, out_indices
