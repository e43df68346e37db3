"""Primitives that move data without arithmetic: broadcast, reshape, transpose, rev, slice,
pad, concatenate. Their gradients are each other: slice and pad are mutual transposes, rev
is its own, and a broadcast's transpose is a sum. Each is linear, so its JVP moves the
tangent as it moves the operand."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from braze.ir.dtypes import as_dtype
from braze.ir.errors import ShapeError
from braze.ir.primitive import Aval, Category, Primitive, register
from braze.ir.prims import checks, derived, reductions
from braze.ir.prims.checks import fmt_shape


def _broadcast_rule(x: Aval, *, shape: tuple[int, ...], broadcast_dimensions: tuple[int, ...]) -> Aval:
    op = "broadcast_in_dim"
    if len(broadcast_dimensions) != x.ndim:
        raise ShapeError(
            f"{op}: operand {fmt_shape(x.shape)} needs {x.ndim} broadcast dimensions, got {broadcast_dimensions}"
        )
    checks.check_axes(op, broadcast_dimensions, len(shape))
    if list(broadcast_dimensions) != sorted(broadcast_dimensions):
        raise ShapeError(f"{op}: broadcast dimensions {broadcast_dimensions} must increase")
    for size, dim in zip(x.shape, broadcast_dimensions, strict=True):
        if size not in (1, shape[dim]):
            raise ShapeError(f"{op}: cannot broadcast {fmt_shape(x.shape)} to {fmt_shape(shape)}")
    return Aval(tuple(shape), x.dtype)


def _broadcast_impl(x: np.ndarray, *, shape, broadcast_dimensions) -> np.ndarray:
    expanded = [1] * len(shape)
    for size, dim in zip(x.shape, broadcast_dimensions, strict=True):
        expanded[dim] = size
    return np.broadcast_to(x.reshape(expanded), shape)


def _broadcast_vjp(g, x, out, *, shape, broadcast_dimensions):
    kept = set(broadcast_dimensions)
    summed = [d for d in range(len(shape)) if d not in kept]
    summed += [d for s, d in zip(x.shape, broadcast_dimensions, strict=True) if s == 1 and shape[d] != 1]
    total = reductions.reduce_sum.bind(g, axes=tuple(sorted(summed))) if summed else g
    return (reshape.bind(total, new_sizes=tuple(x.shape)),)


broadcast_in_dim = register(
    Primitive(
        "broadcast_in_dim",
        _broadcast_rule,
        _broadcast_impl,
        _broadcast_vjp,
        ("shape", "broadcast_dimensions"),
        category=Category.MOVEMENT,
        jvp=derived.LINEAR,
    )
)


def _reshape_rule(x: Aval, *, new_sizes: tuple[int, ...]) -> Aval:
    if any(s < 0 for s in new_sizes) or math.prod(new_sizes) != x.size:
        raise ShapeError(f"reshape: cannot reshape {fmt_shape(x.shape)} into {fmt_shape(new_sizes)}")
    return Aval(tuple(new_sizes), x.dtype)


reshape = register(
    Primitive(
        "reshape",
        _reshape_rule,
        lambda x, *, new_sizes: x.reshape(new_sizes),
        lambda g, x, out, *, new_sizes: (reshape.bind(g, new_sizes=tuple(x.shape)),),
        ("new_sizes",),
        category=Category.MOVEMENT,
        jvp=derived.LINEAR,
    )
)


def _transpose_rule(x: Aval, *, permutation: tuple[int, ...]) -> Aval:
    if sorted(permutation) != list(range(x.ndim)):
        raise ShapeError(f"transpose: {permutation} is not a permutation of the axes of {fmt_shape(x.shape)}")
    return Aval(tuple(x.shape[p] for p in permutation), x.dtype)


transpose = register(
    Primitive(
        "transpose",
        _transpose_rule,
        lambda x, *, permutation: np.transpose(x, permutation),
        lambda g, x, out, *, permutation: (
            transpose.bind(g, permutation=tuple(int(i) for i in np.argsort(permutation))),
        ),
        ("permutation",),
        category=Category.MOVEMENT,
        jvp=derived.LINEAR,
    )
)


def _rev_rule(x: Aval, *, dimensions: tuple[int, ...]) -> Aval:
    checks.check_axes("rev", dimensions, x.ndim)
    return x


rev = register(
    Primitive(
        "rev",
        _rev_rule,
        lambda x, *, dimensions: np.flip(x, dimensions),
        lambda g, x, out, *, dimensions: (rev.bind(g, dimensions=dimensions),),
        ("dimensions",),
        doc="Reverse the order of elements along ``dimensions`` (HLO's ``rev``; negative-step slices).",
        category=Category.MOVEMENT,
        jvp=derived.LINEAR,
    )
)


def _slice_rule(x: Aval, *, start_indices, limit_indices, strides) -> Aval:
    op = "slice"
    if not len(start_indices) == len(limit_indices) == len(strides) == x.ndim:
        raise ShapeError(f"{op}: needs {x.ndim} starts, limits and strides for {fmt_shape(x.shape)}")
    out = []
    for size, lo, hi, st in zip(x.shape, start_indices, limit_indices, strides, strict=True):
        if not (0 <= lo <= hi <= size) or st < 1:
            raise ShapeError(f"{op}: [{lo}:{hi}:{st}] is out of bounds for {fmt_shape(x.shape)}")
        out.append(-(-(hi - lo) // st))
    return Aval(tuple(out), x.dtype)


def _slice_impl(x: np.ndarray, *, start_indices, limit_indices, strides) -> np.ndarray:
    return x[tuple(slice(a, b, s) for a, b, s in zip(start_indices, limit_indices, strides, strict=True))]


def _slice_vjp(g, x, out, *, start_indices, limit_indices, strides):
    high = [
        size - (lo + (n - 1) * st + 1) if n else size - lo
        for size, lo, st, n in zip(x.shape, start_indices, strides, out.shape, strict=True)
    ]
    interior = [st - 1 if n else 0 for st, n in zip(strides, out.shape, strict=True)]
    return (pad.bind(g, low=tuple(start_indices), high=tuple(high), interior=tuple(interior), value=0.0),)


slice_ = register(
    Primitive(
        "slice",
        _slice_rule,
        _slice_impl,
        _slice_vjp,
        ("start_indices", "limit_indices", "strides"),
        category=Category.MOVEMENT,
        jvp=derived.LINEAR,
    )
)


def _pad_rule(x: Aval, *, low, high, interior, value) -> Aval:
    op = "pad"
    if not len(low) == len(high) == len(interior) == x.ndim:
        raise ShapeError(f"{op}: needs {x.ndim} low, high and interior paddings for {fmt_shape(x.shape)}")
    if any(p < 0 for p in (*low, *high, *interior)):
        raise ShapeError(f"{op}: paddings must be non-negative, got {low}, {high}, {interior}")
    shape = tuple(
        lo + hi + size + max(size - 1, 0) * inner
        for size, lo, hi, inner in zip(x.shape, low, high, interior, strict=True)
    )
    return Aval(shape, x.dtype)


def _pad_impl(x: np.ndarray, *, low, high, interior, value) -> np.ndarray:
    shape = _pad_rule(Aval(x.shape, as_dtype(x.dtype)), low=low, high=high, interior=interior, value=value).shape
    out = np.full(shape, value, dtype=x.dtype)
    index = tuple(
        slice(lo, lo + max(size - 1, 0) * (inner + 1) + 1 if size else lo, inner + 1)
        for size, lo, inner in zip(x.shape, low, interior, strict=True)
    )
    out[index] = x
    return out


def _pad_vjp(g, x, out, *, low, high, interior, value):
    limits = tuple(
        lo + max(size - 1, 0) * (inner + 1) + 1 if size else lo
        for size, lo, inner in zip(x.shape, low, interior, strict=True)
    )
    strides = tuple(inner + 1 for inner in interior)
    return (slice_.bind(g, start_indices=tuple(low), limit_indices=limits, strides=strides),)


def _pad_jvp(tangents, x, out, *, low, high, interior, value):
    # Affine in x: the padding value is a constant, whose tangent is zero.
    return pad.bind(tangents[0], low=low, high=high, interior=interior, value=0.0)


pad = register(
    Primitive(
        "pad",
        _pad_rule,
        _pad_impl,
        _pad_vjp,
        ("low", "high", "interior", "value"),
        category=Category.MOVEMENT,
        jvp=_pad_jvp,
    )
)


def _concat_rule(*xs: Aval, dimension: int) -> Aval:
    op = "concatenate"
    if not xs:
        raise ShapeError(f"{op}: needs at least one operand")
    checks.same_dtypes(op, *xs)
    checks.check_axes(op, (dimension,), xs[0].ndim)
    for x in xs[1:]:
        same_rank = x.ndim == xs[0].ndim
        if not same_rank or any(
            a != b for d, (a, b) in enumerate(zip(x.shape, xs[0].shape, strict=True)) if d != dimension
        ):
            shapes = ", ".join(fmt_shape(v.shape) for v in xs)
            raise ShapeError(f"{op}: shapes {shapes} differ outside dimension {dimension}")
    shape = list(xs[0].shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return Aval(tuple(shape), xs[0].dtype)


def _split(g, sizes: Sequence[int], dimension: int) -> tuple:
    parts, offset = [], 0
    for size in sizes:
        start = [0] * len(g.shape)
        limit = list(g.shape)
        start[dimension], limit[dimension] = offset, offset + size
        parts.append(
            slice_.bind(g, start_indices=tuple(start), limit_indices=tuple(limit), strides=(1,) * len(g.shape))
        )
        offset += size
    return tuple(parts)


concatenate = register(
    Primitive(
        "concatenate",
        _concat_rule,
        lambda *xs, dimension: np.concatenate(xs, axis=dimension),
        lambda g, *xs, out, dimension: _split(g, [x.shape[dimension] for x in xs], dimension),
        ("dimension",),
        variadic=True,
        category=Category.MOVEMENT,
        jvp=derived.LINEAR,
    )
)
