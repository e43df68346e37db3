"""Elementwise math with NumPy broadcasting and weak Python scalars."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from braze.ir.dtypes import DType, bool_, int_beyond, weak_result_dtype
from braze.ir.errors import DTypeError
from braze.ir.prims import elementwise as ew
from braze.ir.prims import math as m
from braze.ops.core import as_tensor, astype, broadcast_shapes, broadcast_to, full, is_number, operands, scalar
from braze.tensor import Tensor, user_error


def _unary(primitive, name: str, float_only: bool = True):
    def op(x: Any) -> Tensor:
        x = as_tensor(x)
        if float_only and not x.dtype.is_float:
            raise user_error(DTypeError, f"{name}: expected a float tensor, got {x.dtype.name}{x.shape}")
        return primitive.bind(x)

    op.__name__ = op.__qualname__ = name  # the name it is bound to in this module
    op.__doc__ = f"Elementwise {name}."
    return op


def _rounding(primitive, name: str):
    def op(x: Any) -> Tensor:
        x = as_tensor(x)
        return primitive.bind(x) if x.dtype.is_float else x

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise {name} to an integral value (an integer tensor is its own)."
    return op


def _binary(primitive, name: str, float_only: bool = False):
    def op(x: Any, y: Any) -> Tensor:
        a, b = operands(name, x, y)
        if float_only and not a.dtype.is_float:
            raise user_error(DTypeError, f"{name}: expected float tensors, got {a.dtype.name}")
        return primitive.bind(a, b)

    op.__name__ = op.__qualname__ = name  # the name it is bound to in this module
    op.__doc__ = f"Elementwise {name} with broadcasting."
    return op


negative = _unary(ew.neg, "negative", float_only=False)
exp = _unary(ew.exp, "exp")
log = _unary(ew.log, "log")
sqrt = _unary(ew.sqrt, "sqrt")
rsqrt = _unary(ew.rsqrt, "rsqrt")
tanh = _unary(ew.tanh, "tanh")
erf = _unary(ew.erf, "erf")
sigmoid = _unary(ew.logistic, "sigmoid")
abs = _unary(ew.abs_, "abs", float_only=False)  # noqa: A001 - NumPy's name
sign = _unary(ew.sign, "sign", float_only=False)
relu = _unary(ew.relu, "relu", float_only=False)
sin = _unary(m.sin, "sin")
cos = _unary(m.cos, "cos")
tan = _unary(m.tan, "tan")
asin = _unary(m.asin, "asin")
acos = _unary(m.acos, "acos")
atan = _unary(m.atan, "atan")
sinh = _unary(m.sinh, "sinh")
cosh = _unary(m.cosh, "cosh")
asinh = _unary(m.asinh, "asinh")
acosh = _unary(m.acosh, "acosh")
atanh = _unary(m.atanh, "atanh")
log1p = _unary(m.log1p, "log1p")
expm1 = _unary(m.expm1, "expm1")
floor = _rounding(m.floor, "floor")
ceil = _rounding(m.ceil, "ceil")
trunc = _rounding(m.trunc, "trunc")
round = _rounding(m.round_, "round")  # noqa: A001 - NumPy's name; halves go to even

add = _binary(ew.add, "add")
subtract = _binary(ew.sub, "subtract")
multiply = _binary(ew.mul, "multiply")
maximum = _binary(ew.max_, "maximum")
minimum = _binary(ew.min_, "minimum")


def _comparison(primitive, name: str, holds: Callable[[int, int], bool]):
    """A comparison of tensors and numbers. An integer beyond the range of the integer
    tensor it meets cannot be one of its values, but compares with all of them alike, as
    in NumPy 2 and PyTorch: ``int32_tensor > 2**40`` is all False, where the number would
    not fit the tensor's dtype. ``holds(order, 0)`` is the answer when ``left - right``
    has the sign ``order``."""

    def op(x: Any, y: Any) -> Tensor:
        order = 0
        if (type(y) is int or isinstance(y, np.integer)) and isinstance(x, Tensor):  # only an int lies beyond
            tensor, order = x, -int_beyond(y, _weak_dtype(x, y))
        elif (type(x) is int or isinstance(x, np.integer)) and isinstance(y, Tensor):
            tensor, order = y, int_beyond(x, _weak_dtype(y, x))
        if order:
            return full(tensor.shape, holds(order, 0), bool_, tensor.device)
        a, b = operands(name, x, y)
        return primitive.bind(a, b)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise {name} with broadcasting."
    return op


def _weak_dtype(tensor: Tensor, value: Any) -> DType:
    """The dtype a number takes beside ``tensor`` (its own, for a number of its kind); a
    tensor's own for what is no number."""
    return weak_result_dtype(tensor.dtype, value) if is_number(value) else tensor.dtype


equal = _comparison(ew.eq, "equal", operator.eq)
not_equal = _comparison(ew.ne, "not_equal", operator.ne)
less = _comparison(ew.lt, "less", operator.lt)
less_equal = _comparison(ew.le, "less_equal", operator.le)
greater = _comparison(ew.gt, "greater", operator.gt)
greater_equal = _comparison(ew.ge, "greater_equal", operator.ge)
atan2 = _binary(m.atan2, "atan2", float_only=True)
copysign = _binary(m.copysign, "copysign", float_only=True)
hypot = _binary(m.hypot, "hypot", float_only=True)
nextafter = _binary(m.nextafter, "nextafter", float_only=True)
fmod = _binary(m.rem, "fmod", float_only=True)


