"""Reading images at arbitrary points, as TensorFlow's image ops do: ``sample`` brings each
point into the image by a fill mode (``"reflect"``: d c b a | a b c d | d c b a,
``"wrap"``, ``"nearest"``, or ``"constant"``: ``fill_value`` outside) and reads it by
bilinear or nearest interpolation, each of the four neighbours one gather from the
flattened image; ``resize_to`` reads a regular grid of points (``tf.image.resize``). The
image layers of ``braze.nn`` and ``tf.image`` are built on them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from braze.ir.dtypes import DType, float32, float64, int32
from braze.ir.errors import ShapeError
from braze.ops.core import broadcast_to
from braze.ops.creation import arange
from braze.ops.indexing import take_along_axis
from braze.ops.math import clip, floor, remainder, where
from braze.ops.shape import expand_dims, pad, stack, transpose
from braze.tensor import Tensor, user_error

__all__ = ["as_batch", "coordinate_dtype", "extract_patches", "grid", "resize_to", "sample", "unbatch"]


def as_batch(images: Tensor, who: str) -> tuple[Tensor, bool]:
    """``images`` as a float NHWC batch (one HWC image as a batch of one, integer pixels as
    float32), and whether it was one image; ``who`` names the caller in the error."""
    if images.ndim not in (3, 4):
        raise user_error(ShapeError, f"{who}: expected NHWC images or one HWC image, got shape {images.shape}")
    batch = images if images.dtype.is_float else images.astype("float32")
    return (batch if images.ndim == 4 else expand_dims(batch, 0)), images.ndim == 3


def unbatch(batch: Tensor, single: bool) -> Tensor:
    """What :func:`as_batch` took: the one image back out of its batch of one."""
    return batch[0] if single else batch


def coordinate_dtype(images: Tensor) -> DType:
    """The type points in ``images`` are computed in: float64 for float64 images, else
    float32 (bfloat16 holds whole numbers exactly only up to 256)."""
    return float64 if images.dtype == float64 else float32


def grid(images: Tensor, height: int, width: int) -> tuple[Tensor, Tensor]:
    """The row and column numbers of a height x width image, shaped (1, H, 1) and (1, 1, W)."""
    dtype = coordinate_dtype(images)
    rows = arange(height, dtype=dtype, device=images.device).reshape(1, height, 1)
    return rows, arange(width, dtype=dtype, device=images.device).reshape(1, 1, width)


def sample(images: Tensor, y: Tensor, x: Tensor, fill_mode: str, interpolation: str, fill_value: float) -> Tensor:
    """``images`` (N, H, W, C) read at the points ``y``, ``x`` (N, Ho, Wo, in
    :func:`coordinate_dtype`): (N, Ho, Wo, C) in the images' type."""
    n, height, width, channels = images.shape
    y, x = _fill(y, height, fill_mode), _fill(x, width, fill_mode)
    flat = images.reshape(n, height * width, channels)

    def read(rows: Tensor, cols: Tensor) -> Tensor:
        """The pixels at integral points: one gather; outside the image ``fill_value``."""
        inside = (rows >= 0) & (rows <= height - 1) & (cols >= 0) & (cols <= width - 1)
        index = clip(rows, 0, height - 1).astype(int32) * width + clip(cols, 0, width - 1).astype(int32)
        pixels = take_along_axis(flat, index.reshape(n, -1, 1), axis=1)
        return where(inside[..., None], pixels.reshape(*rows.shape, channels), fill_value)

    if interpolation == "nearest":
        return read(floor(y + 0.5), floor(x + 0.5))
    y0, x0 = floor(y), floor(x)
    dy, dx = ((p - p0)[..., None].astype(images.dtype) for p, p0 in ((y, y0), (x, x0)))
    top = read(y0, x0) * (1 - dx) + read(y0, x0 + 1) * dx
    return top * (1 - dy) + (read(y0 + 1, x0) * (1 - dx) + read(y0 + 1, x0 + 1) * dx) * dy


def _fill(point: Tensor, size: int, fill_mode: str) -> Tensor:
    """``point`` brought into [0, size - 1] by the fill mode (``"constant"`` keeps it)."""
    if fill_mode == "reflect":  # about the outer edges of the first and last pixels
        folded = remainder(point + 0.5, 2.0 * size)
        point = where(folded >= size, 2.0 * size - folded, folded) - 0.5
    elif fill_mode == "wrap":
        point = remainder(point, float(size))
    return point if fill_mode == "constant" else clip(point, 0.0, size - 1.0)


