"""The standard's elementwise functions: braze's ops after the standard's promotion.

Each function promotes its operands (``dtypes.promoted``), calls the braze op of the same
meaning and returns an Array. What braze has no primitive for is composed: ``logaddexp``
from the maximum and ``log1p``, ``log2`` and ``log10`` from ``log`` (exact at powers of the
base), integer powers by
repeated squaring, ``signbit`` from ``copysign``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import braze.ops as ops
from braze.array_api.array_object import Array, wrap
from braze.array_api.dtypes import promoted
from braze.ir.dtypes import bool_, int_beyond
from braze.ir.errors import DTypeError
from braze.ops.core import full
from braze.tensor import Tensor


def as_array(x: Any, op: str) -> Tensor:
    """``x`` when it is an array; the standard's functions take no lists or scalars here."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected an array, got {type(x).__name__}")
    return x


def _unary(native: Callable[[Tensor], Tensor], name: str) -> Callable[[Any], Array]:
    def function(x: Any, /) -> Array:
        return wrap(native(as_array(x, name)))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"Elementwise {name} (the Array API's)."
    return function


def _binary(native: Callable[[Tensor, Tensor], Tensor], name: str) -> Callable[[Any, Any], Array]:
    def function(x1: Any, x2: Any, /) -> Array:
        return wrap(native(*promoted(x1, x2)))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"Elementwise {name} of two arrays or an array and a scalar, promoted and broadcast."
    return function


def _comparison(native: Callable[[Tensor, Tensor], Tensor], name: str) -> Callable[[Any, Any], Array]:
    def function(x1: Any, x2: Any, /) -> Array:
        for array, number in ((x1, x2), (x2, x1)):
            if isinstance(array, Tensor) and int_beyond(number, array.dtype):
                # An integer no value of the array's dtype: braze's comparison answers for
                # every element alike, where promotion would first store it in that dtype.
                return wrap(native(x1, x2))
        return wrap(native(*promoted(x1, x2)))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"Elementwise {name} of two arrays or an array and a scalar, promoted and broadcast."
    return function


abs = _unary(ops.abs, "abs")  # noqa: A001 - the standard's names
acos = _unary(ops.acos, "acos")
acosh = _unary(ops.acosh, "acosh")
asin = _unary(ops.asin, "asin")
asinh = _unary(ops.asinh, "asinh")
atan = _unary(ops.atan, "atan")
atanh = _unary(ops.atanh, "atanh")
bitwise_invert = _unary(ops.bitwise_not, "bitwise_invert")
ceil = _unary(ops.ceil, "ceil")
cos = _unary(ops.cos, "cos")
cosh = _unary(ops.cosh, "cosh")
exp = _unary(ops.exp, "exp")
expm1 = _unary(ops.expm1, "expm1")
floor = _unary(ops.floor, "floor")
log = _unary(ops.log, "log")
log1p = _unary(ops.log1p, "log1p")
logical_not = _unary(ops.logical_not, "logical_not")
negative = _unary(ops.negative, "negative")
round = _unary(ops.round, "round")  # noqa: A001
sign = _unary(ops.sign, "sign")
sin = _unary(ops.sin, "sin")
sinh = _unary(ops.sinh, "sinh")
sqrt = _unary(ops.sqrt, "sqrt")
tan = _unary(ops.tan, "tan")
tanh = _unary(ops.tanh, "tanh")
trunc = _unary(ops.trunc, "trunc")

add = _binary(ops.add, "add")
atan2 = _binary(ops.atan2, "atan2")
bitwise_and = _binary(ops.bitwise_and, "bitwise_and")
bitwise_left_shift = _binary(ops.bitwise_left_shift, "bitwise_left_shift")
bitwise_or = _binary(ops.bitwise_or, "bitwise_or")
bitwise_right_shift = _binary(ops.bitwise_right_shift, "bitwise_right_shift")
bitwise_xor = _binary(ops.bitwise_xor, "bitwise_xor")
copysign = _binary(ops.copysign, "copysign")
divide = _binary(ops.divide, "divide")
equal = _comparison(ops.equal, "equal")
floor_divide = _binary(ops.floor_divide, "floor_divide")
greater = _comparison(ops.greater, "greater")
greater_equal = _comparison(ops.greater_equal, "greater_equal")
hypot = _binary(ops.hypot, "hypot")
less = _comparison(ops.less, "less")
less_equal = _comparison(ops.less_equal, "less_equal")
logical_and = _binary(ops.logical_and, "logical_and")
logical_or = _binary(ops.logical_or, "logical_or")
maximum = _binary(ops.maximum, "maximum")
minimum = _binary(ops.minimum, "minimum")
multiply = _binary(ops.multiply, "multiply")
nextafter = _binary(ops.nextafter, "nextafter")
not_equal = _comparison(ops.not_equal, "not_equal")
remainder = _binary(ops.remainder, "remainder")
subtract = _binary(ops.subtract, "subtract")


def logical_xor(x1: Any, x2: Any, /) -> Array:
    """Elementwise exclusive or of two bool arrays."""
    a, b = promoted(x1, x2)
    if a.dtype is not bool_:
        raise DTypeError(f"logical_xor: expected bool arrays, got {a.dtype.name}")
    return wrap(ops.bitwise_xor(a, b))


def _integer_power(base: Tensor, exponent: Tensor) -> Tensor:
    """``base ** exponent`` of integers by repeated squaring, wrapping as products do; a
    negative exponent gives what the bits give (the standard leaves it undefined)."""
    result = ops.full_like(base, 1) + exponent * 0
    factor = base + exponent * 0
    remaining = exponent + base * 0
    for _ in range(8 * base.dtype.itemsize - 1):
        result = ops.where((remaining & 1) == 1, result * factor, result)
        factor = factor * factor
        remaining = remaining >> 1
    return result


