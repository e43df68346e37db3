"""``tf.image``: TensorFlow's image functions over NHWC batches or single HWC images, so
that ``import braze as tf`` reads ``tf.image.resize`` in a ``tf.data`` pipeline."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from braze.ir.dtypes import as_dtype
from braze.ops import random as random_ops
from braze.ops.core import as_tensor, astype
from braze.ops.image import as_batch, resize_to, unbatch
from braze.ops.image import extract_patches as patches_of
from braze.ops.linalg import matmul
from braze.ops.math import clip, log, maximum, sqrt, where
from braze.ops.reduction import mean
from braze.ops.shape import expand_dims, flip, pad, reshape, transpose
from braze.tensor import Tensor

__all__ = [
    "adjust_brightness",
    "adjust_contrast",
    "convert_image_dtype",
    "crop_to_bounding_box",
    "extract_patches",
    "flip_left_right",
    "flip_up_down",
    "pad_to_bounding_box",
    "per_image_standardization",
    "psnr",
    "random_flip_left_right",
    "random_flip_up_down",
    "resize",
    "rgb_to_yuv",
    "rot90",
    "yuv_to_rgb",
]


def _float_images(op: str, image: Any) -> Tensor:
    """TensorFlow scales integer images into [0, 1] by their dtype's range; braze reads
    uint8 images as int32, so that range is lost: integer images are refused."""
    x = as_tensor(image)
    if not x.dtype.is_float:
        raise TypeError(
            f"tf.image.{op}: images of {x.dtype.name} (braze reads uint8 images as int32, so their value range "
            "is unknown): convert them first, e.g. tf.cast(image, tf.float32) / 255"
        )
    return x


def resize(
    images: Any,
    size: Sequence[int],
    method: str = "bilinear",
    preserve_aspect_ratio: bool = False,
    antialias: bool = False,
) -> Tensor:
    """Images resized to ``size`` (height, width), bilinear or nearest, with half-pixel
    centres as TensorFlow 2's ``tf.image.resize``: float32 out of bilinear, the images'
    type out of nearest."""
    if method not in ("bilinear", "nearest", "area"):
        raise NotImplementedError(f"tf.image.resize: method={method!r} (only 'bilinear', 'nearest' and 'area')")
    if preserve_aspect_ratio or antialias:
        raise NotImplementedError("tf.image.resize: preserve_aspect_ratio and antialias are not supported")
    given = as_tensor(images)
    x, single = as_batch(given, "tf.image.resize")
    height, width = (int(s) for s in size)
    if method == "area":
        return unbatch(_shrink_by_areas(x.astype("float32") if not x.dtype.is_float else x, height, width), single)
    resized = unbatch(resize_to(x, height, width, method), single)
    return resized if method == "bilinear" or given.dtype.is_float else resized.astype(given.dtype)


def _shrink_by_areas(x: Tensor, height: int, width: int) -> Tensor:
    """Each output pixel the mean of the block of input pixels it covers: TensorFlow's area
    resize, for sizes that divide the images' (blocks of whole pixels)."""
    n, rows, cols, channels = x.shape
    if rows % height or cols % width:
        raise NotImplementedError(
            f"tf.image.resize: method='area' from {rows}x{cols} to {height}x{width}: only to sizes that divide the "
            "images' (whole blocks of pixels)"
        )
    blocks = reshape(x, (n, height, rows // height, width, cols // width, channels))
    return mean(blocks, (2, 4))


# TensorFlow's YUV (BT.601): rgb @ _RGB_TO_YUV, and back.
_RGB_TO_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512], [0.114, 0.43601035, -0.10001026]]
_YUV_TO_RGB = [[1.0, 1.0, 1.0], [0.0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0.0]]


def _colour_product(op: str, images: Any, matrix: list[list[float]]) -> Tensor:
    x = _float_images(op, images)
    if x.shape[-1] != 3:
        raise ValueError(f"tf.image.{op}: images need 3 channels last, got shape {x.shape}")
    return matmul(x, as_tensor(matrix, x.dtype))


