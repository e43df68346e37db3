"""PyTorch's ``torch.nn.functional`` functions with PyTorch's layouts, argument order and
defaults: activations, ``linear``, ``dropout``, the softmaxes, ``conv2d`` and the poolings
on NCHW images (``(C, H, W)`` unbatched too) with OIHW filters, ``batch_norm``, ``pad``,
``one_hot``, ``normalize`` and ``cosine_similarity``. ``braze.nn.functional`` exports them.

The image functions transpose to braze's channels-last ops (``braze.ops.nn``) and back,
rather than having NCHW kernels of their own. The compiler folds two transposes in a row
into one (back to NCHW, then to NHWC: none), and fuses a transpose into the elementwise
loop beside it: between two layers, the transposes around a ``relu`` are read in its one
loop, and activations are not copied. What remains is a copy of the input images and of
each filter (OIHW to HWIO, small) per call.

``inplace=True`` is accepted where PyTorch takes it, and a new tensor is returned: its
value is what PyTorch's in-place call returns; only the input is not overwritten.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from braze import ops
from braze.autodiff import no_grad
from braze.ir.errors import DTypeError, ShapeError

# Modules, not names: braze.nn.functional imports this file while those are loading.
from braze.nn import activations, functional, keras_random, layers
from braze.ops import tensorflow as tf_ops
from braze.ops.core import broadcast_shapes
from braze.ops.linalg import matmul_transposed
from braze.ops.nn import positive_pair
from braze.ops.random import Generator
from braze.ops.shape import split
from braze.tensor import Tensor, user_error

__all__ = [
    "adaptive_avg_pool2d",
    "avg_pool2d",
    "batch_norm",
    "conv2d",
    "cosine_similarity",
    "dropout",
    "elu",
    "hardtanh",
    "leaky_relu",
    "linear",
    "log_softmax",
    "max_pool2d",
    "normalize",
    "one_hot",
    "pad",
    "relu",
    "sigmoid",
    "silu",
    "softmax",
    "softplus",
    "tanh",
]

Size2 = int | Sequence[int]
_TO_NHWC, _TO_NCHW = (0, 2, 3, 1), (0, 3, 1, 2)

# Activations ------------------------------------------------------------------------------


def relu(input: Any, inplace: bool = False) -> Tensor:
    layers.check_inplace("relu", inplace)
    return ops.relu(ops.as_tensor(input))


def silu(input: Any, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)``."""
    layers.check_inplace("silu", inplace)
    return activations.silu(ops.as_tensor(input))


