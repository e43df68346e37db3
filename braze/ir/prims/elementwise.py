"""Elementwise primitives: unary math, binary arithmetic, comparisons, select, convert.

Binary primitives take operands of one shape and one dtype: broadcasting and scalar
promotion are the op library's job, so the IR stays explicit for the compiler. The JVP of
a unary or binary op is its VJP applied to the tangents (``derived.Diagonal``), unless
its declaration gives another.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from braze.ir.dtypes import DType, bool_
from braze.ir.primitive import Aval, Category, Derivation, JVPRule, Primitive, register
from braze.ir.prims import checks, derived, special

NUMERIC = "if"
FLOAT = "f"
ANY = "bif"
_KINDS = {FLOAT: "a float", NUMERIC: "a numeric", ANY: "an", "bi": "an integer or bool", "i": "an integer"}


def _unary_rule(name: str, kinds: str) -> Callable[[Aval], Aval]:
    def rule(x: Aval) -> Aval:
        checks.require_kinds(name, x, kinds, _KINDS[kinds])
        return x

    return rule


def _binary_rule(name: str, kinds: str, result: DType | None = None) -> Callable[..., Aval]:
    def rule(x: Aval, y: Aval) -> Aval:
        shape = checks.same_shapes(name, x, y)
        dtype = checks.same_dtypes(name, x, y)
        checks.require_kinds(name, x, kinds, _KINDS[kinds])
        return Aval(shape, result or dtype)

    return rule


def unary(
    name: str,
    impl: Callable,
    vjp: Callable | None,
    kinds: str = FLOAT,
    jvp: JVPRule | Derivation | None = derived.DIAGONAL,
) -> Primitive:
    """Declare an elementwise primitive of one operand of the dtype ``kinds`` allow (FLOAT,
    NUMERIC, ANY, or "bi" and "i" for bitwise ops), whose result has the operand's type."""
    return register(
        Primitive(name, _unary_rule(name, kinds), impl, vjp, category=Category.UNARY, jvp=_if_differentiable(vjp, jvp))
    )


def binary(
    name: str,
    impl: Callable,
    vjp: Callable | None,
    kinds: str = NUMERIC,
    commutative: bool = False,
    jvp: JVPRule | Derivation | None = derived.DIAGONAL,
) -> Primitive:
    """Declare an elementwise primitive of two operands of one type, whose result has it."""
    rule = _binary_rule(name, kinds)
    return register(
        Primitive(
            name,
            rule,
            impl,
            vjp,
            category=Category.BINARY,
            commutative=commutative,
            jvp=_if_differentiable(vjp, jvp),
        )
    )


def _if_differentiable(vjp: Callable | None, jvp: JVPRule | Derivation | None) -> JVPRule | Derivation | None:
    return None if vjp is None else jvp


def _as_mask(mask, like):
    return convert.bind(mask, dtype=like.dtype)


def _logistic(x: np.ndarray) -> np.ndarray:
    return (1 / (1 + np.exp(-x))).astype(x.dtype, copy=False)


def _relu(x: np.ndarray) -> np.ndarray:
    # + 0: either zero gives +0 whichever operand NumPy's maximum returns on a tie
    return np.maximum(x, x.dtype.type(0)) + x.dtype.type(0)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return (1 / np.sqrt(x)).astype(x.dtype, copy=False)


def _erf_vjp(g, x, out):
    return (g * (exp.bind(-(x * x)) * (2.0 / math.sqrt(math.pi))),)


def _pow_vjp_base(g, x, y):
    # y * x^(y-1) is 0 * inf = NaN at x = 0, y = 0 (so every higher derivative of x^n at
    # 0): where y is 0 the derivative is 0, as in JAX and PyTorch.
    zero = x * 0.0
    return g * select.bind(eq.bind(y, zero), zero, y * pow_.bind(x, y - 1.0))


def _pow_vjp_exponent(g, x, out):
    # d/dy x^y = x^y log x, taken as 0 at x = 0 (JAX's rule: 0^y is 0 or 1 for y >= 0,
    # whatever y); a negative base has no real logarithm, so its derivative is NaN.
    zero = x * 0.0
    return g * out * log.bind(select.bind(eq.bind(x, zero), zero + 1.0, x))


