"""Primitives along one axis whose every result reads the whole line: cumulative sums and
products, and stable sorts (of the values, and of the positions: argsort).

A sort orders NaN after every number (before, descending), as NumPy does, and keeps equal
elements in their order along the line in both directions, as the Array API standard asks;
-0.0 and 0.0 are equal. Their gradients are written with the other primitives: a
cumulative sum's is the reversed cumulative sum, a sort's sends each cotangent back to the
position its value came from, and a cumulative product's is exact where the operand holds
zeros (no division).
"""

from __future__ import annotations

import numpy as np

from braze.ir.dtypes import DType, int64
from braze.ir.errors import DTypeError, ShapeError
from braze.ir.primitive import Aval, Category, Literal, Primitive, register
from braze.ir.prims import checks, derived, elementwise, reductions, sources, structural


def _check_dimension(op: str, x: Aval, dimension: int) -> None:
    if x.ndim == 0:
        raise ShapeError(f"{op}: needs an operand of rank 1 or more, got a scalar")
    checks.check_axes(op, (dimension,), x.ndim)


def _scan_rule(name: str):
    def rule(x: Aval, *, dimension: int) -> Aval:
        checks.require_kinds(name, x, "if", "a numeric")
        _check_dimension(name, x, dimension)
        return x

    return rule