def resize_to(
    images: Tensor, height: int, width: int, interpolation: str = "bilinear", crop_to_aspect_ratio: bool = False
) -> Tensor:
    """NHWC ``images`` resized to height x width as TensorFlow's ``image.resize`` does (pixel
    centres at half steps, the edges clamped); with ``crop_to_aspect_ratio``, the largest
    centred window of the target's aspect ratio is what is resized."""
    n, rows_in, cols_in, _ = images.shape
    if crop_to_aspect_ratio:
        crop_rows = max(min(rows_in, int(cols_in * height / width)), 1)
        crop_cols = max(min(cols_in, int(rows_in * width / height)), 1)
        top, left = (rows_in - crop_rows) // 2, (cols_in - crop_cols) // 2
        images = images[:, top : top + crop_rows, left : left + crop_cols]
        n, rows_in, cols_in, _ = images.shape
    if (rows_in, cols_in) == (height, width):
        return images
    rows, cols = grid(images, height, width)
    y = broadcast_to((rows + 0.5) * (rows_in / height) - 0.5, (n, height, width))
    x = broadcast_to((cols + 0.5) * (cols_in / width) - 0.5, (n, height, width))
    return sample(images, y, x, "nearest", interpolation, 0.0)


def extract_patches(
    images: Tensor, size: int | Sequence[int], strides: Any = None, padding: str = "valid", dilation: Any = 1
) -> Tensor:
    """The ``size`` patches of NHWC (or HWC) ``images`` every ``strides`` pixels (the size by
    default), their pixels ``dilation`` apart, each flattened in (row, column, channel)
    order: (N, rows, columns, ph * pw * C), as Keras's and TensorFlow's ``extract_patches``.
    ``"valid"`` keeps the patches inside the images; ``"same"`` pads with zeros, as
    TensorFlow does, to one patch every ``strides`` pixels."""
    ph, pw = _pair(size)
    sh, sw = (ph, pw) if strides is None else _pair(strides)
    dh, dw = _pair(dilation)
    mode = padding.lower()
    if mode not in ("valid", "same") or min(ph, pw, sh, sw, dh, dw) < 1:
        raise ValueError(
            f"extract_patches: sizes, strides and dilations of at least 1 and padding 'valid' or 'same', got size "
            f"{size!r}, strides {strides!r}, dilation {dilation!r}, padding {padding!r}"
        )
    batch = images if images.ndim == 4 else images.reshape(1, *images.shape)
    n, height, width, channels = batch.shape
    if (sh, sw, dh, dw) == (ph, pw, 1, 1) and mode == "valid":  # tiles: a reshape
        rows, cols = height // ph, width // pw
        tiles = batch[:, : rows * ph, : cols * pw].reshape(n, rows, ph, cols, pw, channels)
        patches = transpose(tiles, (0, 1, 3, 2, 4, 5)).reshape(n, rows, cols, ph * pw * channels)
        return patches if images.ndim == 4 else patches[0]
    span_h, span_w = (ph - 1) * dh + 1, (pw - 1) * dw + 1
    if mode == "same":
        rows, cols = -(-height // sh), -(-width // sw)
        extra_h, extra_w = max((rows - 1) * sh + span_h - height, 0), max((cols - 1) * sw + span_w - width, 0)
        batch = pad(
            batch, [(0, 0), (extra_h // 2, extra_h - extra_h // 2), (extra_w // 2, extra_w - extra_w // 2), (0, 0)]
        )
    else:
        rows, cols = (height - span_h) // sh + 1, (width - span_w) // sw + 1
        if rows < 1 or cols < 1:
            raise ValueError(f"extract_patches: a {span_h}x{span_w} patch does not fit images of {height}x{width}")
    pieces = [
        batch[:, i * dh : i * dh + (rows - 1) * sh + 1 : sh, j * dw : j * dw + (cols - 1) * sw + 1 : sw]
        for i in range(ph)
        for j in range(pw)
    ]
    patches = stack(pieces, axis=3).reshape(n, rows, cols, ph * pw * channels)
    return patches if images.ndim == 4 else patches[0]


def _pair(value: Any) -> tuple[int, int]:
    return (int(value), int(value)) if isinstance(value, (int, np.integer)) else (int(value[0]), int(value[1]))
