"""The op table: every public op with a NumPy reference, shared by every backend's tests.

Each case builds its inputs from a seed, so the eager, lazy and compiled runs of one case
see the same numbers. ``grad=True`` cases are also checked against float64 finite
differences with respect to every float argument.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import braze
from braze.ir.dtypes import as_dtype, storage_array
from braze.ir.prims.collectives import all_reduce
from braze.ir.prims.indexing import scatter_add


@dataclass(frozen=True)
class Arg:
    shape: tuple[int, ...]
    dtype: str = "float32"
    low: float = -2.0
    high: float = 2.0
    values: tuple = ()  # given values instead of random ones

    def make(self, rng: np.random.Generator, dtype_override: str | None = None) -> np.ndarray:
        dtype = dtype_override if dtype_override and self.dtype.startswith("float") else self.dtype
        if self.values:
            return storage_array(self.values, as_dtype(dtype)).reshape(self.shape)
        if dtype == "bool":
            return rng.random(self.shape) < 0.5
        if dtype.startswith("int"):
            return rng.integers(int(self.low), int(self.high), self.shape).astype(dtype)
        return storage_array(rng.uniform(self.low, self.high, self.shape), as_dtype(dtype))


@dataclass(frozen=True)
class OpCase:
    name: str
    fn: Callable
    ref: Callable
    args: tuple[Arg, ...]
    grad: bool = True
    rtol: float = 1e-5
    atol: float = 1e-6
    kwargs: dict = field(default_factory=dict)

    def inputs(self, dtype_override: str | None = None) -> list[np.ndarray]:
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))  # the same inputs in every process
        return [a.make(rng, dtype_override) for a in self.args]


def F(*shape: int, low: float = -2.0, high: float = 2.0) -> Arg:
    return Arg(tuple(shape), "float32", low, high)


def I(*shape: int, low: int = -5, high: int = 5) -> Arg:  # noqa: E743
    return Arg(tuple(shape), "int32", low, high)


def B(*shape: int) -> Arg:
    return Arg(tuple(shape), "bool")


def Edges(dtype: str, *values: float) -> Arg:  # noqa: N802 - read as a constructor, as F and I
    """The given ``values`` (the edges of ``dtype``'s range), in that order."""
    return Arg((len(values),), dtype, values=values)


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# Integer edges: wrap-around, the one overflowing quotient (INT_MIN / -1) and division by 0,
# which NumPy answers with 0. Compiled code must give what NumPy gives, never what C leaves
# undefined (GCC folds x + 1 > x to true; INT_MIN / -1 traps on x86).
EDGE32 = Edges("int32", INT32_MAX, INT32_MIN, INT32_MIN, -7, 7, 0, INT32_MIN, INT32_MAX, -1, 5)
DIVISORS32 = Edges("int32", -1, -1, 1, 2, -2, 3, 0, 0, -1, INT32_MIN)
EDGE64 = Edges("int64", INT64_MAX, INT64_MIN, INT64_MIN, -7, 7, 0, INT64_MIN, INT64_MAX, -1, 5)
DIVISORS64 = Edges("int64", -1, -1, 1, 2, -2, 3, 0, 0, -1, INT64_MIN)
# Floats that C's conversion to an integer leaves undefined, and the bounds around them.
UNREPRESENTABLE = (float("nan"), float("inf"), -float("inf"), 3e9, -3e9, 2.0**31, -(2.0**31), 2.5, -2.5, 1e19, -1e19)


def _saturated(values: np.ndarray, dtype: type) -> np.ndarray:
    """XLA's and JAX's float-to-integer rule, element by element: truncate, saturate, NaN to 0."""
    limits = np.iinfo(dtype)
    out = [
        0 if v != v else limits.max if v >= limits.max else limits.min if v <= limits.min else int(v) for v in values
    ]
    return np.array(out, dtype)


def _wrapping(fn: Callable) -> Callable:
    """``fn`` on NumPy integers, which wrap around (NumPy warns of the overflow)."""

    def quiet(*arrays):
        with np.errstate(over="ignore", divide="ignore"):
            return fn(*arrays)

    return quiet


POS = {"low": 0.5, "high": 3.0}
AWAY = {"low": 0.2, "high": 2.0}


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _same_padding(size: int, k: int, s: int) -> tuple[int, int]:
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2


def conv_ref(x, w, stride=(1, 1), padding=((0, 0), (0, 0)), dilation=(1, 1)):
    """Direct convolution: one output pixel at a time over the kernel taps."""
    if padding == "SAME":
        span = [(k - 1) * d + 1 for k, d in zip(w.shape[:2], dilation, strict=True)]
        padding = tuple(_same_padding(x.shape[1 + i], span[i], stride[i]) for i in range(2))
    xp = np.pad(x, ((0, 0), padding[0], padding[1], (0, 0)))
    kh, kw, _, o = w.shape
    oh = (xp.shape[1] - ((kh - 1) * dilation[0] + 1)) // stride[0] + 1
    ow = (xp.shape[2] - ((kw - 1) * dilation[1] + 1)) // stride[1] + 1
    out = np.zeros((x.shape[0], oh, ow, o), dtype=np.float64)
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for b in range(kw):
                    pixel = xp[:, i * stride[0] + a * dilation[0], j * stride[1] + b * dilation[1], :]
                    out[:, i, j, :] += pixel.astype(np.float64) @ w[a, b].astype(np.float64)
    return out.astype(x.dtype)


def conv_transpose_ref(x, w, out_hw, stride=(1, 1), padding="VALID", dilation=(1, 1)):
    """Transposed convolution as a scatter: each input pixel adds its channels times every
    kernel tap at the output pixel that tap reaches, then the padding is cut away."""
    span = [(k - 1) * d + 1 for k, d in zip(w.shape[:2], dilation, strict=True)]
    pads = [(0, 0), (0, 0)]
    if padding == "SAME":
        pads = [_same_padding(out_hw[i], span[i], stride[i]) for i in range(2)]
    kh, kw, o, _ = w.shape
    full = np.zeros((x.shape[0], out_hw[0] + sum(pads[0]) + span[0], out_hw[1] + sum(pads[1]) + span[1], o))
    for i in range(x.shape[1]):
        for j in range(x.shape[2]):
            for a in range(kh):
                for b in range(kw):
                    row, col = i * stride[0] + a * dilation[0], j * stride[1] + b * dilation[1]
                    full[:, row, col, :] += x[:, i, j, :].astype(np.float64) @ w[a, b].astype(np.float64).T
    top, left = pads[0][0], pads[1][0]
    return full[:, top : top + out_hw[0], left : left + out_hw[1], :].astype(x.dtype)


def depthwise_ref(x, w, stride=(1, 1), padding="VALID", dilation=(1, 1)):
    """Each channel's own direct convolution with its ``multiplier`` filters, output channel
    ``c * multiplier + k`` (TensorFlow's order)."""
    channels, multiplier = w.shape[2], w.shape[3]
    per_channel = [
        conv_ref(
            x[..., c : c + 1], w[:, :, c : c + 1, :], stride, padding if padding == "SAME" else ((0, 0),) * 2, dilation
        )
        for c in range(channels)
    ]
    return np.concatenate(per_channel, axis=-1).reshape(*per_channel[0].shape[:3], channels * multiplier)


def pool_ref(x, size, stride, kind, same=False):
    padding = [(0, 0), (0, 0)]
    if same:
        padding = [_same_padding(x.shape[1 + i], size, stride) for i in range(2)]
    fill = -np.inf if kind == "max" else np.nan
    xp = np.pad(x.astype(np.float64), ((0, 0), padding[0], padding[1], (0, 0)), constant_values=fill)
    oh = (xp.shape[1] - size) // stride + 1
    ow = (xp.shape[2] - size) // stride + 1
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, i * stride : i * stride + size, j * stride : j * stride + size, :]
            out[:, i, j, :] = patch.max(axis=(1, 2)) if kind == "max" else np.nanmean(patch, axis=(1, 2))
    return out.astype(x.dtype)


