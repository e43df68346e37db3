"""``tf.image``: TensorFlow's image functions over NHWC batches or single HWC images, so
that ``import braze as tf`` reads ``tf.image.resize`` in a ``tf.data`` pipeline."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from braze.ops import random as random_ops
from braze.ops.core import as_tensor
from braze.ops.image import resize_to
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


def _batched(image: Any) -> tuple[Tensor, bool]:
    """``image`` as an NHWC batch (a float tensor), and whether it was one HWC image."""
    x = as_tensor(image)
    if x.ndim not in (3, 4):
        raise ValueError(f"tf.image: expected NHWC images or one HWC image, got shape {x.shape}")
    x = x if x.dtype.is_float else x.astype("float32")
    return (expand_dims(x, 0), True) if x.ndim == 3 else (x, False)


def _unbatched(x: Tensor, single: bool) -> Tensor:
    return x[0] if single else x


def resize(
    images: Any,
    size: Sequence[int],
    method: str = "bilinear",
    preserve_aspect_ratio: bool = False,
    antialias: bool = False,
) -> Tensor:
    """Images resized to ``size`` (height, width), bilinear or nearest, with half-pixel
    centres as TensorFlow 2's ``tf.image.resize``."""
    if method not in ("bilinear", "nearest"):
        raise NotImplementedError(f"tf.image.resize: method={method!r} (only 'bilinear' and 'nearest')")
    if preserve_aspect_ratio or antialias:
        raise NotImplementedError("tf.image.resize: preserve_aspect_ratio and antialias are not supported")
    x, single = _batched(images)
    height, width = (int(s) for s in size)
    return _unbatched(resize_to(x, height, width, method), single)


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


def _random_flip(image: Any, axis: int, seed: int | None) -> Tensor:
    x, single = _batched(image)
    draw = random_ops.rand((x.shape[0], 1, 1, 1), x.dtype, seed=seed, device=x.device)
    return _unbatched(where(draw < 0.5, flip(x, axis), x), single)


def random_flip_left_right(image: Any, seed: int | None = None) -> Tensor:
    """Each image flipped left to right with probability one half."""
    return _random_flip(image, 2, seed)


def random_flip_up_down(image: Any, seed: int | None = None) -> Tensor:
    """Each image flipped top to bottom with probability one half."""
    return _random_flip(image, 1, seed)


def adjust_brightness(image: Any, delta: float) -> Tensor:
    return as_tensor(image) + delta


def adjust_contrast(images: Any, contrast_factor: float) -> Tensor:
    """Each channel's distance from its image's mean scaled by ``contrast_factor``."""
    x, single = _batched(images)
    centre = mean(x, axis=(1, 2), keepdims=True)
    return _unbatched((x - centre) * contrast_factor + centre, single)


def per_image_standardization(image: Any) -> Tensor:
    """Each image less its mean, over its standard deviation (at least 1/sqrt(its size))."""
    x, single = _batched(image)
    centred = x - mean(x, axis=(1, 2, 3), keepdims=True)
    deviation = sqrt(mean(centred * centred, axis=(1, 2, 3), keepdims=True))
    return _unbatched(centred / maximum(deviation, float(x[0].size) ** -0.5), single)
