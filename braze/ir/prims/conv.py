"""2-D convolution (NHWC input, HWIO filter) and its two transposes.

``conv_grad_input`` and ``conv_grad_filter`` are primitives of their own (as TensorFlow's
Conv2DBackpropInput/Filter are) because each lowers to a direct loop nest; the three are
closed under differentiation: each one's VJP is written with the other two, and each is
bilinear, so its JVP is the product rule. The VJPs return thunks, so a cotangent nobody
needs (the input image's) is never computed.

Attributes: ``strides`` (sh, sw), ``padding`` ((top, bottom), (left, right)) and
``dilation`` (dh, dw) of the filter. The NumPy twins use im2col over batch chunks so that
memory stays bounded on large images.

On bfloat16 operands each accumulates in float32 and returns float32, as dot_general does
(a bfloat16 product is exact in float32, so only the accumulation rounds); a gradient
rounds its cotangent to bfloat16 first and its result back to the operand's bfloat16.
"""

from __future__ import annotations

import numpy as np

from braze.ir.dtypes import DType, bfloat16, float32
from braze.ir.errors import ShapeError
from braze.ir.primitive import Aval, Category, Primitive, register
from braze.ir.prims import checks, derived, elementwise
from braze.ir.prims.checks import fmt_shape

ATTRS = ("strides", "padding", "dilation")
_CHUNK_ELEMENTS = 1 << 24


