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
from braze.ir.prims import checks, derived, indexing, sources, structural


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
    # As braze's sums (reduce_sum) and the compiled kernels: narrower floats accumulate in
    # float64, each prefix rounded once to the element type (a float32 running sum drifts,
    # and [1e8, 1, -1e8] would end at 0).
    if x.dtype.kind == "f" and x.dtype.itemsize < 8:
        return np.cumsum(x, axis=dimension, dtype=np.float64).astype(x.dtype)
    with np.errstate(over="ignore"):
        return np.cumsum(x, axis=dimension, dtype=x.dtype)


def _cumprod_impl(x: np.ndarray, *, dimension: int) -> np.ndarray:
    # In the element type, as reduce_prod and NumPy multiply: no prefix escapes its overflow.
    with np.errstate(over="ignore"):
        return np.cumprod(x, axis=dimension, dtype=x.dtype)


def _reverse(x, dimension: int):
    return structural.rev.bind(x, dimensions=(dimension,))


def _cumsum_vjp(g, x, out, *, dimension):
    return (_reverse(cumsum.bind(_reverse(g, dimension), dimension=dimension), dimension),)


def _positions(shape: tuple[int, ...], dimension: int, like):
    return sources.iota.bind(shape=shape, dimension=dimension, dtype=int64, like=like)


def _full(like, value: float):
    """``value`` in ``like``'s shape and dtype (``like * 0.0`` would turn an inf into NaN)."""
    scalar = sources.constant.bind(value=Literal(value, like.dtype), like=like.device)
    return structural.broadcast_in_dim.bind(scalar, shape=tuple(like.shape), broadcast_dimensions=())


def _line(x, dimension: int, start: int, stop: int):
    """Positions ``start`` to ``stop`` of ``x``'s lines along ``dimension``."""
    starts = tuple(start if k == dimension else 0 for k in range(len(x.shape)))
    limits = tuple(stop if k == dimension else size for k, size in enumerate(x.shape))
    return structural.slice_.bind(x, start_indices=starts, limit_indices=limits, strides=(1,) * len(x.shape))


def _recurrence(a, b, dimension: int):
    """h along each line, h_i = b_i + a_i h_(i-1) from h_0 = b_0, without a division (exact
    where ``a`` holds zeros): the doubling scan, in log2(n) steps over whole lines. After
    the step of offset s each (a_i, b_i) is the composition of the 2s steps ending at i
    (those before the line's start are none), so b ends as h. Memory: a few lines' worth,
    where the Jacobian itself is n times that (a line of 2,366 wanted 49 GiB)."""
    d, n = dimension, a.shape[dimension]
    offset = 1
    while offset < n:
        later_a = _line(a, d, offset, n)
        terms = later_a * _line(b, d, 0, n - offset)
        b = structural.concatenate.bind(_line(b, d, 0, offset), _line(b, d, offset, n) + terms, dimension=d)
        a = structural.concatenate.bind(_line(a, d, 0, offset), later_a * _line(a, d, 0, n - offset), dimension=d)
        offset *= 2
    return b


def _cumprod_vjp(g, x, out, *, dimension):
    # x_i gets exclusive(out)_i times S_i = sum over j >= i of g_j times the product of x_k,
    # i < k <= j: S_i = g_i + x_(i+1) S_(i+1), a recurrence along the reversed line.
    d, n = dimension, x.shape[dimension]
    ones = _full(_line(x, d, 0, 1), 1.0)
    following = structural.concatenate.bind(_line(x, d, 1, n), ones, dimension=d)  # x_(i+1); the last, unused
    reversed_sums = _recurrence(_reverse(following, d), _reverse(g, d), d)
    return (exclusive(out, d) * _reverse(reversed_sums, d),)


def _cumprod_jvp(tangents, x, out, *, dimension):
    # T_j = sum over i <= j of exclusive(out)_i t_i times the product of x_k, i < k <= j:
    # T_j = exclusive(out)_j t_j + x_j T_(j-1).
    return _recurrence(x, exclusive(out, dimension) * tangents[0], dimension)


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
    """Each sorted position's index vector into ``x`` (x's shape, then its rank): its own
    position on the other axes, on the line the position its value came from."""
    order = argsort.bind(x, dimension=dimension, descending=descending, dtype=int64)
    shape = tuple(x.shape)
    parts = [order if d == dimension else _positions(shape, d, x.device) for d in range(len(shape))]
    columns = [structural.reshape.bind(p, new_sizes=(*shape, 1)) for p in parts]
    return structural.concatenate.bind(*columns, dimension=len(shape))


def _sort_vjp(g, x, out, *, dimension, descending):
    # Each cotangent goes back to the position its value came from: a scatter, O(n) a line.
    axes = tuple(range(len(x.shape)))
    return (
        indexing.scatter_add.bind(
            g,
            _came_from(x, dimension, descending),
            shape=tuple(x.shape),
            update_window_dims=(),
            inserted_window_dims=axes,
            scatter_dims_to_operand_dims=axes,
        ),
    )


def _sort_jvp(tangents, x, out, *, dimension, descending):
    # The tangent at k is the tangent at the position its value came from: a gather.
    axes = tuple(range(len(x.shape)))
    return indexing.gather.bind(
        tangents[0],
        _came_from(x, dimension, descending),
        offset_dims=(),
        collapsed_slice_dims=axes,
        start_index_map=axes,
        slice_sizes=(1,) * len(axes),
    )


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
