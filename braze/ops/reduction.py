"""Reductions: sum, prod, mean, var, max, min, argmax, argmin, logsumexp, softmax and
log_softmax."""

from __future__ import annotations

from typing import Any

from braze.ir.dtypes import int32, largest_finite
from braze.ir.errors import DTypeError
from braze.ir.prims import bitwise, reductions, sources, structural
from braze.ir.prims import elementwise as ew
from braze.ops.core import as_tensor, astype, broadcast_to, normalize_axes, normalize_axis, rounded_once
from braze.ops.math import maximum, minimum
from braze.tensor import Tensor, user_error


def _keep(x: Tensor, reduced: Tensor, axes: tuple[int, ...], keepdims: bool) -> Tensor:
    if not keepdims:
        return reduced
    shape = tuple(1 if d in axes else s for d, s in enumerate(x.shape))
    return structural.reshape.bind(reduced, new_sizes=shape)


def sum(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001 - NumPy's name
    """Sum over ``axis`` (all axes when None); booleans are counted as int32."""
    x = as_tensor(x)
    if x.dtype.kind == "b":
        x = astype(x, int32)
    axes = normalize_axes("sum", axis, x.ndim)
    return _keep(x, reductions.reduce_sum.bind(x, axes=axes), axes, keepdims)


def prod(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Product over ``axis`` (all axes when None); booleans are multiplied as int32."""
    x = as_tensor(x)
    if x.dtype.kind == "b":
        x = astype(x, int32)
    axes = normalize_axes("prod", axis, x.ndim)
    return _keep(x, reductions.reduce_prod.bind(x, axes=axes), axes, keepdims)


def max(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001 - NumPy's name
    """The largest element over ``axis`` (all axes when None)."""
    x = as_tensor(x)
    axes = normalize_axes("max", axis, x.ndim)
    _require_nonempty("max", x, axes)
    return _keep(x, reductions.reduce_max.bind(x, axes=axes), axes, keepdims)


def min(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001 - NumPy's name
    """The smallest element over ``axis`` (all axes when None)."""
    x = as_tensor(x)
    if x.dtype.is_float:
        return -max(-x, axis, keepdims)
    # ~x = -x - 1 reverses the order of integers (and bools) and, unlike -x, never overflows.
    return bitwise.not_.bind(max(bitwise.not_.bind(x), axis, keepdims))


def _require_nonempty(op: str, x: Tensor, axes: tuple[int, ...]) -> None:
    if any(x.shape[a] == 0 for a in axes):
        raise user_error(ValueError, f"{op}: cannot reduce an empty axis of shape {x.shape}")


def _count(x: Tensor, axes: tuple[int, ...]) -> int:
    count = 1
    for a in axes:
        count *= x.shape[a]
    return count


@rounded_once
def mean(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The mean over ``axis`` (all axes when None); integer tensors give float32."""
    x = as_tensor(x)
    if not x.dtype.is_float:
        x = astype(x, "float32")
    axes = normalize_axes("mean", axis, x.ndim)
    return sum(x, axes, keepdims) / _count(x, axes)


@rounded_once
def var(x: Any, axis: Any = None, keepdims: bool = False, ddof: int = 0) -> Tensor:
    """Variance with NumPy's default ``ddof=0`` (the population variance); NaN where no
    degrees of freedom are left (``ddof`` >= the count), as the Array API says (NumPy
    divides by zero there)."""
    x = as_tensor(x)
    if not x.dtype.is_float:
        x = astype(x, "float32")
    axes = normalize_axes("var", axis, x.ndim)
    centered = x - mean(x, axes, keepdims=True)
    freedom = _count(x, axes) - ddof
    # Dividing by a count of zero or less would give an infinity or a negative variance.
    return sum(centered * centered, axes, keepdims) / (freedom if freedom > 0 else float("nan"))


def argmax(x: Any, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index (int32) of the first maximum along ``axis`` (of the flattened tensor when
    None); a NaN is the maximum, as in NumPy."""
    x = as_tensor(x)
    if axis is None:
        x = structural.reshape.bind(x, new_sizes=(x.size,))
        axis = 0
    axis = normalize_axis("argmax", axis, x.ndim)
    _require_nonempty("argmax", x, (axis,))
    n = x.shape[axis]
    best = broadcast_to(max(x.detach(), axis, keepdims=True), x.shape)
    # The first maximum has the largest value of (n - index) among the maxima.
    reverse_index = sources.iota.bind(shape=x.shape, dimension=axis, dtype=int32, like=x.device) * -1 + n
    zeros = reverse_index * 0
    value = x.detach()
    found = ew.eq.bind(value, best)
    if x.dtype.is_float:  # where the maximum is NaN, the first NaN
        found = bitwise.or_.bind(found, ew.ne.bind(value, value))
    candidates = ew.select.bind(found, reverse_index, zeros)
    first = -reductions.reduce_max.bind(candidates, axes=(axis,)) + n
    return _keep(x, first, (axis,), keepdims)


def argmin(x: Any, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index (int32) of the first minimum along ``axis`` (of the flattened tensor when None)."""
    x = as_tensor(x)
    flipped = -x if x.dtype.is_float else bitwise.not_.bind(x)  # order-reversing, never overflowing
    return argmax(flipped, axis, keepdims)


@rounded_once
def logsumexp(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` over ``axis``, computed without overflow: -inf where every
    element is -inf, inf where one is inf."""
    x = _float("logsumexp", x)
    axes = normalize_axes("logsumexp", axis, x.ndim)
    # The shift is the maximum of x held to the finite floats: an infinite one would make
    # -inf - -inf or inf - inf a NaN, where the sum is 0 (the result -inf) or inf. Holding
    # x rather than its maximum computes the hold in the maximum's own kernel.
    finite = largest_finite(x.dtype)
    shift = max(minimum(maximum(x.detach(), -finite), finite), axes, keepdims=True)
    out = shift + _log(sum(_exp(x - shift), axes, keepdims=True))
    return out if keepdims else structural.reshape.bind(out, new_sizes=_drop(out.shape, axes))


def _spread(reduced: Tensor, like: Tensor, axes: tuple[int, ...]) -> Tensor:
    """A reduction's result repeated along the reduced ``axes`` to ``like``'s shape."""
    kept = tuple([d for d in range(like.ndim) if d not in axes])
    return structural.broadcast_in_dim.bind(reduced, shape=like.shape, broadcast_dimensions=kept)


def _shifted(op: str, x: Any, axis: int) -> tuple[Tensor, tuple[int, ...]]:
    """``x`` minus its maximum along ``axis`` (a constant for the gradient), and the axes."""
    x = _float(op, x)
    axes = normalize_axes(op, axis, x.ndim)
    _require_nonempty(op, x, axes)
    return x - _spread(reductions.reduce_max.bind(x.detach(), axes=axes), x, axes), axes


@rounded_once
def softmax(x: Any, axis: int = -1) -> Tensor:
    """``exp(x)`` normalized to sum to 1 along ``axis``."""
    shifted, axes = _shifted("softmax", x, axis)
    e = _exp(shifted)
    return e / _spread(reductions.reduce_sum.bind(e, axes=axes), e, axes)


@rounded_once
def log_softmax(x: Any, axis: int = -1) -> Tensor:
    """``log(softmax(x))`` along ``axis``, computed without overflow."""
    shifted, axes = _shifted("log_softmax", x, axis)
    return shifted - _spread(_log(reductions.reduce_sum.bind(_exp(shifted), axes=axes)), shifted, axes)


def _drop(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(s for d, s in enumerate(shape) if d not in axes)


def _float(op: str, x: Any) -> Tensor:
    x = as_tensor(x)
    if not x.dtype.is_float:
        raise user_error(DTypeError, f"{op}: expected a float tensor, got {x.dtype.name}{x.shape}")
    return x


def _exp(x: Tensor) -> Tensor:
    return ew.exp.bind(x)


def _log(x: Tensor) -> Tensor:
    return ew.log.bind(x)