def output_hw(in_hw, filter_hw, strides, padding, dilation) -> tuple[int, int]:
    out = []
    for size, k, s, (lo, hi), d in zip(in_hw, filter_hw, strides, padding, dilation, strict=True):
        span = (k - 1) * d + 1
        out.append((size + lo + hi - span) // s + 1 if size + lo + hi >= span else 0)
    return out[0], out[1]


def _check_attrs(op: str, strides, padding, dilation) -> None:
    checks.check_positive(op, "strides", strides, 2)
    checks.check_positive(op, "dilation", dilation, 2)
    checks.check_pairs(op, "padding", padding, 2)
    if any(p < 0 for pair in padding for p in pair):
        raise ShapeError(f"{op}: padding must be non-negative, got {padding}")


def _check_pair(op: str, x: Aval, w: Aval, strides, padding, dilation) -> tuple[int, int]:
    checks.check_rank(op, x, 4, "the input (NHWC)")
    checks.check_rank(op, w, 4, "the filter (HWIO)")
    checks.same_dtypes(op, x, w)
    checks.require_kinds(op, x, "f", "a float")
    _check_attrs(op, strides, padding, dilation)
    if x.shape[3] != w.shape[2]:
        raise ShapeError(
            f"{op}: input {fmt_shape(x.shape)} has {x.shape[3]} channels but filter "
            f"{fmt_shape(w.shape)} expects {w.shape[2]}"
        )
    oh, ow = output_hw(x.shape[1:3], w.shape[:2], strides, padding, dilation)
    if oh < 1 or ow < 1:
        raise ShapeError(
            f"{op}: filter {fmt_shape(w.shape)} (dilation {tuple(dilation)}) does not fit input "
            f"{fmt_shape(x.shape)} with padding {tuple(map(tuple, padding))}"
        )
    return oh, ow


def _accumulated(dtype: DType) -> DType:
    """The result type of a convolution of ``dtype`` operands."""
    return float32 if dtype is bfloat16 else dtype


def _conv_rule(x: Aval, w: Aval, *, strides, padding, dilation) -> Aval:
    oh, ow = _check_pair("conv", x, w, strides, padding, dilation)
    return Aval((x.shape[0], oh, ow, w.shape[3]), _accumulated(x.dtype))


def _grad_input_rule(g: Aval, w: Aval, *, input_hw, strides, padding, dilation) -> Aval:
    x = Aval((g.shape[0], *input_hw, w.shape[2]), g.dtype)
    expected = _conv_rule(x, w, strides=strides, padding=padding, dilation=dilation)
    if expected.shape != g.shape:
        raise ShapeError(
            f"conv_grad_input: cotangent {fmt_shape(g.shape)} does not match the conv output "
            f"{fmt_shape(expected.shape)} of an input {fmt_shape(x.shape)}"
        )
    return Aval(x.shape, _accumulated(x.dtype))


def _grad_filter_rule(x: Aval, g: Aval, *, filter_hw, strides, padding, dilation) -> Aval:
    w = Aval((*filter_hw, x.shape[3], g.shape[3]), x.dtype)
    expected = _conv_rule(x, w, strides=strides, padding=padding, dilation=dilation)
    if expected.shape != g.shape:
        raise ShapeError(
            f"conv_grad_filter: cotangent {fmt_shape(g.shape)} does not match the conv output "
            f"{fmt_shape(expected.shape)} of an input {fmt_shape(x.shape)}"
        )
    return Aval(w.shape, _accumulated(w.dtype))


def _windows(xp: np.ndarray, filter_hw, out_hw, strides, dilation):
    """Yield ((i, j), view) for every filter tap: the input pixels that tap multiplies."""
    (kh, kw), (oh, ow), (sh, sw), (dh, dw) = filter_hw, out_hw, strides, dilation
    for i in range(kh):
        for j in range(kw):
            rows = slice(i * dh, i * dh + (oh - 1) * sh + 1, sh)
            cols = slice(j * dw, j * dw + (ow - 1) * sw + 1, sw)
            yield (i, j), xp[:, rows, cols, :]


def _im2col(xp: np.ndarray, filter_hw, out_hw, strides, dilation) -> np.ndarray:
    views = [v for _, v in _windows(xp, filter_hw, out_hw, strides, dilation)]
    cols = np.stack(views, axis=3)  # N, OH, OW, KH*KW, C
    # Sizes spelled out (here and below): a -1 cannot be inferred where a dimension is 0.
    return cols.reshape(cols.shape[0] * cols.shape[1] * cols.shape[2], cols.shape[3] * cols.shape[4])


def _batch_chunks(n: int, per_item: int):
    step = max(1, _CHUNK_ELEMENTS // max(per_item, 1))
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


def _pad_hw(x: np.ndarray, padding) -> np.ndarray:
    (t, b), (l, r) = padding
    return np.pad(x, ((0, 0), (t, b), (l, r), (0, 0))) if t or b or l or r else x


def _conv_impl(x, w, *, strides, padding, dilation):
    kh, kw, c, o = w.shape
    oh, ow = output_hw(x.shape[1:3], (kh, kw), strides, padding, dilation)
    out = np.empty((x.shape[0], oh, ow, o), dtype=x.dtype)
    w2 = w.reshape(kh * kw * c, o)
    for part in _batch_chunks(x.shape[0], oh * ow * kh * kw * c):
        cols = _im2col(_pad_hw(x[part], padding), (kh, kw), (oh, ow), strides, dilation)
        out[part] = (cols @ w2).reshape(out[part].shape)
    return out


def _grad_input_impl(g, w, *, input_hw, strides, padding, dilation):
    kh, kw, c, o = w.shape
    n, oh, ow, _ = g.shape
    (t, b), (l, r) = padding
    h, wd = input_hw
    w2 = w.reshape(kh * kw * c, o).T
    dxp = np.zeros((n, h + t + b, wd + l + r, c), dtype=g.dtype)
    for part in _batch_chunks(n, oh * ow * kh * kw * c):
        items = g[part].shape[0]
        cols = (g[part].reshape(items * oh * ow, o) @ w2).reshape(items, oh, ow, kh, kw, c)
        for (i, j), view in _windows(dxp[part], (kh, kw), (oh, ow), strides, dilation):
            view += cols[:, :, :, i, j, :]
    return np.ascontiguousarray(dxp[:, t : t + h, l : l + wd, :])


def _grad_filter_impl(x, g, *, filter_hw, strides, padding, dilation):
    kh, kw = filter_hw
    n, oh, ow, o = g.shape
    c = x.shape[3]
    dw = np.zeros((kh * kw * c, o), dtype=x.dtype)
    for part in _batch_chunks(n, oh * ow * kh * kw * c):
        cols = _im2col(_pad_hw(x[part], padding), (kh, kw), (oh, ow), strides, dilation)
        dw += cols.T @ g[part].reshape(cols.shape[0], o)
    return dw.reshape(kh, kw, c, o)


def _narrowed(cotangent, operand):
    """The (float32) cotangent as an operand beside ``operand``: rounded to bfloat16 when
    that is bfloat16."""
    return elementwise.convert.bind(cotangent, dtype=bfloat16) if operand.dtype is bfloat16 else cotangent


def _like(result, operand):
    """A (float32) gradient in the type of the ``operand`` it is for."""
    return elementwise.convert.bind(result, dtype=bfloat16) if operand.dtype is bfloat16 else result


def _conv_vjp(g, x, w, out, *, strides, padding, dilation):
    attrs = {"strides": strides, "padding": padding, "dilation": dilation}
    return (
        lambda: _like(conv_grad_input.bind(_narrowed(g, w), w, input_hw=tuple(x.shape[1:3]), **attrs), x),
        lambda: _like(conv_grad_filter.bind(x, _narrowed(g, x), filter_hw=tuple(w.shape[:2]), **attrs), w),
    )


def _grad_input_vjp(ct, g, w, out, *, input_hw, strides, padding, dilation):
    attrs = {"strides": strides, "padding": padding, "dilation": dilation}
    return (
        lambda: _like(conv.bind(_narrowed(ct, w), w, **attrs), g),
        lambda: _like(conv_grad_filter.bind(_narrowed(ct, g), g, filter_hw=tuple(w.shape[:2]), **attrs), w),
    )


def _grad_filter_vjp(ct, x, g, out, *, filter_hw, strides, padding, dilation):
    attrs = {"strides": strides, "padding": padding, "dilation": dilation}
    return (
        lambda: _like(conv_grad_input.bind(g, _narrowed(ct, g), input_hw=tuple(x.shape[1:3]), **attrs), x),
        lambda: _like(conv.bind(x, _narrowed(ct, x), **attrs), g),
    )


def _contraction(name: str, rule, impl, vjp, attr_names: tuple[str, ...]) -> Primitive:
    return register(Primitive(name, rule, impl, vjp, attr_names, category=Category.CONTRACTION, jvp=derived.BILINEAR))


conv = _contraction("conv", _conv_rule, _conv_impl, _conv_vjp, ATTRS)
conv_grad_input = _contraction(
    "conv_grad_input", _grad_input_rule, _grad_input_impl, _grad_input_vjp, ("input_hw", *ATTRS)
)
conv_grad_filter = _contraction(
    "conv_grad_filter", _grad_filter_rule, _grad_filter_impl, _grad_filter_vjp, ("filter_hw", *ATTRS)
)
