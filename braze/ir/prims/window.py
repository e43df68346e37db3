"""Windowed reductions (pooling) and the pair of primitives that carry max-pool gradients.

``reduce_window`` sums or maxes over sliding windows of any rank. The gradient of a max
window goes through ``select_and_scatter_add`` (each window's cotangent lands on the first
maximal input of that window) whose transpose is ``select_and_gather_add`` (each window
picks the value at its maximal input) and vice versa, as in XLA. Both are linear in their
first operand (the second only chooses where); ``select_and_gather_add`` is also the JVP of
a max window, as in JAX.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from braze.ir.errors import ShapeError
from braze.ir.primitive import Aval, Category, Primitive, register
from braze.ir.prims import checks, derived, structural
from braze.ir.prims.checks import fmt_shape

if TYPE_CHECKING:
    from braze.ir.graph import Node

ATTRS = ("window_dimensions", "window_strides", "padding")
KINDS = ("sum", "max")


def window_output_shape(op: str, shape, window_dimensions, window_strides, padding) -> tuple[int, ...]:
    n = len(shape)
    checks.check_positive(op, "window_dimensions", window_dimensions, n)
    checks.check_positive(op, "window_strides", window_strides, n)
    checks.check_pairs(op, "padding", padding, n)
    out = []
    for size, k, s, (lo, hi) in zip(shape, window_dimensions, window_strides, padding, strict=True):
        if lo < 0 or hi < 0 or size + lo + hi < k:
            raise ShapeError(
                f"{op}: window {tuple(window_dimensions)} with padding {tuple(map(tuple, padding))} "
                f"does not fit {fmt_shape(shape)}"
            )
        out.append((size + lo + hi - k) // s + 1)
    return tuple(out)


def _reduce_window_rule(x: Aval, *, kind, window_dimensions, window_strides, padding) -> Aval:
    if kind not in KINDS:
        raise ShapeError(f"reduce_window: kind must be one of {KINDS}, got {kind!r}")
    checks.require_kinds("reduce_window", x, "if", "a numeric")
    shape = window_output_shape("reduce_window", x.shape, window_dimensions, window_strides, padding)
    return Aval(shape, x.dtype)


def _lowest(dtype: np.dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _windows(x: np.ndarray, fill, window_dimensions, window_strides, padding) -> np.ndarray:
    """A view of shape out_shape + window_dimensions over the padded input."""
    xp = np.pad(x, padding, constant_values=fill)
    view = sliding_window_view(xp, window_dimensions)
    return view[tuple(slice(None, None, s) for s in window_strides)]


def _reduce_window_impl(x, *, kind, window_dimensions, window_strides, padding):
    # One strided slice per window offset, combined elementwise: far faster in NumPy than
    # reducing a sliding-window view whose window axes are innermost.
    fill = 0 if kind == "sum" else _lowest(x.dtype)
    xp = np.pad(x, padding, constant_values=fill)
    out_shape = window_output_shape("reduce_window", x.shape, window_dimensions, window_strides, padding)
    combine = np.add if kind == "sum" else np.maximum
    out = None
    for offset in itertools.product(*(range(k) for k in window_dimensions)):
        part = xp[
            tuple(slice(o, o + (n - 1) * s + 1, s) for o, n, s in zip(offset, out_shape, window_strides, strict=True))
        ]
        out = part.copy() if out is None else combine(out, part, out=out)
    return out


def _pad_or_crop(g, low, high):
    """Pad g with zeros where low/high are positive and crop where they are negative."""
    padded = structural.pad.bind(
        g,
        low=tuple(max(v, 0) for v in low),
        high=tuple(max(v, 0) for v in high),
        interior=(0,) * len(low),
        value=0.0,
    )
    if all(v >= 0 for v in (*low, *high)):
        return padded
    start = tuple(max(-v, 0) for v in low)
    limit = tuple(s - max(-v, 0) for s, v in zip(padded.shape, high, strict=True))
    return structural.slice_.bind(padded, start_indices=start, limit_indices=limit, strides=(1,) * len(low))


def _sum_window_transpose(g, x_shape, window_dimensions, window_strides, padding):
    dilated = structural.pad.bind(
        g,
        low=(0,) * len(x_shape),
        high=(0,) * len(x_shape),
        interior=tuple(s - 1 for s in window_strides),
        value=0.0,
    )
    low = [k - 1 - lo for k, (lo, _) in zip(window_dimensions, padding, strict=True)]
    high = [
        size + lo - (o - 1) * s - 1
        for size, (lo, _), s, o in zip(x_shape, padding, window_strides, g.shape, strict=True)
    ]
    spread = _pad_or_crop(dilated, low, high)
    return reduce_window.bind(
        spread,
        kind="sum",
        window_dimensions=tuple(window_dimensions),
        window_strides=(1,) * len(x_shape),
        padding=((0, 0),) * len(x_shape),
    )


def _reduce_window_vjp(g, x, out, *, kind, window_dimensions, window_strides, padding):
    attrs = {"window_dimensions": window_dimensions, "window_strides": window_strides, "padding": padding}
    if kind == "sum":
        return (_sum_window_transpose(g, tuple(x.shape), **attrs),)
    return (select_and_scatter_add.bind(g, x, **attrs),)


def _reduce_window_jvp(tangents, x, out, *, kind, window_dimensions, window_strides, padding):
    attrs = {"window_dimensions": window_dimensions, "window_strides": window_strides, "padding": padding}
    if kind == "sum":
        return reduce_window.bind(tangents[0], kind="sum", **attrs)
    return select_and_gather_add.bind(tangents[0], x, **attrs)  # each window's tangent at its maximum


reduce_window = register(
    Primitive(
        "reduce_window",
        _reduce_window_rule,
        _reduce_window_impl,
        _reduce_window_vjp,
        ("kind", *ATTRS),
        category=Category.WINDOW,
        jvp=_reduce_window_jvp,
    )
)


def _argmax_flat_index(operand, window_dimensions, window_strides, padding) -> tuple[np.ndarray, tuple]:
    """For every window, the flat index (into the padded operand) of its first maximum."""
    view = _windows(operand, _lowest(operand.dtype), window_dimensions, window_strides, padding)
    n = operand.ndim
    out_shape = view.shape[:n]
    flat = view.reshape(*out_shape, -1)
    best = np.unravel_index(np.argmax(flat, axis=-1), window_dimensions)
    grid = np.indices(out_shape, sparse=True)
    padded_shape = tuple(s + lo + hi for s, (lo, hi) in zip(operand.shape, padding, strict=True))
    coords = tuple(grid[d] * window_strides[d] + best[d] for d in range(n))
    return np.ravel_multi_index(coords, padded_shape), padded_shape


def _crop(xp: np.ndarray, padding) -> np.ndarray:
    return xp[tuple(slice(lo, xp.shape[d] - hi) for d, (lo, hi) in enumerate(padding))]


def _scatter_rule(source: Aval, operand: Aval, *, window_dimensions, window_strides, padding) -> Aval:
    op = "select_and_scatter_add"
    checks.same_dtypes(op, source, operand)
    shape = window_output_shape(op, operand.shape, window_dimensions, window_strides, padding)
    if shape != source.shape:
        raise ShapeError(f"{op}: source {fmt_shape(source.shape)} does not match windows {fmt_shape(shape)}")
    return operand


def _scatter_impl(source, operand, *, window_dimensions, window_strides, padding):
    index, padded_shape = _argmax_flat_index(operand, window_dimensions, window_strides, padding)
    total = np.bincount(index.ravel(), weights=source.ravel(), minlength=int(np.prod(padded_shape)))
    return np.ascontiguousarray(_crop(total.reshape(padded_shape), padding)).astype(operand.dtype)


def _gather_rule(tangents: Aval, operand: Aval, *, window_dimensions, window_strides, padding) -> Aval:
    op = "select_and_gather_add"
    checks.same_dtypes(op, tangents, operand)
    checks.same_shapes(op, tangents, operand)
    shape = window_output_shape(op, operand.shape, window_dimensions, window_strides, padding)
    return Aval(shape, operand.dtype)


def _gather_impl(tangents, operand, *, window_dimensions, window_strides, padding):
    index, _ = _argmax_flat_index(operand, window_dimensions, window_strides, padding)
    return np.pad(tangents, padding).ravel()[index]


select_and_scatter_add = register(
    Primitive(
        "select_and_scatter_add",
        _scatter_rule,
        _scatter_impl,
        lambda ct, source, operand, out, **attrs: (select_and_gather_add.bind(ct, operand, **attrs), None),
        ATTRS,
        category=Category.WINDOW,
        jvp=derived.Linear(0),
    )
)
select_and_gather_add = register(
    Primitive(
        "select_and_gather_add",
        _gather_rule,
        _gather_impl,
        lambda ct, tangents, operand, out, **attrs: (select_and_scatter_add.bind(ct, operand, **attrs), None),
        ATTRS,
        category=Category.WINDOW,
        jvp=derived.Linear(0),
    )
)


MAX_UNROLLED_TAPS = 25  # window taps a kernel writes out one by one


def nhwc_pool_windows(node: Node) -> bool:
    """Windows over H and W only, without padding, of at most MAX_UNROLLED_TAPS taps."""
    windows, steps = node.attr("window_dimensions"), node.attr("window_strides")
    return (
        len(windows) == 4
        and windows[0] == windows[3] == steps[0] == steps[3] == 1
        and windows[1] * windows[2] <= MAX_UNROLLED_TAPS
        and not any(low or high for low, high in node.attr("padding"))
    )


def tiling_windows(node: Node) -> bool:
    """NHWC pool windows that do not overlap: each element is in at most one window."""
    return nhwc_pool_windows(node) and tuple(node.attr("window_dimensions")) == tuple(node.attr("window_strides"))


def scatters_once(node: Node) -> bool:
    """A select_and_scatter_add whose windows tile its operand exactly: every element is
    written once (the window's cotangent or 0), so elementwise readers can join its kernel
    as an epilogue, as they join a dot's or a conv's."""
    if node.op is not select_and_scatter_add or not tiling_windows(node):
        return False
    windows = node.attr("window_dimensions")
    return node.shape[1] % windows[1] == 0 and node.shape[2] % windows[2] == 0