def rgb_to_yuv(images: Any) -> Tensor:
    """RGB images (floats in [0, 1]) to YUV, as ``tf.image.rgb_to_yuv``."""
    return _colour_product("rgb_to_yuv", images, _RGB_TO_YUV)


def yuv_to_rgb(images: Any) -> Tensor:
    """YUV images back to RGB, as ``tf.image.yuv_to_rgb``."""
    return _colour_product("yuv_to_rgb", images, _YUV_TO_RGB)


def psnr(a: Any, b: Any, max_val: float) -> Tensor:
    """The peak signal-to-noise ratio of each image pair, in dB: 20 log10(max_val) - 10
    log10(mean squared error over height, width and channels), as ``tf.image.psnr``."""
    x, y = _float_images("psnr", a), _float_images("psnr", b)
    error = mean((x - y) * (x - y), (-3, -2, -1))
    return 20.0 * math.log10(max_val) - (10.0 / math.log(10.0)) * log(error)


def flip_left_right(image: Any) -> Tensor:
    return flip(as_tensor(image), -2)


def flip_up_down(image: Any) -> Tensor:
    return flip(as_tensor(image), -3)


def _box(op: str, x: Tensor, offsets: tuple[int, int], size: tuple[int, int], inside: tuple[int, int]) -> None:
    """Check that the box of ``size`` at ``offsets`` lies within ``inside`` (height, width)."""
    if x.ndim not in (3, 4):
        raise ValueError(f"tf.image.{op}: an image (H, W, C) or a batch of them, got shape {x.shape}")
    if min(*offsets, *size) < 0 or offsets[0] + size[0] > inside[0] or offsets[1] + size[1] > inside[1]:
        raise ValueError(
            f"tf.image.{op}: a box of {size[0]}x{size[1]} at ({offsets[0]}, {offsets[1]}) does not fit "
            f"{inside[0]}x{inside[1]}"
        )


def convert_image_dtype(image: Any, dtype: Any, saturate: bool = False, name: str | None = None) -> Tensor:
    """``image`` in ``dtype``: integer pixels (a decoded image's uint8, or an integer tensor)
    become floats in [0, 1], divided by their type's largest value; floats in [0, 1] become
    integers scaled to the type's range; floats stay floats: ``tf.image.convert_image_dtype``."""
    target = as_dtype(dtype, "tf.image.convert_image_dtype")
    host = isinstance(image, np.ndarray) and image.dtype.kind in "ui"
    source = np.dtype(image.dtype) if host else as_tensor(image).dtype.numpy
    x = as_tensor(image.astype(np.float64) if host else image)
    if source.kind in "ui":
        if not target.is_float:
            raise NotImplementedError("tf.image.convert_image_dtype: integer images to floats only")
        return astype(x, target) / float(np.iinfo(source).max)
    if target.is_float:
        return astype(x, target)
    top = float(np.iinfo(target.numpy).max)
    scaled = x * (top + 0.5)
    return astype(clip(scaled, 0.0, top) if saturate else scaled, target)


def crop_to_bounding_box(
    image: Any, offset_height: int, offset_width: int, target_height: int, target_width: int
) -> Tensor:
    """The ``target_height`` x ``target_width`` window of ``image`` from row ``offset_height``
    and column ``offset_width``: ``tf.image.crop_to_bounding_box``."""
    x = as_tensor(image)
    offsets, size = (int(offset_height), int(offset_width)), (int(target_height), int(target_width))
    _box("crop_to_bounding_box", x, offsets, size, x.shape[-3:-1])
    return x[..., offsets[0] : offsets[0] + size[0], offsets[1] : offsets[1] + size[1], :]


