"""Elementwise math with NumPy broadcasting and weak Python scalars."""

from __future__ import annotations

from typing import Any

from braze.ir.errors import DTypeError
from braze.ir.prims import elementwise as ew
from braze.ops.core import as_tensor, astype, broadcast_shapes, broadcast_to, full, operands, scalar
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


def _binary(primitive, name: str):
    def op(x: Any, y: Any) -> Tensor:
        a, b = operands(name, x, y)
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
sigmoid = _unary(ew.logistic, "sigmoid")
abs = _unary(ew.abs_, "abs", float_only=False)  # noqa: A001 - NumPy's name
sign = _unary(ew.sign, "sign", float_only=False)
relu = _unary(ew.relu, "relu", float_only=False)

add = _binary(ew.add, "add")
subtract = _binary(ew.sub, "subtract")
multiply = _binary(ew.mul, "multiply")
maximum = _binary(ew.max_, "maximum")
minimum = _binary(ew.min_, "minimum")
equal = _binary(ew.eq, "equal")
not_equal = _binary(ew.ne, "not_equal")
less = _binary(ew.lt, "less")
less_equal = _binary(ew.le, "less_equal")
greater = _binary(ew.gt, "greater")
greater_equal = _binary(ew.ge, "greater_equal")


def divide(x: Any, y: Any) -> Tensor:
    """True division: integer operands are converted to float32 first, as in NumPy."""
    a, b = operands("divide", x, y)
    if not a.dtype.is_float:
        a, b = astype(a, "float32"), astype(b, "float32")
    return ew.div.bind(a, b)


def floor_divide(x: Any, y: Any) -> Tensor:
    """Integer division rounding towards minus infinity, as ``//``; integer tensors only."""
    a, b = operands("floor_divide", x, y)
    if a.dtype.is_float:
        raise user_error(DTypeError, "floor_divide: only integer tensors are supported; use divide")
    quotient = ew.div.bind(a, b)
    # div truncates toward zero; floor differs when the signs differ and there is a remainder.
    remainder = a - quotient * b
    zero = scalar(0, a.dtype, a.device)
    adjust = (remainder != zero) & ((a < zero) != (b < zero)) & (b != zero)
    return where(adjust, quotient - 1, quotient)


def remainder(x: Any, y: Any) -> Tensor:
    """NumPy's ``x % y`` of integers: the sign of ``y``, 0 where ``y`` is 0."""
    a, b = operands("remainder", x, y)
    if a.dtype.is_float:
        raise user_error(DTypeError, "remainder: only integer tensors are supported")
    zero = scalar(0, a.dtype, a.device)
    return where(b == zero, zero, a - floor_divide(a, b) * b)


def power(x: Any, y: Any) -> Tensor:
    """``x ** y`` elementwise with broadcasting; float tensors only."""
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
    """``x`` limited to ``[min, max]`` (either bound may be None), as ``np.clip``."""
    out = as_tensor(x)
    if max is not None:
        out = minimum(out, max)
    if min is not None:
        out = maximum(out, min)
    return out


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
