"""Neural-network ops on NHWC images and HWIO filters: conv2d, its transpose, the depthwise
convolution and pooling, with TensorFlow's padding conventions ("VALID", "SAME", or
explicit pairs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from braze.ir.errors import ShapeError
from braze.ir.prims import conv, window
from braze.ir.prims.checks import fmt_shape
from braze.ops.autocast import rounded
from braze.ops.core import as_tensor, astype, check_compatible, full
from braze.ops.shape import expand_dims, pad
from braze.tensor import Tensor, user_error

Padding = str | int | Sequence[int] | Sequence[Sequence[int]]


def positive_pair(op: str, name: str, value: int | Sequence[int]) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2 or any(not isinstance(v, int) or v < 1 for v in pair):
        raise user_error(ShapeError, f"{op}: {name} must be a positive int or a pair of them, got {value!r}")
    return int(pair[0]), int(pair[1])


def resolve_padding(
    op: str, padding: Padding, in_hw: Sequence[int], window_hw: Sequence[int], strides: Sequence[int]
) -> tuple[tuple[int, int], tuple[int, int]]:
    """Explicit ((top, bottom), (left, right)) padding; "SAME" splits extra padding as TF does
    (the larger half at the bottom/right), so outputs have ceil(in / stride) pixels."""
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return (0, 0), (0, 0)
        if mode == "SAME":
            pairs = []
            for size, k, s in zip(in_hw, window_hw, strides, strict=True):
                out = -(-size // s)
                total = max((out - 1) * s + k - size, 0)
                pairs.append((total // 2, total - total // 2))
            return pairs[0], pairs[1]
        raise user_error(ShapeError, f"{op}: padding must be 'VALID', 'SAME' or explicit pairs, got {padding!r}")
    if isinstance(padding, int):
        return (padding, padding), (padding, padding)
    items = list(padding)
    if len(items) == 2 and all(isinstance(p, int) for p in items):
        return (items[0], items[0]), (items[1], items[1])
    if len(items) == 2 and all(len(p) == 2 for p in items):
        return (int(items[0][0]), int(items[0][1])), (int(items[1][0]), int(items[1][1]))
    raise user_error(ShapeError, f"{op}: cannot read padding {padding!r}")


def _image_and_filter(op: str, x: Any, w: Any, channels_at: int = 2, layout: str = "") -> tuple[Tensor, Tensor]:
    """``x`` and ``w`` as an NHWC image batch and a 4-D filter whose axis ``channels_at``
    matches the image's channels (``layout`` names the filter's axes in the error)."""
    x, w = as_tensor(x), as_tensor(w)
    check_compatible(op, [x, w])
    if x.ndim != 4 or w.ndim != 4:
        raise user_error(
            ShapeError,
            f"{op}: expected a 4-D NHWC input and a 4-D HWIO filter, got {fmt_shape(x.shape)} and {fmt_shape(w.shape)}",
        )
    if x.shape[3] != w.shape[channels_at]:
        raise user_error(
            ShapeError,
            f"{op}: input {fmt_shape(x.shape)} has {x.shape[3]} channels but filter {fmt_shape(w.shape)}{layout} "
            f"expects {w.shape[channels_at]}",
        )
    return x, w


def conv2d(
    x: Any, w: Any, stride: int | Sequence[int] = 1, padding: Padding = "VALID", dilation: int | Sequence[int] = 1
) -> Tensor:
    """2-D convolution of NHWC ``x`` with HWIO filter ``w`` (cross-correlation, as in TF);
    in bfloat16 under ``braze.autocast``."""
    x, w = _image_and_filter("conv2d", x, w)
    strides = positive_pair("conv2d", "stride", stride)
    dilations = positive_pair("conv2d", "dilation", dilation)
    span = [(k - 1) * d + 1 for k, d in zip(w.shape[:2], dilations, strict=True)]
    pads = resolve_padding("conv2d", padding, x.shape[1:3], span, strides)
    out = conv.conv.bind(rounded(x), rounded(w), strides=strides, padding=pads, dilation=dilations)
    return rounded(astype(out, x.dtype))  # bfloat16 operands accumulate in float32, then round once


def conv2d_transpose(
    x: Any,
    w: Any,
    output_hw: Sequence[int],
    stride: int | Sequence[int] = 1,
    padding: Padding = "VALID",
    dilation: int | Sequence[int] = 1,
) -> Tensor:
    """The transpose of :func:`conv2d` (its gradient with respect to its input, TensorFlow's
    ``conv2d_transpose``): NHWC ``x`` of ``w.shape[3]`` channels through the HWIO filter
    ``w`` of the convolution it transposes, into images of ``output_hw`` pixels and
    ``w.shape[2]`` channels. ``padding`` is that convolution's, over ``output_hw``."""
    x, w = _image_and_filter("conv2d_transpose", x, w, 3, " (height, width, out, in)")
    out_hw = positive_pair("conv2d_transpose", "output_hw", tuple(output_hw))
    strides = positive_pair("conv2d_transpose", "stride", stride)
    dilations = positive_pair("conv2d_transpose", "dilation", dilation)
    span = [(k - 1) * d + 1 for k, d in zip(w.shape[:2], dilations, strict=True)]
    pads = resolve_padding("conv2d_transpose", padding, out_hw, span, strides)
    reached = conv.output_hw(out_hw, w.shape[:2], strides, pads, dilations)
    if reached != tuple(x.shape[1:3]):
        raise user_error(
            ShapeError,
            f"conv2d_transpose: an output of {out_hw[0]}x{out_hw[1]} pixels convolves (stride {strides}, "
            f"padding {pads}) to {reached[0]}x{reached[1]}, not to the input's {x.shape[1]}x{x.shape[2]}",
        )
    out = conv.conv_grad_input.bind(
        rounded(x), rounded(w), input_hw=out_hw, strides=strides, padding=pads, dilation=dilations
    )
    return rounded(astype(out, x.dtype))