def leaky_relu(input: Any, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    layers.check_inplace("leaky_relu", inplace)
    return activations.leaky_relu(ops.as_tensor(input), float(negative_slope))


def elu(input: Any, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    layers.check_inplace("elu", inplace)
    return activations.elu(ops.as_tensor(input), float(alpha))


def softplus(input: Any, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold``.
    The smooth part is TensorFlow's formulation, which never overflows: a branch not taken
    has a finite gradient, so the selection's zero cotangent keeps it zero."""
    x = ops.as_tensor(input)
    scaled = x * beta if beta != 1 else x
    smooth = tf_ops.softplus(scaled)
    return ops.where(scaled > threshold, x, smooth / beta if beta != 1 else smooth)


def hardtanh(input: Any, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` clipped to ``[min_val, max_val]``; its gradient is 0 at the bounds too (PyTorch's
    ``hardtanh``, where ``clamp``'s, and braze's ``clip``'s, is 1 there)."""
    layers.check_inplace("hardtanh", inplace)
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val {min_val} cannot be greater than max_val {max_val}")
    x = ops.as_tensor(input)
    return ops.where(x <= min_val, float(min_val), ops.where(x >= max_val, float(max_val), x))


def tanh(input: Any) -> Tensor:
    return ops.tanh(ops.as_tensor(input))


def sigmoid(input: Any) -> Tensor:
    return ops.sigmoid(ops.as_tensor(input))


def _softmax_input(op: str, input: Any, dim: int | None, dtype: Any) -> tuple[Tensor, int]:
    x = ops.as_tensor(input)
    if dtype is not None:
        x = x.astype(dtype)
    if dim is None:  # PyTorch's deprecated implicit choice, with its warning
        message = f"Implicit dimension choice for {op} has been deprecated. Change the call to include dim=X."
        warnings.warn(message, stacklevel=3)
        dim = 0 if x.ndim in (0, 1, 3) else 1
    return x, dim


def softmax(input: Any, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """The softmax over ``dim``; ``dtype`` converts the input first."""
    x, dim = _softmax_input("softmax", input, dim, dtype)
    return ops.softmax(x, dim)


def log_softmax(input: Any, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """The log of the softmax over ``dim``, computed stably."""
    x, dim = _softmax_input("log_softmax", input, dim, dtype)
    return ops.log_softmax(x, dim)


# Linear layers and dropout ----------------------------------------------------------------


def linear(input: Any, weight: Any, bias: Any = None) -> Tensor:
    """``input @ weight.T + bias``, ``weight`` of shape (out_features, in_features)."""
    x, w = ops.as_tensor(input), ops.as_tensor(weight)
    if w.ndim != 2 or x.ndim == 0 or x.shape[-1] != w.shape[1]:
        raise user_error(
            ShapeError, f"linear: input {tuple(x.shape)} and weight {tuple(w.shape)} (out, in) do not multiply"
        )
    # One product contracting both last axes: the weight is never copied transposed.
    y = matmul_transposed(x, w) if x.ndim > 1 else matmul_transposed(x.reshape(1, -1), w).reshape(-1)
    return y if bias is None else y + bias


def check_probability(op: str, p: float) -> float:
    if not 0 <= p <= 1:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")
    return float(p)


def dropout(
    input: Any,
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """While ``training``: each element zeroed with probability ``p``, the rest scaled by
    ``1 / (1 - p)``; the draws come from ``generator`` (braze's; the default stream, which
    ``braze.manual_seed`` seeds, when None)."""
    p = check_probability("dropout", p)
    layers.check_inplace("dropout", inplace)
    x = ops.as_tensor(input)
    if not training or p == 0:
        return x
    if p == 1:
        return x * 0.0
    return keras_random.dropout(x, p, seed=generator)


# Convolution and pooling ------------------------------------------------------------------


def _batched(op: str, input: Any) -> tuple[Tensor, bool]:
    """``input`` as an (N, C, H, W) batch, and whether it was one unbatched (C, H, W) image."""
    x = ops.as_tensor(input)
    if x.ndim not in (3, 4):
        raise user_error(ShapeError, f"{op}: expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got {tuple(x.shape)}")
    return (x.reshape(1, *x.shape), True) if x.ndim == 3 else (x, False)


def padding_pair(op: str, padding: Size2) -> tuple[int, int]:
    """PyTorch's ``padding`` of a window op (an int, or one per axis) as (rows, columns)."""
    pair = (padding, padding) if isinstance(padding, (int, np.integer)) else tuple(padding)
    if len(pair) != 2 or any(not isinstance(p, (int, np.integer)) or p < 0 for p in pair):
        raise ValueError(f"{op}: padding must be a non-negative int or a pair of them, got {padding!r}")
    return int(pair[0]), int(pair[1])


def conv_padding(
    op: str, padding: str | Size2, kernel: Sequence[int], stride: tuple[int, int], dilation: tuple[int, int]
) -> tuple[tuple[int, int], tuple[int, int]]:
    """PyTorch's ``padding`` as ((top, bottom), (left, right)): the same on both sides of an
    axis for numbers; "same" pads ``dilation * (kernel - 1)`` in all, the odd one at the
    bottom/right, and only without a stride (as PyTorch); "valid" pads nothing."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0, 0), (0, 0)
        if padding != "same":
            raise ValueError(f"{op}: padding must be 'valid', 'same', an int or a pair of ints, got {padding!r}")
        if stride != (1, 1):
            raise ValueError(f"{op}: padding='same' is not supported for strided convolutions")
        totals = [d * (k - 1) for k, d in zip(kernel, dilation, strict=True)]
        return (totals[0] // 2, totals[0] - totals[0] // 2), (totals[1] // 2, totals[1] - totals[1] // 2)
    ph, pw = padding_pair(op, padding)
    return (ph, ph), (pw, pw)


def _convolve(x: Tensor, w: Tensor, stride: Any, padding: Any, dilation: Any, groups: int) -> Tensor:
    """NHWC ``x`` convolved with OIHW ``w`` in ``groups`` groups (NHWC out)."""
    if groups == 1:
        return ops.conv2d(x, ops.transpose(w, (2, 3, 1, 0)), stride, padding, dilation)
    channels = x.shape[3]
    if groups == channels:
        # Depthwise: output channel c * m + k filters input channel c with w[c * m + k], as
        # braze's depthwise_conv2d orders its (height, width, channels, multiplier) filter.
        m, (kh, kw) = w.shape[0] // channels, w.shape[2:]
        filters = ops.transpose(w.reshape(channels, m, kh, kw), (2, 3, 0, 1))
        return ops.depthwise_conv2d(x, filters, stride, padding, dilation)
    pieces = zip(split(x, channels // groups, 3), split(w, w.shape[0] // groups, 0), strict=True)
    return ops.concatenate([_convolve(xg, wg, stride, padding, dilation, 1) for xg, wg in pieces], 3)


def conv2d(
    input: Any,
    weight: Any,
    bias: Any = None,
    stride: Size2 = 1,
    padding: str | Size2 = 0,
    dilation: Size2 = 1,
    groups: int = 1,
) -> Tensor:
    """The cross-correlation of NCHW ``input`` with ``weight`` of shape (out_channels,
    in_channels / groups, kH, kW), plus ``bias`` (out_channels,)."""
    x, unbatched = _batched("conv2d", input)
    w = ops.as_tensor(weight)
    groups = int(groups)
    if w.ndim != 4 or groups < 1 or w.shape[0] % groups or x.shape[1] != w.shape[1] * groups:
        raise user_error(
            ShapeError,
            f"conv2d: given groups={groups}, weight of size {list(w.shape)}, expected input{list(x.shape)} to have "
            f"{w.shape[1] * groups if w.ndim == 4 else '?'} channels and out_channels divisible by groups",
        )
    strides, dilations = positive_pair("conv2d", "stride", stride), positive_pair("conv2d", "dilation", dilation)
    pads = conv_padding("conv2d", padding, w.shape[2:], strides, dilations)
    y = _convolve(ops.transpose(x, _TO_NHWC), w, strides, pads, dilations, groups)
    if bias is not None:
        y = y + bias  # over NHWC's last axis: the convolution's epilogue
    y = ops.transpose(y, _TO_NCHW)
    return y[0] if unbatched else y


def _pool_window(op: str, kernel_size: Size2, stride: Any, padding: Size2) -> tuple[tuple, tuple, tuple]:
    kernel = positive_pair(op, "kernel_size", kernel_size)
    given = stride is not None and not (isinstance(stride, (list, tuple)) and not stride)
    strides = positive_pair(op, "stride", stride) if given else kernel
    pads = padding_pair(op, padding)
    if any(p > k // 2 for p, k in zip(pads, kernel, strict=True)):
        raise ValueError(f"{op}: pad should be at most half of effective kernel size, got padding {padding!r}")
    return kernel, strides, pads


def _ceil_extra(size: int, k: int, s: int, p: int) -> int:
    """The padding past the end that ``ceil_mode`` adds: PyTorch's last window, which may
    hang over the end, is kept when it starts inside the input or its left padding."""
    out = -(-(size + 2 * p - k) // s) + 1
    if (out - 1) * s >= size + p:
        out -= 1
    return max((out - 1) * s + k - (size + 2 * p), 0)


def _channels_last_pool(x: Tensor, pool: Any) -> Tensor:
    return ops.transpose(pool(ops.transpose(x, _TO_NHWC)), _TO_NCHW)


def max_pool2d(
    input: Any,
    kernel_size: Size2,
    stride: Any = None,
    padding: Size2 = 0,
    dilation: Size2 = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor:
    """The maximum over each window; padding never wins (it is the lowest value)."""
    if return_indices:
        raise NotImplementedError("max_pool2d: return_indices=True is not supported")
    if positive_pair("max_pool2d", "dilation", dilation) != (1, 1):
        raise NotImplementedError(f"max_pool2d: dilation={dilation!r} is not supported, only 1")
    x, unbatched = _batched("max_pool2d", input)
    kernel, strides, pads = _pool_window("max_pool2d", kernel_size, stride, padding)
    sizes = zip(x.shape[2:], kernel, strides, pads, strict=True)
    ends = [_ceil_extra(n, k, s, p) if ceil_mode else 0 for n, k, s, p in sizes]
    explicit = tuple((p, p + e) for p, e in zip(pads, ends, strict=True))
    y = _channels_last_pool(x, lambda t: ops.max_pool2d(t, kernel, strides, explicit))
    return y[0] if unbatched else y


def avg_pool2d(
    input: Any,
    kernel_size: Size2,
    stride: Any = None,
    padding: Size2 = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """The mean over each window. With ``count_include_pad`` (PyTorch's default) the padded
    zeros count, every window is divided by kH * kW: the zeros are padded first and braze's
    unpadded average pooling takes over. Without it, braze's padded pooling divides by the
    pixels inside (TensorFlow's convention). ``divisor_override`` divides each sum by it."""
    if ceil_mode:
        raise NotImplementedError("avg_pool2d: ceil_mode=True is not supported")
    if divisor_override is not None and divisor_override == 0:
        raise ValueError("avg_pool2d: divisor must be not zero")
    x, unbatched = _batched("avg_pool2d", input)
    kernel, strides, (ph, pw) = _pool_window("avg_pool2d", kernel_size, stride, padding)

    def pool(t: Tensor) -> Tensor:
        if count_include_pad or divisor_override:
            padded = ops.pad(t, ((0, 0), (ph, ph), (pw, pw), (0, 0))) if ph or pw else t
            mean = ops.avg_pool2d(padded, kernel, strides, "VALID")
            return mean * (kernel[0] * kernel[1] / divisor_override) if divisor_override else mean
        return ops.avg_pool2d(t, kernel, strides, ((ph, ph), (pw, pw)))

    y = _channels_last_pool(x, pool)
    return y[0] if unbatched else y


def adaptive_avg_pool2d(input: Any, output_size: int | Sequence[int | None]) -> Tensor:
    """The mean over PyTorch's bins: output row ``i`` of ``oh`` averages input rows
    ``floor(i * H / oh)`` to ``ceil((i + 1) * H / oh)``, and columns likewise; a None output
    size keeps the input's."""
    x = ops.as_tensor(input)
    if x.ndim not in (3, 4):
        raise user_error(ShapeError, f"adaptive_avg_pool2d: expected a 3-D or 4-D input, got {tuple(x.shape)}")
    sizes = (output_size, output_size) if isinstance(output_size, (int, np.integer)) else tuple(output_size)
    h, w = x.shape[-2:]
    oh, ow = (int(n) if n is not None else m for n, m in zip(sizes, (h, w), strict=True))
    if oh < 1 or ow < 1:
        raise ValueError(f"adaptive_avg_pool2d: output_size must be positive, got {output_size!r}")
    if h % oh == 0 and w % ow == 0:  # equal bins that tile the image: one mean over them
        tiles = x.reshape(*x.shape[:-2], oh, h // oh, ow, w // ow)
        return ops.mean(tiles, axis=(-3, -1))
    # Bins of different sizes that may overlap: each axis averaged by a matrix of its bins.
    rows, cols = (ops.tensor(_bin_means(n, o), dtype=x.dtype, device=x.device) for n, o in ((h, oh), (w, ow)))
    return matmul_transposed(ops.matmul(rows, x), cols)


def _bin_means(size: int, out: int) -> np.ndarray:
    """(out, size): row i holds 1 / count over PyTorch's adaptive bin i, zeros elsewhere."""
    means = np.zeros((out, size))
    for i in range(out):
        start, end = (i * size) // out, -(-((i + 1) * size) // out)
        means[i, start:end] = 1.0 / (end - start)
    return means


# Normalization ----------------------------------------------------------------------------


def batch_norm(
    input: Any,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Any = None,
    bias: Any = None,
    training: bool = False,
    momentum: float | Tensor = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalization of each channel (axis 1) over the batch and every other axis, then
    ``weight`` and ``bias`` per channel. In training, by the batch's mean and biased
    variance, and the running statistics (when given) move in place:
    ``running = (1 - momentum) * running + momentum * batch``, the variance unbiased (divided
    by n - 1). Otherwise by the running statistics."""
    x = ops.as_tensor(input)
    if x.ndim < 2:
        raise user_error(ShapeError, f"batch_norm: expected an input with a channel axis 1, got {tuple(x.shape)}")
    axes = (0, *range(2, x.ndim))
    spread = (1, x.shape[1]) + (1,) * (x.ndim - 2)  # a per-channel value's shape against x
    if training:
        count = x.size // x.shape[1]
        if count <= 1:
            raise ValueError(
                f"batch_norm: expected more than 1 value per channel when training, got input size {tuple(x.shape)}"
            )
        mean, centered, variance = functional.centered_moments(x, axes)
        if running_mean is not None and running_var is not None:
            with no_grad():
                running_mean.copy_(running_mean * (1 - momentum) + mean.reshape(-1) * momentum)
                unbiased = variance.reshape(-1) * (count / (count - 1))
                running_var.copy_(running_var * (1 - momentum) + unbiased * momentum)
        y = centered * ops.rsqrt(variance + eps)
    elif running_mean is None or running_var is None:
        raise ValueError("batch_norm: running_mean and running_var are needed outside training")
    else:
        y = (x - running_mean.reshape(spread)) * ops.rsqrt(running_var.reshape(spread) + eps)
    if weight is not None:
        y = y * ops.as_tensor(weight).reshape(spread)
    return y if bias is None else y + ops.as_tensor(bias).reshape(spread)


def _vector_norm(x: Tensor, p: float, dim: int) -> Tensor:
    """The p-norm over ``dim`` (kept), whose gradient at a zero vector is 0 (PyTorch's): the
    root is taken of 1 there, then replaced, so no infinite slope reaches the zeros."""
    if p == math.inf:
        return ops.max(ops.abs(x), axis=dim, keepdims=True)
    if p == 1:
        return ops.sum(ops.abs(x), axis=dim, keepdims=True)
    if p <= 0:
        raise ValueError(f"normalize: p must be positive, got {p}")
    total = ops.sum(x * x if p == 2 else ops.abs(x) ** p, axis=dim, keepdims=True)
    nonzero = total > 0
    safe = ops.where(nonzero, total, 1.0)
    return ops.where(nonzero, ops.sqrt(safe) if p == 2 else safe ** (1.0 / p), 0.0)


def normalize(input: Any, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``input / max(||input||_p, eps)``, the norm over ``dim``."""
    x = ops.as_tensor(input)
    return x / ops.maximum(_vector_norm(x, float(p), dim), float(eps))


def cosine_similarity(x1: Any, x2: Any, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between ``x1`` and ``x2`` (broadcast together) along ``dim``:
    each divided by its norm, at least ``eps``, then the dot product (PyTorch's formula)."""
    a, b = ops.as_tensor(x1), ops.as_tensor(x2)
    shape = broadcast_shapes("cosine_similarity", a.shape, b.shape)
    a, b = ops.broadcast_to(a, shape), ops.broadcast_to(b, shape)
    a = a / ops.maximum(_vector_norm(a, 2.0, dim), float(eps))
    b = b / ops.maximum(_vector_norm(b, 2.0, dim), float(eps))
    return ops.sum(a * b, axis=dim)


# Padding and encoding ---------------------------------------------------------------------

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input: Any, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """``pad`` lists (before, after) pairs from the LAST axis backwards: ``(left, right)``
    pads the last axis, ``(left, right, top, bottom)`` the last two. A negative amount crops
    (constant mode). "reflect" mirrors without repeating the edge, "replicate" repeats the
    edge, "circular" wraps around."""
    x = ops.as_tensor(input)
    widths = [int(p) for p in pad]
    if len(widths) % 2 or len(widths) // 2 > x.ndim:
        raise ValueError(f"pad: {len(widths)} amounts for {x.ndim} axes: (before, after) pairs, one per axis at most")
    pairs = [(0, 0)] * x.ndim
    for i in range(len(widths) // 2):
        pairs[x.ndim - 1 - i] = (widths[2 * i], widths[2 * i + 1])
    if mode == "constant":
        return _pad_constant(x, pairs, 0.0 if value is None else value)
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode must be one of {', '.join(_PAD_MODES)}, got {mode!r}")
    if value:
        raise ValueError(f"pad: padding mode {mode!r} doesn't take in value argument")
    if any(a < 0 or b < 0 for a, b in pairs):
        raise NotImplementedError(f"pad: negative padding is supported in constant mode only, got {list(pad)}")
    for axis, (before, after) in enumerate(pairs):
        if before or after:
            x = _pad_axis(x, axis, before, after, mode)
    return x


def _pad_constant(x: Tensor, pairs: list[tuple[int, int]], value: float) -> Tensor:
    grown = [(max(a, 0), max(b, 0)) for a, b in pairs]
    if any(a or b for a, b in grown):
        x = ops.pad(x, grown, value=value)
    if all(a >= 0 and b >= 0 for a, b in pairs):
        return x
    return x[tuple(slice(max(-a, 0), n + min(b, 0)) for (a, b), n in zip(pairs, x.shape, strict=True))]


def _pad_axis(x: Tensor, axis: int, before: int, after: int, mode: str) -> Tensor:
    size = x.shape[axis]

    def part(start: int, stop: int) -> Tensor:
        index = [slice(None)] * x.ndim
        index[axis] = slice(start, stop)
        return x[tuple(index)]

    def repeated(edge: Tensor, count: int) -> Tensor:
        return ops.broadcast_to(edge, tuple(count if d == axis else n for d, n in enumerate(x.shape)))

    limit = size - 1 if mode == "reflect" else size
    if mode != "replicate" and max(before, after) > limit:
        raise ValueError(f"pad: {mode} padding of ({before}, {after}) along axis {axis} of size {size} is too large")
    if mode == "reflect":
        parts = [ops.flip(part(1, before + 1), axis), x, ops.flip(part(size - 1 - after, size - 1), axis)]
    elif mode == "replicate":
        parts = [repeated(part(0, 1), before), x, repeated(part(size - 1, size), after)]
    else:
        parts = [part(size - before, size), x, part(0, after)]
    return ops.concatenate([p for p in parts if p.shape[axis]], axis)


def one_hot(tensor: Any, num_classes: int = -1) -> Tensor:
    """int64 ``out[..., k] = (tensor[...] == k)``; ``num_classes=-1`` reads the largest
    value (one more class than it), which a compiled function cannot. A value outside
    ``[0, num_classes)`` gives a row of zeros where PyTorch raises."""
    labels = ops.as_tensor(tensor)
    if labels.dtype.kind not in "iu":
        raise user_error(DTypeError, f"one_hot: is only applicable to index tensors, got {labels.dtype.name}")
    if num_classes == -1:
        num_classes = int(ops.max(labels).item()) + 1 if labels.size else 0
    return ops.one_hot(labels.astype("int64"), int(num_classes), "int64")
