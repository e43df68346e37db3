"""Elementwise float math beyond the activations: trigonometric and hyperbolic functions
and their inverses, log1p and expm1, rounding to an integral value, and the binary
atan2, copysign, hypot, nextafter and rem (C's fmod).

Each is C99's function of the same name (``rint`` for ``round``: halves to even), so every
backend's op table calls its math library and NumPy's ufunc is the twin. Their gradients
bind the primitives here and in ``elementwise``; rounding has none (zero almost
everywhere), nor has nextafter.
"""

from __future__ import annotations

import numpy as np

from braze.ir.prims import elementwise as ew

unary, binary = ew.unary, ew.binary


def _square(x):
    return x * x


def _inverse_sqrt(value):
    return ew.rsqrt.bind(value)


def _rounding(name: str, impl):
    return unary(name, impl, lambda g, x, out: (None,))


sin = unary("sin", np.sin, lambda g, x, out: (g * cos.bind(x),))
cos = unary("cos", np.cos, lambda g, x, out: (-(g * sin.bind(x)),))
tan = unary("tan", np.tan, lambda g, x, out: (g * (1.0 + out * out),))
asin = unary("asin", np.arcsin, lambda g, x, out: (g * _inverse_sqrt(1.0 - _square(x)),))
acos = unary("acos", np.arccos, lambda g, x, out: (-(g * _inverse_sqrt(1.0 - _square(x))),))
atan = unary("atan", np.arctan, lambda g, x, out: (g / (1.0 + _square(x)),))
sinh = unary("sinh", np.sinh, lambda g, x, out: (g * cosh.bind(x),))
cosh = unary("cosh", np.cosh, lambda g, x, out: (g * sinh.bind(x),))
asinh = unary("asinh", np.arcsinh, lambda g, x, out: (g * _inverse_sqrt(_square(x) + 1.0),))
# 1 / sqrt((x - 1)(x + 1)) rather than of x^2 - 1, which loses the digits near x = 1.
acosh = unary("acosh", np.arccosh, lambda g, x, out: (g * _inverse_sqrt((x - 1.0) * (x + 1.0)),))
atanh = unary("atanh", np.arctanh, lambda g, x, out: (g / ((1.0 - x) * (1.0 + x)),))
log1p = unary("log1p", np.log1p, lambda g, x, out: (g / (x + 1.0),))
expm1 = unary("expm1", np.expm1, lambda g, x, out: (g * (out + 1.0),))
floor = _rounding("floor", np.floor)
ceil = _rounding("ceil", np.ceil)
trunc = _rounding("trunc", np.trunc)
round_ = _rounding("round", np.rint)


def _atan2_vjp(g, y, x, out):
    def scaled(numerator):
        return lambda: g * numerator / (_square(x) + _square(y))

    return scaled(x), scaled(-y)


def _copysign_vjp(g, x, y, out):
    # d|x| sign(y) / dx = sign(x) sign(y); sign(out) is sign(y) wherever x is not 0. The
    # result does not change with y but at its zeros, so y's cotangent is 0 (as in JAX).
    return (lambda: g * ew.sign.bind(x) * ew.sign.bind(out)), (lambda: g * 0.0)


def _hypot_vjp(g, x, y, out):
    return (lambda: g * x / out), (lambda: g * y / out)


def _rem_vjp(g, x, y, out):
    # x = q y + out with q the integer trunc(x / y); (x - out) / y is q but for rounding.
    return g, lambda: -(g * round_.bind((x - out) / y))


atan2 = binary("atan2", np.arctan2, _atan2_vjp, ew.FLOAT)
copysign = binary("copysign", np.copysign, _copysign_vjp, ew.FLOAT)
hypot = binary("hypot", np.hypot, _hypot_vjp, ew.FLOAT, commutative=True)
nextafter = binary("nextafter", np.nextafter, None, ew.FLOAT)
rem = binary("rem", np.fmod, _rem_vjp, ew.FLOAT)
