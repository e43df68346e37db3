"""``tf.image``: TensorFlow's image functions over NHWC batches or single HWC images, so
that ``import braze as tf`` reads ``tf.image.resize`` in a ``tf.data`` pipeline."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from braze.ops import random as random_ops
from braze.ops.core import as_tensor
from braze.ops.image import as_batch, resize_to, unbatch
from braze.ops.math import maximum, sqrt, where
from braze.ops.reduction import mean
from braze.ops.shape import expand_dims, flip, transpose
from braze.tensor import Tensor

__all__ = [
    "adjust_brightness",
    "adjust_contrast",
    "flip_left_right",
    "flip_up_down",
    "per_image_standardization",
    "random_flip_left_right",
    "random_flip_up_down",
    "resize",
    "rot90",
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
    if method not in ("bilinear", "nearest"):
        raise NotImplementedError(f"tf.image.resize: method={method!r} (only 'bilinear' and 'nearest')")
    if preserve_aspect_ratio or antialias:
        raise NotImplementedError("tf.image.resize: preserve_aspect_ratio and antialias are not supported")
    given = as_tensor(images)
    x, single = as_batch(given, "tf.image.resize")
    height, width = (int(s) for s in size)
    resized = unbatch(resize_to(x, height, width, method), single)
    return resized if method == "bilinear" or given.dtype.is_float else resized.astype(given.dtype)


def flip_left_right(image: Any) -> Tensor:
    return flip(as_tensor(image), -2)


def flip_up_down(image: Any) -> Tensor:
    return flip(as_tensor(image), -3)


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
