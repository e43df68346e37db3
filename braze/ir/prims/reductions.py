"""Reductions over a set of axes: sum and max. The reduced axes are removed from the shape;
``keepdims`` is the op library's reshape."""

from __future__ import annotations

import numpy as np

from braze.ir.primitive import Aval, Category, Primitive, register
from braze.ir.prims import checks, derived, elementwise, structural


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


def _max_jvp(tangents, x, out, *, axes):
    # The mean of the tangents at the maxima: the transpose of the VJP's even share.
    mask = _maxima(x, out, axes)
    return reduce_sum.bind(tangents[0] * mask, axes=axes) / reduce_sum.bind(mask, axes=axes)


def _sum_impl(x: np.ndarray, *, axes) -> np.ndarray:
    return np.sum(x, axis=axes, dtype=x.dtype)


def _max_impl(x: np.ndarray, *, axes) -> np.ndarray:
    return np.max(x, axis=axes, initial=_lowest(x.dtype))


def _lowest(dtype: np.dtype):
    return -np.inf if dtype.kind == "f" else (np.iinfo(dtype).min if dtype.kind == "i" else False)


def _reduction(name: str, kinds: str, impl, vjp, jvp) -> Primitive:
    return register(
        Primitive(name, _reduce_rule(name, kinds), impl, vjp, ("axes",), category=Category.REDUCTION, jvp=jvp)
    )


reduce_sum = _reduction("reduce_sum", "if", _sum_impl, _sum_vjp, derived.LINEAR)
reduce_max = _reduction("reduce_max", "bif", _max_impl, _max_vjp, _max_jvp)