def extract_patches(
    images: Any,
    sizes: Sequence[int],
    strides: Sequence[int],
    rates: Sequence[int],
    padding: str,
    name: str | None = None,
) -> Tensor:
    """``tf.image.extract_patches`` of NHWC ``images``: ``sizes``, ``strides`` and ``rates``
    as [1, rows, columns, 1], ``padding`` "VALID" or "SAME"."""
    for what, value in (("sizes", sizes), ("strides", strides), ("rates", rates)):
        if len(value) != 4 or value[0] != 1 or value[3] != 1:
            raise ValueError(f"tf.image.extract_patches: {what} must be [1, rows, columns, 1], got {list(value)}")
    return patches_of(as_tensor(images), sizes[1:3], strides[1:3], padding, rates[1:3])


def pad_to_bounding_box(
    image: Any, offset_height: int, offset_width: int, target_height: int, target_width: int
) -> Tensor:
    """``image`` placed at (``offset_height``, ``offset_width``) in zeros of
    ``target_height`` x ``target_width``: ``tf.image.pad_to_bounding_box``."""
    x = as_tensor(image)
    offsets = (int(offset_height), int(offset_width))
    _box("pad_to_bounding_box", x, offsets, x.shape[-3:-1], (int(target_height), int(target_width)))
    after = (int(target_height) - offsets[0] - x.shape[-3], int(target_width) - offsets[1] - x.shape[-2])
    widths = [(0, 0)] * (x.ndim - 3) + [(offsets[0], after[0]), (offsets[1], after[1]), (0, 0)]
    return pad(x, widths)


def rot90(image: Any, k: int = 1) -> Tensor:
    """``image`` turned ``k`` quarter turns counter-clockwise."""
    x = as_tensor(image)
    axes = list(range(x.ndim))
    rows, cols = x.ndim - 3, x.ndim - 2
    axes[rows], axes[cols] = cols, rows
    for _ in range(k % 4):
        x = flip(transpose(x, axes), rows)
    return x


# One stream per op seed: a seeded flip draws anew at every call, as TensorFlow's does.
_STREAMS: dict[int, random_ops.Generator] = {}


def _random_flip(image: Any, axis: int, seed: int | None) -> Tensor:
    x = as_tensor(image)
    batch = expand_dims(x, 0) if x.ndim == 3 else x
    stream = None if seed is None else _STREAMS.setdefault(seed, random_ops.Generator(seed))
    draw = random_ops.rand((batch.shape[0], 1, 1, 1), generator=stream, device=x.device)
    flipped = where(draw < 0.5, flip(batch, axis), batch)
    return flipped[0] if x.ndim == 3 else flipped


def random_flip_left_right(image: Any, seed: int | None = None) -> Tensor:
    """Each image flipped left to right with probability one half."""
    return _random_flip(image, 2, seed)


def random_flip_up_down(image: Any, seed: int | None = None) -> Tensor:
    """Each image flipped top to bottom with probability one half."""
    return _random_flip(image, 1, seed)


def adjust_brightness(image: Any, delta: float) -> Tensor:
    """Float images plus ``delta``."""
    return _float_images("adjust_brightness", image) + delta


def adjust_contrast(images: Any, contrast_factor: float) -> Tensor:
    """Each channel's distance from its image's mean scaled by ``contrast_factor`` (float
    images)."""
    x, single = as_batch(_float_images("adjust_contrast", images), "tf.image.adjust_contrast")
    centre = mean(x, axis=(1, 2), keepdims=True)
    return unbatch((x - centre) * contrast_factor + centre, single)


def per_image_standardization(image: Any) -> Tensor:
    """Each image less its mean, over its standard deviation (at least 1/sqrt(its size))."""
    x, single = as_batch(as_tensor(image), "tf.image.per_image_standardization")
    centred = x - mean(x, axis=(1, 2, 3), keepdims=True)
    deviation = sqrt(mean(centred * centred, axis=(1, 2, 3), keepdims=True))
    return unbatch(centred / maximum(deviation, float(x[0].size) ** -0.5), single)