def _erf(x):
    return np.vectorize(math.erf)(x.astype(np.float64)).astype(x.dtype)


def Indices(shape: tuple[int, ...], *values: int, dtype: str = "int32") -> Arg:  # noqa: N802 - as F and I
    """Integer indices with the given values: duplicates, both ends of an axis, negatives."""
    return Arg(shape, dtype, values=values)


def _scatter_rows_ref(updates, indices, rows):
    out = np.zeros((rows, *updates.shape[indices.ndim - 1 :]), updates.dtype)
    np.add.at(out, np.clip(indices[..., 0], 0, rows - 1), updates)
    return out


def _floor_div_ref(a, b):
    b = np.where(b == 0, 1, b)
    return np.floor_divide(a, b)


def _rnn_scan(h, xs):
    """A scan with a nonlinear carry and its steps stacked, reversed: the loop node."""

    def step(c, x):
        c = braze.tanh(c * 0.7 + x)
        return c, c * x

    final, ys = braze.lax.scan(step, h, xs, reverse=True)
    return ys + final


def _rnn_scan_ref(h, xs):
    ys = np.empty_like(xs)
    for i in reversed(range(len(xs))):
        h = np.tanh(h * 0.7 + xs[i])
        ys[i] = h * xs[i]
    return ys + h


def _fori_ref(x):
    for i in range(1, 4):
        x = np.sin(x) * i
    return x


def _while_ref(x):
    while np.abs(x).sum() > 1.0:
        x = x * 0.5
    return x