def depthwise_conv2d(
    x: Any, w: Any, stride: int | Sequence[int] = 1, padding: Padding = "VALID", dilation: int | Sequence[int] = 1
) -> Tensor:
    """Each channel of NHWC ``x`` convolved with its own filters (TensorFlow's
    ``depthwise_conv2d``): ``w`` of shape (height, width, channels, multiplier) gives
    ``channels * multiplier`` outputs, channel ``c``'s ``k``-th at ``c * multiplier + k``.
    Computed as a sum over the filter's taps of strided windows times per-channel weights,
    which the compiler fuses into one elementwise loop."""
    x, w = _image_and_filter("depthwise_conv2d", x, w, 2, " (height, width, channels, multiplier)")
    sh, sw = positive_pair("depthwise_conv2d", "stride", stride)
    dh, dw = positive_pair("depthwise_conv2d", "dilation", dilation)
    span = [(k - 1) * d + 1 for k, d in zip(w.shape[:2], (dh, dw), strict=True)]
    pads = resolve_padding("depthwise_conv2d", padding, x.shape[1:3], span, (sh, sw))
    oh, ow = conv.output_hw(x.shape[1:3], w.shape[:2], (sh, sw), pads, (dh, dw))
    if oh < 1 or ow < 1:
        raise user_error(
            ShapeError, f"depthwise_conv2d: filter {fmt_shape(w.shape)} does not fit input {fmt_shape(x.shape)}"
        )
    x, w = rounded(x), rounded(w)  # under braze.autocast, bfloat16 operands accumulated in float32, as conv2d
    padded = pad(x, ((0, 0), pads[0], pads[1], (0, 0))) if any(map(any, pads)) else x
    multiplier = w.shape[3]
    spread = expand_dims(padded, -1) if multiplier > 1 else padded
    total: Tensor | None = None
    for a in range(w.shape[0]):
        for b in range(w.shape[1]):
            rows = slice(a * dh, a * dh + (oh - 1) * sh + 1, sh)
            cols = slice(b * dw, b * dw + (ow - 1) * sw + 1, sw)
            term = spread[:, rows, cols] * (w[a, b] if multiplier > 1 else w[a, b, :, 0])
            total = term if total is None else total + term
    return rounded(total.reshape(x.shape[0], oh, ow, x.shape[3] * multiplier))


def _pool(op: str, kind: str, x: Any, size, stride, padding) -> tuple[Tensor, tuple, tuple, tuple]:
    x = as_tensor(x)
    if x.ndim != 4:
        raise user_error(ShapeError, f"{op}: expected a 4-D NHWC input, got {fmt_shape(x.shape)}")
    kh, kw = positive_pair(op, "size", size)
    sh, sw = positive_pair(op, "stride", stride if stride is not None else (kh, kw))
    (t, b), (l, r) = resolve_padding(op, padding, x.shape[1:3], (kh, kw), (sh, sw))
    window_dims, strides, pads = (1, kh, kw, 1), (1, sh, sw, 1), ((0, 0), (t, b), (l, r), (0, 0))
    out = window.reduce_window.bind(x, kind=kind, window_dimensions=window_dims, window_strides=strides, padding=pads)
    return out, window_dims, strides, pads


def max_pool2d(x: Any, size: int | Sequence[int], stride: Any = None, padding: Padding = "VALID") -> Tensor:
    """Max over ``size`` windows of an NHWC tensor; ``stride`` defaults to ``size`` (Keras)."""
    return _pool("max_pool2d", "max", x, size, stride, padding)[0]


def avg_pool2d(x: Any, size: int | Sequence[int], stride: Any = None, padding: Padding = "VALID") -> Tensor:
    """Mean over ``size`` windows; padded pixels are not counted (TensorFlow's convention)."""
    total, window_dims, strides, pads = _pool("avg_pool2d", "sum", x, size, stride, padding)
    if all(p == (0, 0) for p in pads):
        return total / (window_dims[1] * window_dims[2])
    x = as_tensor(x)
    ones = full((1, x.shape[1], x.shape[2], 1), 1, x.dtype, x.device)
    count = window.reduce_window.bind(
        ones, kind="sum", window_dimensions=window_dims, window_strides=strides, padding=pads
    )
    return total / count
