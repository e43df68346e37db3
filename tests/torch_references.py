"""NumPy transcriptions of PyTorch's documented formulas for its CNN layers, in float64 on
NCHW arrays, and the float32 rounding bound the tests compare braze against them with.
Each is written from the documentation's definition (direct loops over windows and taps),
not from braze's way of computing it."""

from __future__ import annotations

import math

import numpy as np

import braze

U32 = 2.0**-24  # float32's unit roundoff
MODES = ("eager", "lazy", "jit")


def assert_within_rounding(got, exact, magnitude, steps: int) -> None:
    """``got`` (float32) within ``steps`` roundings of ``magnitude`` of the float64 ``exact``:
    a float32 sum of n terms whose absolute values add up to ``magnitude`` is off by at most
    n * u * magnitude, in any order of addition (Higham's bound)."""
    error = np.abs(np.asarray(got, np.float64) - exact)
    bound = steps * U32 * np.asarray(magnitude) + np.finfo(np.float32).tiny
    worst = np.unravel_index(np.argmax(error - bound), error.shape) if error.ndim else ()
    assert np.all(error <= bound), (
        f"off by {error[worst]} at {worst}, beyond the rounding bound {np.broadcast_to(bound, error.shape)[worst]}"
    )


def run_layer(mode: str, layer, *arrays: np.ndarray) -> np.ndarray:
    """``layer(*arrays)``: eagerly on the CPU, traced on the lazy CPU (the layer moved there),
    or compiled by ``braze.jit`` (the layer an argument of the compiled function)."""
    device = braze.LAZY_CPU if mode == "lazy" else braze.CPU
    layer.to(device)
    tensors = [braze.tensor(a, device=device) for a in arrays]
    call = braze.jit(_call) if mode == "jit" else _call
    return call(layer, *tensors).numpy()


def _call(layer, *tensors):
    return layer(*tensors)


def conv2d(x, w, b=None, stride=(1, 1), pads=((0, 0), (0, 0)), dilation=(1, 1), groups=1) -> np.ndarray:
    """``out[n, o, i, j] = b[o] + sum over c, p, q of xp[n, g * Cg + c, i * sh + p * dh, j * sw + q * dw]
    * w[o, c, p, q]``: Conv2d's definition, ``xp`` the input zero-padded by ``pads``
    ((top, bottom), (left, right)), ``g`` output channel o's group, ``Cg`` = in / groups."""
    xp = np.pad(x, ((0, 0), (0, 0), *pads))
    (sh, sw), (dh, dw) = stride, dilation
    out_channels, group_channels, kh, kw = w.shape
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((x.shape[0], out_channels, oh, ow))
    per_group = out_channels // groups
    for o in range(out_channels):
        first = o // per_group * group_channels
        for p in range(kh):
            for q in range(kw):
                rows = slice(p * dh, p * dh + (oh - 1) * sh + 1, sh)
                cols = slice(q * dw, q * dw + (ow - 1) * sw + 1, sw)
                patch = xp[:, first : first + group_channels, rows, cols]
                out[:, o] += np.einsum("ncij,c->nij", patch, w[o, :, p, q])
    return out if b is None else out + b[None, :, None, None]


def pool_output(size: int, k: int, s: int, p: int, ceil_mode: bool = False) -> int:
    """PyTorch's pooled size: floor (or ceil) of (size + 2p - k) / s, plus 1; with
    ``ceil_mode`` a last window that would start in the right padding is dropped."""
    out = (math.ceil if ceil_mode else math.floor)((size + 2 * p - k) / s) + 1
    return out - 1 if ceil_mode and (out - 1) * s >= size + p else out


def pool2d(x, kind, k, s, p, ceil_mode=False, count_include_pad=True, divisor=None) -> np.ndarray:
    """The max or mean over each window, a loop over output pixels. Window (i, j) covers
    padded rows i * sh .. i * sh + kh (the padding p on each side; past it nothing, where
    ``ceil_mode``'s last window hangs over). A mean divides by ``divisor``, else by the
    window's cells within the padded image (``count_include_pad``) or within the image."""
    (kh, kw), (sh, sw), (ph, pw) = k, s, p
    oh = pool_output(x.shape[2], kh, sh, ph, ceil_mode)
    ow = pool_output(x.shape[3], kw, sw, pw, ceil_mode)
    beyond = (oh * sh + kh, ow * sw + kw)  # room for every window, past the padding too
    grid = np.full((*x.shape[:2], *beyond), np.nan)
    grid[:, :, ph : ph + x.shape[2], pw : pw + x.shape[3]] = x
    padded = np.zeros(beyond, bool)
    padded[: x.shape[2] + 2 * ph, : x.shape[3] + 2 * pw] = True
    inside = ~np.isnan(grid[0, 0])
    out = np.empty((*x.shape[:2], oh, ow))
    for i in range(oh):
        for j in range(ow):
            window = (slice(i * sh, i * sh + kh), slice(j * sw, j * sw + kw))
            values = grid[(..., *window)]
            if kind == "max":
                out[:, :, i, j] = np.nanmax(values, axis=(2, 3))
            else:
                count = divisor or (padded[window].sum() if count_include_pad else inside[window].sum())
                out[:, :, i, j] = np.nansum(values, axis=(2, 3)) / count
    return out


def adaptive_avg_pool2d(x, oh: int, ow: int) -> np.ndarray:
    """Output pixel (i, j) averages input rows floor(i * H / oh) .. ceil((i + 1) * H / oh)
    and the columns likewise."""
    h, w = x.shape[-2:]
    out = np.empty((*x.shape[:-2], oh, ow))
    for i in range(oh):
        for j in range(ow):
            rows = slice(i * h // oh, math.ceil((i + 1) * h / oh))
            cols = slice(j * w // ow, math.ceil((j + 1) * w / ow))
            out[..., i, j] = x[..., rows, cols].mean(axis=(-2, -1))
    return out


def batch_norm_steps(batches, momentum, eps, weight, bias):
    """PyTorch's BatchNorm in training over ``batches``: each normalized by its own mean and
    biased variance per channel (axis 1), then ``running = (1 - momentum) * running +
    momentum * batch`` from zeros and ones, the variance unbiased (times n / (n - 1)); a
    ``momentum`` of None averages all batches equally. Returns the outputs, the running
    mean and the running variance."""
    channels = batches[0].shape[1]
    running_mean, running_var = np.zeros(channels), np.ones(channels)
    spread = (1, channels) + (1,) * (batches[0].ndim - 2)
    outputs = []
    for step, x in enumerate(batches, 1):
        axes = (0, *range(2, x.ndim))
        mean, var = x.mean(axes), x.var(axes)
        y = (x - mean.reshape(spread)) / np.sqrt(var.reshape(spread) + eps)
        outputs.append(y * weight.reshape(spread) + bias.reshape(spread))
        n = x.size // channels
        factor = 1 / step if momentum is None else momentum
        running_mean = (1 - factor) * running_mean + factor * mean
        running_var = (1 - factor) * running_var + factor * var * n / (n - 1)
    return outputs, running_mean, running_var
