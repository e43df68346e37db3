"""PyTorch's ``torch.nn.functional`` on NCHW images (``(C, H, W)`` unbatched too) with
OIHW filters: ``conv2d``, ``max_pool2d``, ``avg_pool2d``, ``adaptive_avg_pool2d`` and
``batch_norm``, with PyTorch's argument order and defaults (``braze.nn.functional`` exports
them).

They transpose to braze's channels-last ops (``braze.ops.nn``) and back, rather than having
NCHW kernels of their own. The compiler folds two transposes in a row into one (back to
NCHW, then to NHWC: none), and fuses a transpose into the elementwise loop beside it:
between two layers, the transposes around a ``relu`` are read in its one loop, and
activations are not copied. What remains is a copy of the input images and of each filter
(OIHW to HWIO, small) per call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from braze import ops
from braze.autodiff import no_grad
from braze.ir.errors import ShapeError
from braze.nn import functional
from braze.ops.linalg import matmul_transposed
from braze.ops.nn import positive_pair
from braze.ops.shape import split
from braze.tensor import Tensor, user_error

__all__ = ["adaptive_avg_pool2d", "avg_pool2d", "batch_norm", "conv2d", "max_pool2d"]

Size2 = int | Sequence[int]
_TO_NHWC, _TO_NCHW = (0, 2, 3, 1), (0, 3, 1, 2)


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
    zeros count: they are padded first, and braze's pooling, which divides by the pixels of
    what it pads, counts them but not a ``ceil_mode`` window's overhang past them (PyTorch's
    divisor; kH * kW for every other window). Without it, braze's padded pooling divides by
    the pixels inside (TensorFlow's convention). ``divisor_override`` divides each sum by it."""
    if divisor_override is not None and divisor_override == 0:
        raise ValueError("avg_pool2d: divisor must be not zero")
    x, unbatched = _batched("avg_pool2d", input)
    kernel, strides, (ph, pw) = _pool_window("avg_pool2d", kernel_size, stride, padding)
    sizes = zip(x.shape[2:], kernel, strides, (ph, pw), strict=True)
    eh, ew = (_ceil_extra(n, k, s, p) if ceil_mode else 0 for n, k, s, p in sizes)

    def pool(t: Tensor) -> Tensor:
        if divisor_override:  # each window's sum: the padded zeros and any overhang add nothing
            padded = ops.pad(t, ((0, 0), (ph, ph + eh), (pw, pw + ew), (0, 0)))
            return ops.avg_pool2d(padded, kernel, strides, "VALID") * (kernel[0] * kernel[1] / divisor_override)
        if count_include_pad:
            padded = ops.pad(t, ((0, 0), (ph, ph), (pw, pw), (0, 0))) if ph or pw else t
            return ops.avg_pool2d(padded, kernel, strides, ((0, eh), (0, ew)))
        return ops.avg_pool2d(t, kernel, strides, ((ph, ph + eh), (pw, pw + ew)))

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
    if len(sizes) != 2:
        raise ValueError(
            f"adaptive_avg_pool2d: output_size must be an int or a pair (None keeps a size), got {output_size!r}"
        )
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
    if momentum is None:  # the modules' cumulative average passes 1 / batches; the function takes a number
        raise TypeError("batch_norm: momentum must be a number (or a 0-d tensor), not None")
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