CASES: list[OpCase] = [
    # Elementwise unary
    OpCase("negative", braze.negative, np.negative, (F(3, 4),)),
    OpCase("exp", braze.exp, np.exp, (F(3, 4),)),
    OpCase("log", braze.log, np.log, (F(3, 4, **POS),)),
    OpCase("sqrt", braze.sqrt, np.sqrt, (F(3, 4, **POS),)),
    OpCase("rsqrt", braze.rsqrt, lambda x: 1 / np.sqrt(x), (F(3, 4, **POS),)),
    OpCase("tanh", braze.tanh, np.tanh, (F(3, 4),)),
    OpCase("sigmoid", braze.sigmoid, _sigmoid, (F(3, 4),)),
    OpCase("erf", braze.erf, _erf, (F(4, 5, low=-4.5, high=4.5),)),
    OpCase("erf_method", lambda x: x.erf() * 2.0, lambda x: _erf(x) * 2, (F(7, low=-0.9, high=0.9),)),
    OpCase("abs", braze.abs, np.abs, (F(3, 4, **AWAY),)),
    OpCase("abs_int", braze.abs, np.abs, (I(3, 4),), grad=False),
    OpCase("sign", braze.sign, np.sign, (F(3, 4),), grad=False),
    OpCase("relu", braze.relu, lambda x: np.maximum(x, 0), (F(3, 4),)),
    OpCase("relu_int", braze.relu, lambda x: np.maximum(x, 0), (I(3, 4),), grad=False),
    # Trigonometric, hyperbolic, log1p/expm1 and rounding (C99's math library)
    OpCase("sin", braze.sin, np.sin, (F(3, 4, low=-3.0, high=3.0),)),
    OpCase("cos", braze.cos, np.cos, (F(3, 4, low=-3.0, high=3.0),)),
    OpCase("tan", braze.tan, np.tan, (F(3, 4, low=-1.2, high=1.2),)),
    OpCase("asin", braze.asin, np.arcsin, (F(3, 4, low=-0.9, high=0.9),)),
    OpCase("acos", braze.acos, np.arccos, (F(3, 4, low=-0.9, high=0.9),)),
    OpCase("atan", braze.atan, np.arctan, (F(3, 4, low=-4.0, high=4.0),)),
    OpCase("sinh", braze.sinh, np.sinh, (F(3, 4),)),
    OpCase("cosh", braze.cosh, np.cosh, (F(3, 4),)),
    OpCase("asinh", braze.asinh, np.arcsinh, (F(3, 4, low=-4.0, high=4.0),)),
    OpCase("acosh", braze.acosh, np.arccosh, (F(3, 4, low=1.2, high=4.0),)),
    OpCase("atanh", braze.atanh, np.arctanh, (F(3, 4, low=-0.9, high=0.9),)),
    OpCase("log1p", braze.log1p, np.log1p, (F(3, 4, low=-0.9, high=3.0),)),
    OpCase("log1p_tiny", braze.log1p, np.log1p, (F(6, low=-1e-6, high=1e-6),), atol=1e-12),
    OpCase("expm1", braze.expm1, np.expm1, (F(3, 4),)),
    OpCase("expm1_tiny", braze.expm1, np.expm1, (F(6, low=-1e-6, high=1e-6),), atol=1e-12),
    OpCase("floor", braze.floor, np.floor, (F(3, 4, low=-5.0, high=5.0),), grad=False),
    OpCase("ceil", braze.ceil, np.ceil, (F(3, 4, low=-5.0, high=5.0),), grad=False),
    OpCase("trunc", braze.trunc, np.trunc, (F(3, 4, low=-5.0, high=5.0),), grad=False),
    OpCase("round", braze.round, np.rint, (F(3, 4, low=-5.0, high=5.0),), grad=False),
    OpCase("round_halves", braze.round, np.rint, (Edges("float32", -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5),), grad=False),
    # An integer is its own floor (the same tensor back): the product makes a computed result
    OpCase("floor_int", lambda x: braze.floor(x) * 3, lambda x: x * 3, (I(5),), grad=False),
    OpCase("atan2", braze.atan2, np.arctan2, (F(3, 4), F(3, 4, **AWAY))),
    OpCase("copysign", braze.copysign, np.copysign, (F(3, 4, **AWAY), F(4))),
    OpCase("hypot", braze.hypot, np.hypot, (F(3, 4, **AWAY), F(3, 4))),
    OpCase("nextafter", braze.nextafter, np.nextafter, (F(3, 4), F(3, 4)), grad=False),
    OpCase("fmod", braze.fmod, np.fmod, (F(3, 4, low=-6.0, high=6.0), F(3, 4, **POS))),
    OpCase(
        "floor_divide_float", braze.floor_divide, np.floor_divide, (F(12, low=-9, high=9), F(12, **AWAY)), grad=False
    ),
    OpCase("remainder_float", braze.remainder, np.remainder, (F(12, low=-9, high=9), F(12, **AWAY)), grad=False),
    OpCase(
        "floor_divide_float_edges",
        braze.floor_divide,
        np.floor_divide,
        (
            Edges("float64", 7.0, -7.0, 7.0, -7.0, 0.0, -0.0, 1.0, 5.0),
            Edges("float64", 2.0, 2.0, -2.0, -2.0, 3.0, 3.0, -0.5, 0.1),
        ),
        grad=False,
    ),
    OpCase(
        "remainder_float_edges",
        braze.remainder,
        np.remainder,
        (
            Edges("float64", 7.0, -7.0, 7.0, -7.0, 0.0, -0.0, 6.0, 5.0),
            Edges("float64", 2.0, 2.0, -2.0, -2.0, 3.0, -3.0, -3.0, 0.1),
        ),
        grad=False,
    ),
    # Bitwise ops of integers and bools; shifts past the width give NumPy's answers
    OpCase("bitwise_and", braze.bitwise_and, np.bitwise_and, (EDGE32, DIVISORS32), grad=False),
    OpCase("bitwise_or", braze.bitwise_or, np.bitwise_or, (EDGE64, DIVISORS64), grad=False),
    OpCase(
        "bitwise_xor",
        lambda a, b: a ^ b,
        np.bitwise_xor,
        (I(4, 5, low=-99, high=99), I(5, low=-99, high=99)),
        grad=False,
    ),
    OpCase("bitwise_and_bool", lambda a, b: a & b, np.logical_and, (B(6), B(6)), grad=False),
    OpCase("bitwise_not", braze.bitwise_not, np.invert, (EDGE32,), grad=False),
    OpCase("bitwise_not_bool", lambda x: ~x, np.logical_not, (B(6),), grad=False),
    OpCase(
        "bitwise_left_shift",
        braze.bitwise_left_shift,
        _wrapping(lambda x, y: np.where(y < 32, np.left_shift(x, np.minimum(y, 31)), 0).astype(x.dtype)),
        (EDGE32, Edges("int32", 0, 1, 31, 3, 40, 5, 32, 1, 2, 33)),
        grad=False,
    ),
    OpCase(
        "bitwise_right_shift",
        lambda x, y: x >> y,
        lambda x, y: np.where(y < 64, np.right_shift(x, np.minimum(y, 63)), np.where(x < 0, -1, 0)).astype(x.dtype),
        (EDGE64, Edges("int64", 0, 1, 63, 3, 70, 5, 64, 1, 2, 65)),
        grad=False,
    ),
    # Elementwise binary, with broadcasting and scalars
    OpCase("add", braze.add, np.add, (F(3, 4), F(3, 4))),
    OpCase("add_broadcast", braze.add, np.add, (F(3, 1, 4), F(5, 1))),
    OpCase("add_scalar", lambda x: x + 2.5, lambda x: x + np.float32(2.5), (F(3, 4),)),
    OpCase("rsub_scalar", lambda x: 1.0 - x, lambda x: np.float32(1.0) - x, (F(3, 4),)),
    OpCase("subtract", braze.subtract, np.subtract, (F(2, 3), F(3))),
    OpCase("multiply", braze.multiply, np.multiply, (F(2, 3), F(2, 1))),
    OpCase("divide", braze.divide, np.divide, (F(2, 3), F(2, 3, **POS))),
    OpCase("rdivide_scalar", lambda x: 2.0 / x, lambda x: np.float32(2.0) / x, (F(4, **POS),)),
    OpCase(
        "divide_int", braze.divide, lambda a, b: (a / b).astype(np.float32), (I(6), I(6, low=1, high=4)), grad=False
    ),
    OpCase(
        "floor_divide", braze.floor_divide, _floor_div_ref, (I(20, low=-9, high=9), I(20, low=1, high=4)), grad=False
    ),
    OpCase(
        "remainder",
        lambda a, b: a % b,
        _wrapping(np.remainder),
        (I(20, low=-9, high=9), I(20, low=-4, high=4)),
        grad=False,
    ),
    OpCase("power", braze.power, np.power, (F(2, 3, **POS), F(2, 3))),
    OpCase("power_scalar", lambda x: x**2.0, lambda x: x**2, (F(2, 3),)),
    OpCase("maximum", braze.maximum, np.maximum, (F(3, 4), F(3, 4))),
    OpCase("minimum", braze.minimum, np.minimum, (F(3, 4), F(4))),
    OpCase(
        "int_add_float_scalar", lambda x: x * 0.5, lambda x: x.astype(np.float32) * np.float32(0.5), (I(5),), grad=False
    ),
    # Comparisons and selection
    OpCase("equal", braze.equal, np.equal, (I(4, 5, low=0, high=3), I(4, 5, low=0, high=3)), grad=False),
    OpCase("not_equal", braze.not_equal, np.not_equal, (I(4, 5, low=0, high=3), I(5, low=0, high=3)), grad=False),
    OpCase("less", braze.less, np.less, (F(4, 5), F(4, 5)), grad=False),
    OpCase("less_equal", braze.less_equal, np.less_equal, (F(4, 5), F(4, 5)), grad=False),
    OpCase("greater", braze.greater, np.greater, (F(4, 5), F(4, 5)), grad=False),
    OpCase("greater_equal", braze.greater_equal, np.greater_equal, (F(4, 5), F(4, 5)), grad=False),
    OpCase("logical_and", braze.logical_and, np.logical_and, (B(6), B(6)), grad=False),
    OpCase("logical_or", braze.logical_or, np.logical_or, (B(6), B(6)), grad=False),
    OpCase("logical_not", braze.logical_not, np.logical_not, (B(6),), grad=False),
    OpCase("where", lambda c, a, b: braze.where(c, a, b), np.where, (B(3, 4), F(3, 4), F(4))),
    OpCase("clip", lambda x: braze.clip(x, -0.5, 0.7), lambda x: np.clip(x, -0.5, 0.7), (F(4, 5),)),
    OpCase("astype", lambda x: x.astype("int32"), lambda x: x.astype(np.int32), (F(6, low=-9, high=9),), grad=False),
    # Integers at the edges of their range, and floats no integer holds.
    *(
        OpCase(f"{name}_{bits}", fn, _wrapping(ref), args, grad=False)
        for bits, (edge, divisors) in {"int32": (EDGE32, DIVISORS32), "int64": (EDGE64, DIVISORS64)}.items()
        for name, fn, ref, args in [
            ("add_wraps", lambda x: x + 1, lambda x: x + x.dtype.type(1), (edge,)),
            ("add_wraps_compared", lambda x: (x + 1) > x, lambda x: (x + x.dtype.type(1)) > x, (edge,)),
            ("multiply_wraps", lambda x: (x * 2) // 2, lambda x: (x * x.dtype.type(2)) // x.dtype.type(2), (edge,)),
            ("subtract_wraps", lambda x, y: x - y, np.subtract, (edge, divisors)),
            ("negative_wraps", braze.negative, np.negative, (edge,)),
            ("abs_wraps", braze.abs, np.abs, (edge,)),
            ("floor_divide_edges", braze.floor_divide, np.floor_divide, (edge, divisors)),
            ("remainder_edges", braze.remainder, np.remainder, (edge, divisors)),
            ("sum_wraps", braze.sum, lambda x: np.sum(x, dtype=x.dtype), (edge,)),
        ]
    ),
    *(
        OpCase(
            f"astype_{source}_to_{bits}",
            lambda x, b=bits: x.astype(b),
            lambda x, d=bits: _saturated(x, d),
            args,
            grad=False,
        )
        for source in ("float32", "float64")
        for bits in ("int32", "int64")
        for args in [(Edges(source, *UNREPRESENTABLE),)]
    ),
    OpCase("astype_float64", lambda x: braze.astype(x, "float64") * 2.0, lambda x: x.astype(np.float64) * 2, (F(6),)),
    # Reductions
    OpCase("sum_all", braze.sum, np.sum, (F(3, 4),), rtol=1e-5),
    OpCase("sum_axis", lambda x: braze.sum(x, axis=1), lambda x: x.sum(axis=1), (F(3, 4, 5),)),
    OpCase(
        "sum_keepdims", lambda x: x.sum((0, 2), keepdims=True), lambda x: x.sum((0, 2), keepdims=True), (F(3, 4, 5),)
    ),
    OpCase("sum_bool", braze.sum, lambda x: np.sum(x).astype(np.int32), (B(7, 3),), grad=False),
    OpCase("mean", lambda x: braze.mean(x, axis=-1), lambda x: x.mean(axis=-1), (F(3, 4),)),
    OpCase("var", lambda x: braze.var(x, axis=0), lambda x: x.var(axis=0), (F(5, 3),), rtol=1e-4),
    OpCase("max", lambda x: braze.max(x, axis=1), lambda x: x.max(axis=1), (F(3, 6),)),
    OpCase("max_all", braze.max, np.max, (F(3, 6),)),
    OpCase("min", lambda x: braze.min(x, axis=0, keepdims=True), lambda x: x.min(axis=0, keepdims=True), (F(3, 6),)),
    OpCase(
        "argmax", lambda x: braze.argmax(x, axis=1), lambda x: x.argmax(axis=1).astype(np.int32), (F(5, 7),), grad=False
    ),
    OpCase("argmax_flat", braze.argmax, lambda x: np.int32(x.argmax()), (F(5, 7),), grad=False),
    OpCase(
        "argmax_ties",
        lambda x: braze.argmax(x, axis=1),
        lambda x: x.argmax(axis=1).astype(np.int32),
        (I(6, 4, low=0, high=2),),
        grad=False,
    ),
    OpCase("prod", lambda x: braze.prod(x, axis=1), lambda x: x.prod(axis=1), (F(3, 5, low=0.5, high=1.5),)),
    OpCase(
        "prod_axes", lambda x: x.prod((0, 2), keepdims=True), lambda x: x.prod((0, 2), keepdims=True), (F(2, 3, 4),)
    ),
    OpCase(  # a zero among the factors: the gradient of each other factor is still exact
        "prod_zero",
        lambda x: braze.prod(x, axis=0),
        lambda x: x.prod(axis=0),
        (Arg((4, 2), values=(0.0, 1.5, 2.0, 0.0, -3.0, 0.5, 0.5, 0.0)),),
    ),
    OpCase("prod_int", braze.prod, lambda x: np.prod(x, dtype=x.dtype), (EDGE32,), grad=False),
    OpCase("min_int_edges", braze.min, np.min, (EDGE32,), grad=False),
    OpCase("max_int_edges", braze.max, np.max, (EDGE64,), grad=False),
    OpCase(
        "argmin", lambda x: braze.argmin(x, axis=0), lambda x: x.argmin(axis=0).astype(np.int32), (F(5, 7),), grad=False
    ),
    OpCase("argmin_edges", braze.argmin, lambda x: np.int32(x.argmin()), (EDGE32,), grad=False),
    OpCase(
        "argmax_nan",
        lambda x: braze.argmax(x, axis=1),
        lambda x: x.argmax(axis=1).astype(np.int32),
        (Arg((2, 3), values=(1.0, float("nan"), 2.0, 0.5, 3.0, float("nan"))),),
        grad=False,
    ),
    # Scans: cumulative sums and products, stable sorts
    OpCase("cumsum", lambda x: braze.cumsum(x, axis=1), lambda x: np.cumsum(x, axis=1), (F(3, 6),)),
    OpCase("cumsum_flat", braze.cumsum, lambda x: np.cumsum(x), (F(3, 4),)),
    OpCase(
        "cumsum_int",
        lambda x: braze.cumsum(x, axis=0),
        _wrapping(lambda x: np.cumsum(x, dtype=x.dtype)),
        (EDGE32,),
        grad=False,
    ),
    OpCase(
        "cumprod", lambda x: braze.cumprod(x, axis=0), lambda x: np.cumprod(x, axis=0), (F(5, 3, low=0.5, high=1.5),)
    ),
    OpCase(  # zeros along the line: the gradient needs no division
        "cumprod_zero",
        lambda x: braze.cumprod(x, axis=1),
        lambda x: np.cumprod(x, axis=1),
        (Arg((2, 4), values=(1.5, 0.0, 2.0, -1.0, 0.0, 0.5, 0.0, 3.0)),),
    ),
    OpCase("sort", lambda x: braze.sort(x, axis=0), lambda x: np.sort(x, axis=0), (F(6, 3),)),
    OpCase("sort_last", braze.sort, np.sort, (F(3, 37),)),
    OpCase("sort_descending", lambda x: braze.sort(x, descending=True), lambda x: -np.sort(-x), (F(4, 9),)),
    OpCase(
        "sort_nan",
        braze.sort,
        np.sort,
        (Arg((7,), values=(2.0, float("nan"), -1.0, float("inf"), -0.0, float("nan"), -float("inf"))),),
        grad=False,
    ),
    OpCase(
        "argsort",
        lambda x: braze.argsort(x, axis=1),
        lambda x: np.argsort(x, axis=1, kind="stable").astype(np.int32),
        (I(4, 11, low=0, high=4),),  # ties: a stable sort keeps them in order
        grad=False,
    ),
    OpCase(
        "argsort_descending",
        lambda x: braze.argsort(x, axis=0, descending=True),
        lambda x: (x.shape[0] - 1 - np.flip(np.argsort(np.flip(x, 0), axis=0, kind="stable"), 0)).astype(np.int32),
        (I(9, 3, low=0, high=3),),
        grad=False,
    ),
    OpCase("logsumexp", lambda x: braze.logsumexp(x, axis=1), lambda x: np.log(np.exp(x).sum(axis=1)), (F(3, 5),)),
    OpCase("softmax", braze.softmax, _softmax, (F(4, 6),)),
    OpCase("softmax_axis0", lambda x: braze.softmax(x, axis=0), lambda x: _softmax(x, 0), (F(4, 6),)),
    OpCase("log_softmax", braze.log_softmax, lambda x: np.log(_softmax(x)), (F(4, 6),)),
    # Linear algebra
    OpCase("matmul", braze.matmul, np.matmul, (F(3, 4), F(4, 5))),
    OpCase("matmul_operator", lambda a, b: a @ b, np.matmul, (F(3, 4), F(4, 2))),
    OpCase("matmul_vector", braze.matmul, np.matmul, (F(4), F(4, 3))),
    OpCase("matmul_matvec", braze.matmul, np.matmul, (F(3, 4), F(4))),
    OpCase("matmul_batched", braze.matmul, np.matmul, (F(2, 3, 4), F(2, 4, 5))),
    OpCase("matmul_broadcast_batch", braze.matmul, np.matmul, (F(2, 1, 3, 4), F(3, 4, 2))),
    OpCase("matmul_3d_2d", braze.matmul, np.matmul, (F(2, 3, 4), F(4, 5))),
    OpCase("matmul_wide", braze.matmul, np.matmul, (F(13, 37), F(37, 50))),  # register tiles and their remainders
    OpCase("matmul_parallel", braze.matmul, np.matmul, (F(64, 48), F(48, 96))),  # enough work for threads
    OpCase("matmul_int", braze.matmul, np.matmul, (I(3, 4), I(4, 2)), grad=False),
    *(
        OpCase(f"einsum_{name}", lambda *xs, eq=eq: braze.einsum(eq, *xs), lambda *xs, eq=eq: np.einsum(eq, *xs), args)
        for name, eq, args in (
            ("heads", "bhqk,bkhd->bqhd", (F(2, 3, 4, 5), F(2, 5, 3, 2))),
            ("chain", "abc,cd,de->abe", (F(2, 3, 4), F(4, 5), F(5, 2))),
            ("reduce", "abc->b", (F(2, 3, 4),)),
        )
    ),
    # Shapes and indexing
    OpCase("reshape", lambda x: x.reshape(4, -1), lambda x: x.reshape(4, -1), (F(2, 3, 4),)),
    OpCase("transpose", lambda x: braze.transpose(x, (2, 0, 1)), lambda x: x.transpose(2, 0, 1), (F(2, 3, 4),)),
    OpCase("transpose_T", lambda x: x.T, lambda x: x.T, (F(2, 3),)),
    OpCase("flatten", lambda x: braze.flatten(x, 1), lambda x: x.reshape(x.shape[0], -1), (F(2, 3, 4),)),
    OpCase("squeeze", lambda x: braze.squeeze(x, 1), lambda x: x.squeeze(1), (F(3, 1, 2),)),
    OpCase("expand_dims", lambda x: braze.expand_dims(x, -1), lambda x: x[..., None], (F(3, 2),)),
    OpCase(
        "broadcast_to", lambda x: braze.broadcast_to(x, (4, 3, 2)), lambda x: np.broadcast_to(x, (4, 3, 2)), (F(3, 1),)
    ),
    OpCase(
        "concatenate",
        lambda a, b: braze.concatenate([a, b], axis=1),
        lambda a, b: np.concatenate([a, b], axis=1),
        (F(2, 3), F(2, 4)),
    ),
    OpCase(
        "stack", lambda a, b: braze.stack([a, b], axis=-1), lambda a, b: np.stack([a, b], axis=-1), (F(2, 3), F(2, 3))
    ),
    OpCase(
        "pad",
        lambda x: braze.pad(x, ((1, 2), (0, 3)), value=0.5),
        lambda x: np.pad(x, ((1, 2), (0, 3)), constant_values=0.5),
        (F(2, 3),),
    ),
    OpCase("getitem_int", lambda x: x[1], lambda x: x[1], (F(3, 4),)),
    OpCase("getitem_slices", lambda x: x[1:, ::2], lambda x: x[1:, ::2], (F(4, 5),)),
    OpCase("getitem_mixed", lambda x: x[..., 1:3, -1], lambda x: x[..., 1:3, -1], (F(2, 4, 5),)),
    OpCase("getitem_newaxis", lambda x: x[None, :, 2], lambda x: x[None, :, 2], (F(3, 4),)),
    OpCase("getitem_reversed", lambda x: x[::-1, 3:0:-2], lambda x: x[::-1, 3:0:-2], (F(4, 5),)),
    OpCase("getitem_reversed_strided", lambda x: x[1, ::-3, -2::-1], lambda x: x[1, ::-3, -2::-1], (F(2, 7, 5),)),
    OpCase("flip", lambda x: braze.flip(x, (0, 2)), lambda x: np.flip(x, (0, 2)), (F(2, 3, 4),)),
    # Integer-array indexing: duplicate indices (their gradients add up), both ends, negatives
    OpCase("getitem_rows", lambda x, i: x[i], lambda x, i: x[i], (F(7, 3), Indices((2, 4), 0, 6, -7, 3, 3, -1, 0, 6))),
    OpCase(
        "getitem_row_indices_int64",
        lambda x, i: x[i] * 2.0,
        lambda x, i: x[i] * 2,
        (F(5, 2, 3), Indices((3,), 4, 4, -5, dtype="int64")),
    ),
    OpCase(
        "getitem_arrays_apart",
        lambda x, i, j: x[i, :, j],
        lambda x, i, j: x[i, :, j],
        (F(4, 3, 5), Indices((3,), 0, 3, 3), Indices((2, 1), -1, 0)),
    ),
    OpCase(
        "getitem_arrays_adjacent",
        lambda x, i: x[1:, i, [0, 2]],
        lambda x, i: x[1:, i, [0, 2]],
        (F(3, 4, 3), Indices((2, 1), 3, -4)),
    ),
    OpCase(
        "take",
        lambda x, i: braze.take(x, i, axis=1),
        lambda x, i: np.take(x, i, axis=1),
        (F(3, 5, 2), Indices((2, 3), 0, 4, 4, -5, -1, 2)),
    ),
    OpCase("take_flat", braze.take, np.take, (F(3, 4), Indices((5,), 11, 0, -12, 5, 5))),
    OpCase(
        "take_along_axis",
        lambda x, i: braze.take_along_axis(x, i, axis=1),
        lambda x, i: np.take_along_axis(x, i, axis=1),
        (F(3, 5, 4), I(3, 6, 4, low=-5, high=5)),
    ),
    OpCase(
        "take_along_axis_broadcast",
        lambda x, i: braze.take_along_axis(x, i, axis=-1),
        lambda x, i: np.take_along_axis(x, i, axis=-1),
        (F(2, 1, 6), Indices((1, 3, 2), 5, 5, 0, -6, 2, 1)),
    ),
    OpCase(  # the gradient of a row gather, applied on its own; indices past the end are clamped
        "scatter_add_rows",
        lambda u, i: scatter_add.bind(
            u,
            i,
            shape=(4, 3),
            update_window_dims=(2,),
            inserted_window_dims=(0,),
            scatter_dims_to_operand_dims=(0,),
        ),
        lambda u, i: _scatter_rows_ref(u, i, 4),
        (F(2, 3, 3), Indices((2, 3, 1), 0, 3, 3, 1, 3, 7)),
    ),
    # PyTorch's spellings of the same moves
    OpCase("view", lambda x: x.view(3, -1, 2), lambda x: x.reshape(3, -1, 2), (F(2, 3, 4),)),
    OpCase("permute", lambda x: x.permute(0, 3, 1, 2), lambda x: x.transpose(0, 3, 1, 2), (F(2, 3, 4, 5),)),
    OpCase("swapaxes", lambda x: braze.swapaxes(x, 0, -1), lambda x: np.swapaxes(x, 0, -1), (F(2, 3, 4),)),
    OpCase("transpose_swap", lambda x: x.transpose(-2, -1), lambda x: np.swapaxes(x, -2, -1), (F(2, 3, 4, 5),)),
    OpCase("unsqueeze", lambda x: x.unsqueeze(1), lambda x: x[:, None], (F(3, 2),)),
    OpCase("split", lambda x: x.split(2, dim=1)[-1] * 2.0, lambda x: x[:, 4:] * 2, (F(3, 5),)),
    OpCase(
        "split_sections",
        lambda x: braze.concatenate(x.split([1, 3, 1], dim=-1)[::-1], -1),
        lambda x: np.concatenate([x[:, 4:], x[:, 1:4], x[:, :1]], -1),
        (F(2, 5),),
    ),
    OpCase(
        "chunk",
        lambda x: braze.concatenate(braze.chunk(x, 3, dim=0)[1:], 1),
        lambda x: np.concatenate([x[3:6], x[6:9]], 1),
        (F(9, 2),),
    ),
    OpCase(
        "masked_fill",
        lambda x, m: x.masked_fill(m, -1.5),
        lambda x, m: np.where(m, np.float32(-1.5), x),
        (F(2, 3, 4), B(3, 4)),
    ),
    OpCase("tril", braze.tril, np.tril, (F(2, 4, 5),)),
    OpCase("tril_diagonal", lambda x: braze.tril(x, -1), lambda x: np.tril(x, -1), (F(5, 3),)),
    OpCase("triu", lambda x: x.triu(1), lambda x: np.triu(x, 1), (F(3, 4),)),
    OpCase("triu_int", braze.triu, np.triu, (I(4, 4),), grad=False),
    OpCase(
        "topk",
        lambda x: braze.topk(x, 3)[0],
        lambda x: -np.sort(-x, axis=-1)[..., :3],
        (F(4, 7),),
    ),
    OpCase(
        "topk_indices_ties",
        lambda x: braze.topk(x, 4, dim=0)[1],
        lambda x: np.argsort(-x, axis=0, kind="stable")[:4].astype(np.int32),
        (I(6, 3, low=0, high=3),),
        grad=False,
    ),
    OpCase(
        "topk_smallest",
        lambda x: x.topk(2, dim=1, largest=False)[0],
        lambda x: np.sort(x, axis=1)[:, :2],
        (F(3, 5, 2),),
    ),
    OpCase(
        "one_hot",
        lambda x: braze.one_hot(x, 5),
        lambda x: np.eye(5, dtype=np.float32)[x],
        (I(6, low=0, high=5),),
        grad=False,
    ),
    # Convolution and pooling (NHWC / HWIO)
    OpCase("conv2d_valid", braze.conv2d, conv_ref, (F(2, 7, 6, 3), F(3, 2, 3, 4))),
    OpCase(
        "conv2d_same",
        lambda x, w: braze.conv2d(x, w, padding="SAME"),
        lambda x, w: conv_ref(x, w, padding="SAME"),
        (F(2, 6, 6, 2), F(5, 5, 2, 3)),
    ),
    OpCase(
        "conv2d_stride2_same",
        lambda x, w: braze.conv2d(x, w, stride=2, padding="SAME"),
        lambda x, w: conv_ref(x, w, stride=(2, 2), padding="SAME"),
        (F(2, 7, 8, 2), F(3, 3, 2, 3)),
    ),
    OpCase(
        "conv2d_one_channel_same",
        lambda x, w: braze.conv2d(x, w, padding="SAME"),
        lambda x, w: conv_ref(x, w, padding="SAME"),
        (F(3, 20, 20, 1), F(5, 5, 1, 6)),
    ),
    OpCase(
        "conv2d_many_filters",
        lambda x, w: braze.conv2d(x, w, padding="SAME"),
        lambda x, w: conv_ref(x, w, padding="SAME"),
        (F(2, 9, 19, 3), F(3, 3, 3, 16)),
    ),
    OpCase(
        "conv2d_wide_filters",  # output channels fill two float32 vectors (four float64)
        braze.conv2d,
        conv_ref,
        (F(3, 9, 21, 5), F(3, 3, 5, 32)),  # an odd number of output rows (21)
    ),
    OpCase("conv2d_many_output_channels", braze.conv2d, conv_ref, (F(2, 3, 4, 2), F(1, 2, 2, 512))),
    OpCase(
        "conv2d_wide_strided_dilated",
        lambda x, w: braze.conv2d(x, w, stride=(2, 1), dilation=(1, 2)),
        lambda x, w: conv_ref(x, w, stride=(2, 1), dilation=(1, 2)),
        (F(2, 9, 11, 3), F(2, 3, 3, 16)),
    ),
    OpCase("conv2d_one_channel_narrow", braze.conv2d, conv_ref, (F(2, 9, 12, 1), F(3, 2, 1, 3))),
    OpCase(
        "conv2d_dilation",
        lambda x, w: braze.conv2d(x, w, dilation=2),
        lambda x, w: conv_ref(x, w, dilation=(2, 2)),
        (F(1, 8, 7, 2), F(2, 3, 2, 2)),
    ),
    OpCase(
        "conv2d_explicit",
        lambda x, w: braze.conv2d(x, w, stride=(1, 2), padding=((1, 0), (2, 1))),
        lambda x, w: conv_ref(x, w, stride=(1, 2), padding=((1, 0), (2, 1))),
        (F(2, 5, 6, 1), F(3, 3, 1, 2)),
    ),
    OpCase(
        "conv2d_transpose",  # stride 2, valid: an output a stride-2 convolution of the filter maps to 3x4
        lambda x, w: braze.conv2d_transpose(x, w, (8, 9), stride=2),
        lambda x, w: conv_transpose_ref(x, w, (8, 9), stride=(2, 2)),
        (F(2, 3, 4, 5), F(3, 2, 4, 5)),
    ),
    OpCase(
        "conv2d_transpose_same_dilated",
        lambda x, w: braze.conv2d_transpose(x, w, (10, 5), stride=(2, 1), padding="SAME", dilation=(1, 2)),
        lambda x, w: conv_transpose_ref(x, w, (10, 5), stride=(2, 1), padding="SAME", dilation=(1, 2)),
        (F(2, 5, 5, 3), F(3, 3, 2, 3)),
    ),
    OpCase(
        "depthwise_conv2d",  # same padding, two filters per channel
        lambda x, w: braze.depthwise_conv2d(x, w, padding="SAME"),
        lambda x, w: depthwise_ref(x, w, padding="SAME"),
        (F(2, 5, 6, 3), F(3, 3, 3, 2)),
    ),
    OpCase(
        "depthwise_conv2d_strided_dilated",
        lambda x, w: braze.depthwise_conv2d(x, w, stride=(2, 1), dilation=(1, 2)),
        lambda x, w: depthwise_ref(x, w, stride=(2, 1), dilation=(1, 2)),
        (F(2, 7, 8, 4), F(2, 3, 4, 1)),
    ),
    OpCase("max_pool2d", lambda x: braze.max_pool2d(x, 2), lambda x: pool_ref(x, 2, 2, "max"), (F(2, 6, 6, 3),)),
    OpCase(  # the pool's gradient and the relu's mask that reads the pool's input: one kernel
        "relu_max_pool2d",
        lambda x: braze.max_pool2d(braze.relu(x), 2),
        lambda x: pool_ref(np.maximum(x, 0), 2, 2, "max"),
        (F(2, 6, 8, 3),),
    ),
    OpCase(  # more taps than kernels write out one by one
        "max_pool2d_large_window",
        lambda x: braze.max_pool2d(x, 6),
        lambda x: pool_ref(x, 6, 6, "max"),
        (F(1, 12, 13, 2),),
    ),
    OpCase("max_pool2d_ragged", lambda x: braze.max_pool2d(x, 2), lambda x: pool_ref(x, 2, 2, "max"), (F(2, 7, 5, 3),)),
    OpCase(
        "max_pool2d_overlap",
        lambda x: braze.max_pool2d(x, 3, stride=2),
        lambda x: pool_ref(x, 3, 2, "max"),
        (F(1, 7, 7, 2),),
    ),
    OpCase(
        "max_pool2d_same",
        lambda x: braze.max_pool2d(x, 2, padding="SAME"),
        lambda x: pool_ref(x, 2, 2, "max", same=True),
        (F(2, 5, 5, 2),),
    ),
    OpCase("avg_pool2d", lambda x: braze.avg_pool2d(x, 2), lambda x: pool_ref(x, 2, 2, "avg"), (F(2, 6, 4, 3),)),
    OpCase(  # windows that tile the input but for a last row and column: their gradient is zero
        "avg_pool2d_ragged",
        lambda x: braze.avg_pool2d(x, 3),
        lambda x: pool_ref(x, 3, 3, "avg"),
        (F(2, 7, 8, 3),),
    ),
    OpCase(
        "avg_pool2d_same",
        lambda x: braze.avg_pool2d(x, 3, stride=2, padding="SAME"),
        lambda x: pool_ref(x, 3, 2, "avg", same=True),
        (F(1, 5, 6, 2),),
    ),
    # One replica (no MPI job in this process): the reduction of one value is the value, and
    # the compiled step reaches it through the transport callback. tests/distributed runs two.
    OpCase(
        "all_reduce_sum",
        lambda x: all_reduce.bind(x * 2.0, op="sum") + 1.0,
        lambda x: x * 2.0 + 1.0,
        (F(3, 5),),
    ),
    OpCase("all_reduce_mean", lambda x: all_reduce.bind(braze.exp(x), op="mean"), np.exp, (F(7),)),
    OpCase("all_reduce_max", lambda x: all_reduce.bind(x, op="max"), lambda x: x, (F(2, 3),)),
    OpCase("scan", _rnn_scan, _rnn_scan_ref, (F(2, 3), F(4, 2, 3))),
    OpCase(
        "fori_loop",
        lambda x: braze.lax.fori_loop(1, 4, lambda i, v: braze.sin(v) * braze.astype(i, v.dtype), x),
        _fori_ref,
        (F(3, 2),),
    ),
    OpCase(  # forward only: a while loop has no reverse-mode gradient
        "while_loop",
        lambda x: braze.lax.while_loop(lambda v: braze.abs(v).sum() > 1.0, lambda v: v * 0.5, x),
        _while_ref,
        (F(3, 2),),
        grad=False,
    ),
]

CASES_BY_NAME = {case.name: case for case in CASES}