def divide(x: Any, y: Any) -> Tensor:
    """True division: integer operands are converted to float32 first, as in NumPy."""
    a, b = operands("divide", x, y)
    if not a.dtype.is_float:
        a, b = astype(a, "float32"), astype(b, "float32")
    return ew.div.bind(a, b)


def floor_divide(x: Any, y: Any) -> Tensor:
    """Division rounding towards minus infinity, as ``//`` (integers: 0 where ``y`` is 0)."""
    a, b = operands("floor_divide", x, y)
    if a.dtype.is_float:
        return _float_divmod(a, b)[0]
    quotient = ew.div.bind(a, b)
    # div truncates toward zero; floor differs when the signs differ and there is a remainder.
    remainder = a - quotient * b
    zero = scalar(0, a.dtype, a.device)
    adjust = (remainder != zero) & ((a < zero) != (b < zero)) & (b != zero)
    return where(adjust, quotient - 1, quotient)


def remainder(x: Any, y: Any) -> Tensor:
    """NumPy's ``x % y``: the sign of ``y`` (integers: 0 where ``y`` is 0)."""
    a, b = operands("remainder", x, y)
    if a.dtype.is_float:
        return _float_divmod(a, b)[1]
    zero = scalar(0, a.dtype, a.device)
    return where(b == zero, zero, a - floor_divide(a, b) * b)


def _float_divmod(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """Python's ``divmod`` of floats, as NumPy computes it from C's fmod (the quotient
    exact where ``a / b`` would round to the next integer); a quotient of one infinite
    operand is ``a / b``, as C99 and the Array API standard give it (NumPy gives NaN)."""
    zero = full(a.shape, 0.0, a.dtype, a.device)
    mod = m.rem.bind(a, b)
    adjust = (mod != zero) & ((b < zero) != (mod < zero))
    quotient = where(adjust, (a - mod) / b - 1.0, (a - mod) / b)
    mod = where(adjust, mod + b, where(mod == zero, m.copysign.bind(zero, b), mod))
    rounded = floor(quotient)
    rounded = where(quotient - rounded > 0.5, rounded + 1.0, rounded)
    ratio = ew.div.bind(a, b)
    rounded = where(quotient == zero, m.copysign.bind(zero, ratio), rounded)
    one_infinite = _is_inf(a) != _is_inf(b)
    return where((b == zero) | one_infinite, ratio, rounded), mod


def _is_inf(x: Tensor) -> Tensor:
    return ew.abs_.bind(x) == float("inf")


def power(x: Any, y: Any) -> Tensor:
    """``x ** y`` elementwise with broadcasting; float tensors only. Every exponent follows
    C99's ``pow`` (as JAX and TensorFlow do): ``x ** 0.5`` is 0.0 at -0.0 and inf at -inf,
    where NumPy and PyTorch take a scalar 0.5 as a square root (-0.0 and nan)."""
    a, b = operands("power", x, y)
    if not a.dtype.is_float:
        raise user_error(DTypeError, f"power: expected float tensors, got {a.dtype.name}")
    return ew.pow_.bind(a, b)


def where(condition: Any, x: Any, y: Any) -> Tensor:
    """Elements of ``x`` where ``condition`` holds, else of ``y`` (all three broadcast)."""
    cond = as_tensor(condition)
    if cond.dtype.name != "bool":
        raise user_error(DTypeError, f"where: the condition must be bool, got {cond.dtype.name}")
    a, b = operands("where", x, y)
    shape = broadcast_shapes("where", cond.shape, a.shape, b.shape)
    return ew.select.bind(*(broadcast_to(t, shape, "where") for t in (cond, a, b)))


def clip(x: Any, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002 - NumPy's names
    """``x`` limited to ``[min, max]`` (either bound may be None), as ``np.clip``: ``x``
    itself where it lies within them (-0.0 at a bound of 0.0 too), its gradient there and
    at a bound (as PyTorch's clamp); where ``min > max``, ``max``; NaN where ``x`` or a
    bound is NaN."""
    out = as_tensor(x)
    if min is not None:
        out = _bounded(out, min, operator.lt)
    if max is not None:
        out = _bounded(out, max, operator.gt)
    return out


def _bounded(x: Tensor, bound: Any, beyond: Callable[[Any, Any], Any]) -> Tensor:
    """``bound`` where ``x`` is ``beyond`` it (or it is NaN), else ``x``: a select, not a
    maximum, which on a tie gives its second operand (+0.0 for -0.0 at a bound of 0.0)."""
    crossed = beyond(x, bound)
    if not (is_number(bound) and bound == bound):  # a tensor's NaNs, or a NaN number, are NaN results
        crossed = crossed | (as_tensor(bound, like=x) != bound)
    return where(crossed, bound, x)


def logical_and(x: Any, y: Any) -> Tensor:
    """Elementwise AND of two bool tensors."""
    return _logical("logical_and", ew.min_, x, y)


def logical_or(x: Any, y: Any) -> Tensor:
    """Elementwise OR of two bool tensors."""
    return _logical("logical_or", ew.max_, x, y)


def logical_not(x: Any) -> Tensor:
    """Elementwise NOT of a bool tensor."""
    x = as_tensor(x)
    if x.dtype.name != "bool":
        raise user_error(DTypeError, f"logical_not: expected a bool tensor, got {x.dtype.name}")
    return ew.eq.bind(x, full(x.shape, False, x.dtype, x.device))


def _logical(name: str, primitive, x: Any, y: Any) -> Tensor:
    a, b = operands(name, x, y)
    if a.dtype.name != "bool":
        raise user_error(DTypeError, f"{name}: expected bool tensors, got {a.dtype.name}")
    return primitive.bind(a, b)
