"""Reductions over a set of axes: sum, product and max. The reduced axes are removed from
the shape; ``keepdims`` is the op library's reshape. (A minimum is the op library's
maximum of negated values, or of bitwise-inverted ones for integers, which never overflow.)"""

from __future__ import annotations

import numpy as np

from braze.ir.primitive import Aval, Category, Literal, Primitive, register
from braze.ir.prims import checks, derived, elementwise, scans, sources, structural


def _reduce_rule(name: str, kinds: str):
    def rule(x: Aval, *, axes: tuple[int, ...]) -> Aval:
        checks.require_kinds(name, x, kinds, "a numeric")
        checks.check_axes(name, axes, x.ndim)
        return Aval(tuple(s for d, s in enumerate(x.shape) if d not in axes), x.dtype)

    return rule


def _kept_dims(ndim: int, axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d for d in range(ndim) if d not in axes)


def _expand(value, x, axes):
    return structural.broadcast_in_dim.bind(
        value, shape=tuple(x.shape), broadcast_dimensions=_kept_dims(len(x.shape), axes)
    )


def _sum_vjp(g, x, out, *, axes):
    return (_expand(g, x, axes),)


def _maxima(x, out, axes):
    """1.0 where ``x`` holds its reduction's maximum, else 0.0."""
    return elementwise.convert.bind(elementwise.eq.bind(x, _expand(out, x, axes)), dtype=x.dtype)


def _max_vjp(g, x, out, *, axes):
    # Ties share the cotangent evenly, as in PyTorch's amax and JAX's reduce_max.
    mask = _maxima(x, out, axes)
    count = reduce_sum.bind(mask, axes=axes)
    return (_expand(g / count, x, axes) * mask,)


def _prod_vjp(g, x, out, *, axes):
    # The product of the other elements, without dividing by a zero: the reduced axes move
    # last as one line, whose exclusive cumulative products from both ends are multiplied.
    kept = _kept_dims(len(x.shape), axes)
    order = (*kept, *axes)
    moved = structural.transpose.bind(x, permutation=order) if order != tuple(range(len(order))) else x
    kept_shape = tuple(x.shape[d] for d in kept)
    last = len(kept)
    line = structural.reshape.bind(moved, new_sizes=(*kept_shape, _count(x, axes)))
    before = scans.exclusive(scans.cumprod.bind(line, dimension=last), last)
    flipped = structural.rev.bind(line, dimensions=(last,))
    after = structural.rev.bind(scans.exclusive(scans.cumprod.bind(flipped, dimension=last), last), dimensions=(last,))
    spread = structural.broadcast_in_dim.bind(g, shape=tuple(line.shape), broadcast_dimensions=tuple(range(last)))
    grad = structural.reshape.bind(spread * before * after, new_sizes=tuple(moved.shape))
    if moved is x:
        return (grad,)
    return (structural.transpose.bind(grad, permutation=tuple(int(i) for i in np.argsort(order))),)


def _prod_jvp(tangents, x, out, *, axes):
    # The sum of each tangent times the product of the other elements (the VJP's factor).
    one = sources.constant.bind(value=Literal(1, out.dtype), like=out.device)
    ones = structural.broadcast_in_dim.bind(one, shape=tuple(out.shape), broadcast_dimensions=())
    (others,) = _prod_vjp(ones, x, out, axes=axes)
    return reduce_sum.bind(tangents[0] * others, axes=axes)


def _count(x, axes) -> int:
    count = 1
    for axis in axes:
        count *= x.shape[axis]
    return count


def _max_jvp(tangents, x, out, *, axes):
    # The mean of the tangents at the maxima: the transpose of the VJP's even share.
    mask = _maxima(x, out, axes)
    return reduce_sum.bind(tangents[0] * mask, axes=axes) / reduce_sum.bind(mask, axes=axes)


def _sum_impl(x: np.ndarray, *, axes) -> np.ndarray:
    # NumPy sums pairwise only along the contiguous axis; along another, a float32 running
    # sum of 2^18 elements loses four digits. Narrower floats accumulate in float64.
    if x.dtype.kind == "f" and x.dtype.itemsize < 8:
        return np.sum(x, axis=axes, dtype=np.float64).astype(x.dtype)
    return np.sum(x, axis=axes, dtype=x.dtype)


def _prod_impl(x: np.ndarray, *, axes) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.prod(x, axis=axes, dtype=x.dtype)


def _max_impl(x: np.ndarray, *, axes) -> np.ndarray:
    return np.max(x, axis=axes, initial=_lowest(x.dtype))


def _lowest(dtype: np.dtype):
    return -np.inf if dtype.kind == "f" else (np.iinfo(dtype).min if dtype.kind == "i" else False)


def _reduction(name: str, kinds: str, impl, vjp, jvp) -> Primitive:
    return register(
        Primitive(name, _reduce_rule(name, kinds), impl, vjp, ("axes",), category=Category.REDUCTION, jvp=jvp)
    )


reduce_sum = _reduction("reduce_sum", "if", _sum_impl, _sum_vjp, derived.LINEAR)
reduce_prod = _reduction("reduce_prod", "if", _prod_impl, _prod_vjp, _prod_jvp)
reduce_max = _reduction("reduce_max", "bif", _max_impl, _max_vjp, _max_jvp)