def _cumsum_impl(x: np.ndarray, *, dimension: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.cumsum(x, axis=dimension, dtype=x.dtype)


def _cumprod_impl(x: np.ndarray, *, dimension: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.cumprod(x, axis=dimension, dtype=x.dtype)


def _reverse(x, dimension: int):
    return structural.rev.bind(x, dimensions=(dimension,))


def _cumsum_vjp(g, x, out, *, dimension):
    return (_reverse(cumsum.bind(_reverse(g, dimension), dimension=dimension), dimension),)


def _pairs(x, dimension: int, at: int):
    """``x`` broadcast to its shape with the line's axis ``dimension`` doubled into (i, j),
    the line running along i (``at`` = 0) or along j (``at`` = 1)."""
    shape = (*x.shape[:dimension], x.shape[dimension], *x.shape[dimension:])
    kept = tuple(d if d < dimension else d + 1 for d in range(len(x.shape)))
    if at == 0:
        kept = tuple(d if d <= dimension else d + 1 for d in range(len(x.shape)))
    return structural.broadcast_in_dim.bind(x, shape=shape, broadcast_dimensions=kept)


def _positions(shape: tuple[int, ...], dimension: int, like):
    return sources.iota.bind(shape=shape, dimension=dimension, dtype=int64, like=like)


def _full(like, value: float):
    """``value`` in ``like``'s shape and dtype (``like * 0.0`` would turn an inf into NaN)."""
    scalar = sources.constant.bind(value=Literal(value, like.dtype), like=like.device)
    return structural.broadcast_in_dim.bind(scalar, shape=tuple(like.shape), broadcast_dimensions=())


def _spans(x, dimension: int):
    """For the line's pairs (i along ``dimension``, j after it): prod_{i<k<=j} x_k where
    j >= i, 0 where j < i, so that d out_j / d x_i = exclusive(out)_i * spans[i, j]."""
    d = dimension
    xj = _pairs(x, d, 1)
    shape = tuple(xj.shape)
    i, j = _positions(shape, d, x.device), _positions(shape, d + 1, x.device)
    right = cumprod.bind(elementwise.select.bind(elementwise.gt.bind(j, i), xj, _full(xj, 1.0)), dimension=d + 1)
    return elementwise.select.bind(elementwise.ge.bind(j, i), right, _full(xj, 0.0))


def _cumprod_vjp(g, x, out, *, dimension):
    # The Jacobian exactly, with no division, so exact where the operand holds zeros: each
    # x_i gets exclusive(out)_i times the sum over j of g_j spans[i, j].
    d = dimension
    weighted = reductions.reduce_sum.bind(_spans(x, d) * _pairs(g, d, 1), axes=(d + 1,))
    return (exclusive(out, d) * weighted,)


def _cumprod_jvp(tangents, x, out, *, dimension):
    d = dimension
    started = _pairs(exclusive(out, d) * tangents[0], d, 0)
    return reductions.reduce_sum.bind(_spans(x, d) * started, axes=(d,))


def exclusive(out, dimension: int):
    """The cumulative product before each position: ``out`` shifted by one along the line, 1 first."""
    ndim = len(out.shape)
    low = tuple(1 if k == dimension else 0 for k in range(ndim))
    padded = structural.pad.bind(out, low=low, high=(0,) * ndim, interior=(0,) * ndim, value=1.0)
    return structural.slice_.bind(
        padded, start_indices=(0,) * ndim, limit_indices=tuple(out.shape), strides=(1,) * ndim
    )


cumsum = register(
    Primitive(
        "cumsum",
        _scan_rule("cumsum"),
        _cumsum_impl,
        _cumsum_vjp,
        ("dimension",),
        category=Category.SCAN,
        jvp=derived.LINEAR,
    )
)
cumprod = register(
    Primitive(
        "cumprod",
        _scan_rule("cumprod"),
        _cumprod_impl,
        _cumprod_vjp,
        ("dimension",),
        category=Category.SCAN,
        jvp=_cumprod_jvp,
    )
)


def sorted_positions(x: np.ndarray, dimension: int, descending: bool) -> np.ndarray:
    """The stable order of ``x`` along ``dimension``: NumPy's stable argsort ascending; read
    backwards on the reversed line descending, which keeps ties in their order."""
    if not descending:
        return np.argsort(x, axis=dimension, kind="stable")
    reversed_order = np.argsort(np.flip(x, dimension), axis=dimension, kind="stable")
    return x.shape[dimension] - 1 - np.flip(reversed_order, dimension)


def _sort_rule(x: Aval, *, dimension: int, descending: bool) -> Aval:
    _check_dimension("sort", x, dimension)
    return x


def _sort_impl(x: np.ndarray, *, dimension: int, descending: bool) -> np.ndarray:
    return np.take_along_axis(x, sorted_positions(x, dimension, descending), axis=dimension)


def _came_from(x, dimension: int, descending: bool):
    """For the line's pairs (k along ``dimension``, i after it): whether the value at sorted
    position k came from position i (one i for each k)."""
    order = argsort.bind(x, dimension=dimension, descending=descending, dtype=int64)
    taken = _pairs(order, dimension, 0)
    return elementwise.eq.bind(taken, _positions(tuple(taken.shape), dimension + 1, x.device))


def _sort_vjp(g, x, out, *, dimension, descending):
    # x's cotangent at i is the sum over k of g_k where the value at k came from i.
    spread = _pairs(g, dimension, 0)
    picked = elementwise.select.bind(_came_from(x, dimension, descending), spread, _full(spread, 0.0))
    return (reductions.reduce_sum.bind(picked, axes=(dimension,)),)


def _sort_jvp(tangents, x, out, *, dimension, descending):
    # The tangent at k is the tangent at the position its value came from.
    spread = _pairs(tangents[0], dimension, 1)
    picked = elementwise.select.bind(_came_from(x, dimension, descending), spread, _full(spread, 0.0))
    return reductions.reduce_sum.bind(picked, axes=(dimension + 1,))


def _argsort_rule(x: Aval, *, dimension: int, descending: bool, dtype: DType) -> Aval:
    _check_dimension("argsort", x, dimension)
    if dtype.kind != "i":
        raise DTypeError(f"argsort: positions are integers, got {dtype.name}")
    return Aval(x.shape, dtype)


def _argsort_impl(x: np.ndarray, *, dimension: int, descending: bool, dtype: DType) -> np.ndarray:
    return sorted_positions(x, dimension, descending).astype(dtype.numpy)


sort = register(
    Primitive(
        "sort",
        _sort_rule,
        _sort_impl,
        _sort_vjp,
        ("dimension", "descending"),
        category=Category.SCAN,
        jvp=_sort_jvp,
    )
)
argsort = register(
    Primitive(
        "argsort", _argsort_rule, _argsort_impl, None, ("dimension", "descending", "dtype"), category=Category.SCAN
    )
)