def _divide(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "f":
        return np.divide(x, y)
    # Integer division truncates toward zero, as C and XLA do (NumPy floors); x / 0 is 0.
    # Integers wrap around: INT_MIN / -1 is INT_MIN, as in the compiled code.
    safe = np.where(y == 0, 1, y).astype(x.dtype)
    with np.errstate(over="ignore"):
        floor = np.floor_divide(x, safe)
        inexact = (x - floor * safe) != 0
    return np.where(y == 0, 0, floor + (inexact & ((x < 0) != (safe < 0)))).astype(x.dtype)


def _power(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    # NumPy takes a power whose exponent it broadcasts from one value (a stride of 0) as a
    # square root where that value is 0.5: -0.0 and nan at x = -0.0 and -inf, where C's pow
    # (the compiled kernels') and NumPy's own elementwise power give 0.0 and inf. Each
    # element is given its own exponent, so that every element is a pow.
    shape = np.broadcast_shapes(x.shape, y.shape)
    if y.shape == shape and y.ndim and 0 not in y.strides:
        return np.power(x, y)
    exponent = np.array(np.broadcast_to(y, shape)).reshape(-1)
    return np.power(np.broadcast_to(x, shape).reshape(-1), exponent).reshape(shape)


neg = unary("neg", np.negative, lambda g, x, out: (-g,), NUMERIC)
exp = unary("exp", np.exp, lambda g, x, out: (g * out,))
log = unary("log", np.log, lambda g, x, out: (g / x,))
sqrt = unary("sqrt", np.sqrt, lambda g, x, out: (g * 0.5 / out,))
rsqrt = unary("rsqrt", _rsqrt, lambda g, x, out: (g * out * out * out * -0.5,))
tanh = unary("tanh", np.tanh, lambda g, x, out: (g * (1.0 - out * out),))
erf = unary("erf", special.erf, _erf_vjp)
logistic = unary("logistic", _logistic, lambda g, x, out: (g * out * (1.0 - out),))
abs_ = unary("abs", np.abs, lambda g, x, out: (g * sign.bind(x),), NUMERIC)
sign = unary("sign", np.sign, lambda g, x, out: (None,), NUMERIC)
# max(x, 0) whose gradient reads only the result: g * sign(out) is g where out > 0 and 0
# at x = 0 (as in PyTorch and JAX), so the pre-activation need not be kept and relu joins
# its producer's fused epilogue. At x = NaN the gradient is NaN (JAX gives 0, PyTorch g).
relu = unary("relu", _relu, lambda g, x, out: (g * sign.bind(out),), NUMERIC)

# A binary op's cotangents are thunks where they cost ops: autodiff calls one only when its
# operand needs a gradient, so a product with a constant (a learning rate, a pooling
# divisor) records nothing for the constant's side.
add = binary("add", np.add, lambda g, x, y, out: (g, g), commutative=True)
sub = binary("sub", np.subtract, lambda g, x, y, out: (g, lambda: -g))
mul = binary("mul", np.multiply, lambda g, x, y, out: (lambda: g * y, lambda: g * x), commutative=True)
div = binary("div", _divide, lambda g, x, y, out: (lambda: g / y, lambda: -g * out / y))
pow_ = binary(
    "pow",
    _power,
    lambda g, x, y, out: (lambda: _pow_vjp_base(g, x, y), lambda: _pow_vjp_exponent(g, x, out)),
    FLOAT,
)


def _max_vjp(g, x, y, out):
    # Ties send the whole cotangent to the first operand (relu(0) = max(0, 0) gets it).
    gx = g * _as_mask(ge.bind(x, y), g)
    return gx, g - gx


def _min_vjp(g, x, y, out):
    gx = g * _as_mask(le.bind(x, y), g)
    return gx, g - gx


# Not commutative for CSE: on a tie NumPy's maximum and minimum return their second operand
# (maximum(-0.0, 0.0) is 0.0, maximum(0.0, -0.0) is -0.0), and so does the compiled rule, so
# swapping the operands would change the sign of a zero result.
max_ = binary("max", np.maximum, _max_vjp, ANY)
min_ = binary("min", np.minimum, _min_vjp, ANY)


def _compare(name: str, impl: Callable, commutative: bool = False) -> Primitive:
    rule = _binary_rule(name, ANY, bool_)
    return register(Primitive(name, rule, impl, None, category=Category.COMPARE, commutative=commutative))


eq = _compare("eq", np.equal, commutative=True)
ne = _compare("ne", np.not_equal, commutative=True)
lt = _compare("lt", np.less)
le = _compare("le", np.less_equal)
gt = _compare("gt", np.greater)
ge = _compare("ge", np.greater_equal)


def _select_rule(pred: Aval, on_true: Aval, on_false: Aval) -> Aval:
    checks.same_shapes("select", pred, on_true, on_false)
    if pred.dtype != bool_:
        raise checks.DTypeError(f"select: the predicate must be bool, got {pred.dtype.name}")
    dtype = checks.same_dtypes("select", on_true, on_false)
    return Aval(pred.shape, dtype)


def _select_vjp(g, pred, on_true, on_false, out):
    zeros = g * 0.0
    return None, select.bind(pred, g, zeros), select.bind(pred, zeros, g)


select = register(
    Primitive("select", _select_rule, np.where, _select_vjp, category=Category.SELECT, jvp=derived.Linear(1, 2))
)


def _convert_rule(x: Aval, *, dtype: DType) -> Aval:
    return Aval(x.shape, dtype)


def _convert_impl(x: np.ndarray, *, dtype: DType) -> np.ndarray:
    if dtype.kind != "i" or x.dtype.kind != "f":
        return x.astype(dtype.compute.numpy)  # bfloat16: the reference backend rounds
    # float to integer saturates and sends NaN to 0, as XLA and JAX do (NumPy leaves these
    # to the CPU: INT_MIN on x86 for all of them), and as every backend compiles it.
    bound = 2.0 ** (8 * dtype.itemsize - 1)
    high, low, nan = x >= bound, x <= -bound, np.isnan(x)
    inside = np.where(high | low | nan, 0, x).astype(dtype.numpy)
    limits = np.iinfo(dtype.numpy)
    return np.where(high, limits.max, np.where(low, limits.min, inside)).astype(dtype.numpy, copy=False)


def _convert_vjp(g, x, out, *, dtype: DType):
    if not (x.dtype.is_float and dtype.is_float):
        return (None,)
    return (convert.bind(g, dtype=x.dtype),)


convert = register(
    Primitive(
        "convert", _convert_rule, _convert_impl, _convert_vjp, ("dtype",), category=Category.CONVERT, jvp=derived.LINEAR
    )
)