def pow(x1: Any, x2: Any, /) -> Array:  # noqa: A001 - the standard's name
    """``x1 ** x2``, of floats (C99's ``pow``) or of integers (wrapping)."""
    a, b = promoted(x1, x2)
    if a.dtype.kind == "b":
        raise DTypeError("pow: expected numeric arrays, got bool")
    return wrap(ops.power(a, b) if a.dtype.is_float else _integer_power(a, b))


def logaddexp(x1: Any, x2: Any, /) -> Array:
    """``log(exp(x1) + exp(x2))`` without overflow: the larger plus ``log1p(exp(smaller -
    larger))``, both chosen by one where, so that where ``x1 == x2`` the gradients are 1/2
    each (maximum's and abs's derivatives at a tie would give 1 and 0)."""
    a, b = promoted(x1, x2)
    first = a >= b
    larger = ops.where(first, a, b)
    tail = ops.log1p(ops.exp(ops.where(first, b - a, a - b)))
    return wrap(ops.where(ops.abs(larger) == math.inf, larger, larger + tail))


def _float_only(name: str, x: Any) -> Tensor:
    x = as_array(x, name)
    if not x.dtype.is_float:
        raise DTypeError(f"{name}: expected a floating array, got {x.dtype.name}")
    return x


def _log_base(name: str, x: Any, base: float) -> Array:
    """``log(x) / log(base)``, exact where ``x`` is a power of ``base`` (``log2(8.0)`` is
    3.0, as C's ``log2`` gives; the quotient alone can miss it by an ulp, and a floor of it
    by one). There the value is the nearest integer ``n``; the derivative is the
    quotient's everywhere."""
    x = _float_only(name, x)
    quotient = ops.log(x) * (1 / math.log(base))
    near = quotient.detach()
    n = ops.round(near)
    if base == 2:  # every power of two is a float, and NumPy's pow and C's give it exactly
        power = ops.power(2.0, n)
    else:
        # 10**k is a float up to 10**22 (10**10 in float32), which pow gives exactly; 10**-k
        # is none, but 1 / 10**k rounds to the float nearest it (as 1e-k parses), the same
        # in NumPy and C, whose pows round 10**-k differently.
        largest = 22 if x.dtype.itemsize == 8 else 10
        power = ops.where(ops.abs(n) <= largest, ops.power(10.0, ops.abs(n)), math.nan)
        power = ops.where(n >= 0, power, 1.0 / power)
    exact = (power == x.detach()) & (ops.abs(n) < math.inf)  # log(0) and log(inf) stay infinite
    return wrap(quotient + ops.where(exact, n - near, 0.0))  # n - near is exact: they are an ulp apart


def log2(x: Any, /) -> Array:
    """Elementwise base-2 logarithm."""
    return _log_base("log2", x, 2.0)


def log10(x: Any, /) -> Array:
    """Elementwise base-10 logarithm."""
    return _log_base("log10", x, 10.0)


def reciprocal(x: Any, /) -> Array:
    """Elementwise ``1 / x``."""
    return wrap(1.0 / _float_only("reciprocal", x))


def square(x: Any, /) -> Array:
    """Elementwise ``x * x``."""
    x = as_array(x, "square")
    return wrap(x * x)


def positive(x: Any, /) -> Array:
    """Elementwise ``+x``: a new array of the same values."""
    return wrap(as_array(x, "positive"))


def _classified(name: str, x: Any, test: Callable[[Tensor], Tensor], integers: bool) -> Array:
    x = as_array(x, name)
    if x.dtype.is_float:
        return wrap(test(x))
    return wrap(full(x.shape, integers, bool_, x.device))


def isnan(x: Any, /) -> Array:
    """Whether each element is NaN."""
    return _classified("isnan", x, lambda v: v != v, False)


def isinf(x: Any, /) -> Array:
    """Whether each element is an infinity."""
    return _classified("isinf", x, lambda v: ops.abs(v) == math.inf, False)


def isfinite(x: Any, /) -> Array:
    """Whether each element is neither infinite nor NaN."""
    return _classified("isfinite", x, lambda v: ops.abs(v) < math.inf, True)


def signbit(x: Any, /) -> Array:
    """Whether each element's sign bit is set (-0.0 and a negative NaN included)."""
    x = as_array(x, "signbit")
    if x.dtype.is_float:
        return wrap(ops.copysign(ops.full_like(x, 1.0), x) < 0)
    return wrap(x < 0 if x.dtype.kind == "i" else full(x.shape, False, bool_, x.device))


def clip(x: Any, /, min: Any = None, max: Any = None) -> Array:  # noqa: A002 - the standard's names
    """``x`` limited to ``[min, max]`` (arrays or scalars; either may be None), of ``x``'s
    dtype and shape; a NaN bound gives NaN."""
    x = as_array(x, "clip")
    out = x
    for bound, limit in ((min, ops.maximum), (max, ops.minimum)):
        if bound is not None:
            value = ops.astype(bound, x.dtype) if isinstance(bound, Tensor) else ops.as_tensor(bound, x.dtype, like=x)
            out = limit(out, value)
    return wrap(ops.broadcast_to(out, x.shape, "clip"))


def conj(x: Any, /) -> Array:
    """The complex conjugate: a real array's own values (braze has no complex dtypes)."""
    return wrap(as_array(x, "conj"))


def real(x: Any, /) -> Array:
    """The real part: a real array's own values."""
    return wrap(as_array(x, "real"))


def imag(x: Any, /) -> Array:
    """The imaginary part: zeros for a real array."""
    return wrap(ops.zeros_like(as_array(x, "imag")))
