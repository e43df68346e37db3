"""Keras's image preprocessing layers: ``Resizing`` and ``CenterCrop``, and the augmentation
layers ``RandomFlip``, ``RandomRotation``, ``RandomZoom``, ``RandomTranslation``,
``RandomCrop``, ``RandomContrast`` and ``RandomBrightness``. While training each of the
latter draws its change for every image of the batch (on a lazy device and under
``@jit`` a new draw every step, as ``Dropout``'s masks); in inference they pass their
inputs through. As in Keras their ``call`` defaults to ``training=True``: called where no
caller said ``training`` (``data_augmentation(images)``, or a model called directly, or
in a ``tf.data`` map), they augment; ``fit`` trains them, ``predict`` and ``evaluate``
do not. Rotation, zoom and translation map each output pixel to a point of the
input image, as TensorFlow's projective transform does, and read it with
``braze.ops.image.sample`` (``fill_mode``, ``fill_value`` and ``interpolation`` are its).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from braze import ops
from braze.nn.conv import channels_last
from braze.nn.layer import Layer, new_generator
from braze.ops.image import as_batch, coordinate_dtype, grid, resize_to, sample, unbatch
from braze.ops.random import Generator
from braze.tensor import Tensor

__all__ = [
    "CenterCrop",
    "RandomBrightness",
    "RandomContrast",
    "RandomCrop",
    "RandomFlip",
    "RandomRotation",
    "RandomTranslation",
    "RandomZoom",
    "Resizing",
]

FILL_MODES = ("reflect", "wrap", "constant", "nearest")


def _bounds(
    layer: str, name: str, factor: float | Sequence[float], least: float = -math.inf, most: float = math.inf
) -> tuple[float, float]:
    """Keras's factor: a number f is the range [-f, f], a pair (lower, upper) is itself;
    lower <= upper, both in [least, most]."""
    low, high = (-float(factor), float(factor)) if isinstance(factor, (int, float)) else map(float, factor)
    if not least <= low <= high <= most:
        raise ValueError(
            f"{layer}: {name} must be a number f >= 0 or a pair lower <= upper, within "
            f"[{least}, {most}], got {factor!r}"
        )
    return low, high


class _Augmentation(Layer):
    """A random change of each image while training, NHWC batches or single HWC images."""

    def __init__(
        self,
        seed: int | None = None,
        data_format: str | None = None,
        *,
        generator: Generator | None = None,
        **kwargs: Any,
    ) -> None:
        channels_last(type(self).__name__, data_format)
        super().__init__(**kwargs)
        self._generator = new_generator(seed, generator)

    def call(self, x: Tensor, training: bool = True) -> Tensor:
        if not training:  # integer pixels come out float, trained or not
            return x if x.dtype.is_float else x.astype("float32")
        images, single = as_batch(x, self.name)
        return unbatch(self._augment(images), single)

    def _augment(self, images: Tensor) -> Tensor:
        raise NotImplementedError

    def _uniform(self, images: Tensor, low: float, high: float, dtype: Any = None) -> Tensor:
        """One draw in [low, high) per image, shaped (N, 1, 1), in ``dtype`` (the images')."""
        shape, dtype = (images.shape[0], 1, 1), dtype or images.dtype
        return ops.rand(shape, dtype, generator=self._generator, device=images.device) * (high - low) + low

    def _offset(self, images: Tensor, low: float, high: float) -> Tensor:
        """A draw per image for a point's coordinates (:func:`coordinate_dtype`)."""
        return self._uniform(images, low, high, coordinate_dtype(images))


class RandomFlip(_Augmentation):
    """Each image flipped left to right, top to bottom, or both (``mode``) with probability
    one half (with both, as Keras 3: unchanged or turned half a turn)."""

    def __init__(self, mode: str = "horizontal_and_vertical", seed: int | None = None, **kwargs: Any) -> None:
        axes = {"horizontal": (2,), "vertical": (1,), "horizontal_and_vertical": (2, 1)}
        if mode not in axes:
            raise ValueError(f"RandomFlip: mode must be one of {sorted(axes)}, got {mode!r}")
        super().__init__(seed, **kwargs)
        self.mode, self._axes = mode, axes[mode]

    def _augment(self, images: Tensor) -> Tensor:
        flipped = self._uniform(images, 0.0, 1.0)[..., None] < 0.5  # Keras 3: one draw for both axes
        for axis in self._axes:
            images = ops.where(flipped, ops.flip(images, axis), images)
        return images


class RandomBrightness(_Augmentation):
    """Each image shifted by a fraction of ``value_range`` drawn from ``factor`` (a number
    f is [-f, f]), then clipped to ``value_range``."""

    def __init__(
        self,
        factor: float | Sequence[float],
        value_range: Sequence[float] = (0, 255),
        seed: int | None = None,
        **kwargs: Any,
    ) -> None:
        low, high = _bounds("RandomBrightness", "factor", factor, -1.0, 1.0)
        super().__init__(seed, **kwargs)
        self.factor, self.value_range = factor, (float(value_range[0]), float(value_range[1]))
        span = self.value_range[1] - self.value_range[0]
        self._range = (low * span, high * span)

    def _augment(self, images: Tensor) -> Tensor:
        return ops.clip(images + self._uniform(images, *self._range)[..., None], *self.value_range)


class RandomContrast(_Augmentation):
    """Each image's distance from its mean (per channel) scaled by a factor drawn from
    [1 - lower, 1 + upper], then clipped to ``value_range``, as Keras 3 does."""

    def __init__(
        self,
        factor: float | Sequence[float],
        value_range: Sequence[float] = (0, 255),
        seed: int | None = None,
        **kwargs: Any,
    ) -> None:
        lower, upper = (float(factor), float(factor)) if isinstance(factor, (int, float)) else map(float, factor)
        if not (0 <= lower <= 1 and upper >= 0):
            raise ValueError(f"RandomContrast: factor must be in [0, 1] (or a pair of them), got {factor!r}")
        super().__init__(seed, **kwargs)
        self.factor, self.value_range = factor, (float(value_range[0]), float(value_range[1]))
        self._range = (1.0 - lower, 1.0 + upper)

    def _augment(self, images: Tensor) -> Tensor:
        scale = self._uniform(images, *self._range)[..., None]
        mean = ops.mean(images, axis=(1, 2), keepdims=True)
        return ops.clip((images - mean) * scale + mean, *self.value_range)


class _Transform(_Augmentation):
    """A per-image affine map from output pixels to input points, then the sampling."""

    def __init__(
        self,
        fill_mode: str = "reflect",
        interpolation: str = "bilinear",
        seed: int | None = None,
        fill_value: float = 0.0,
        **kwargs: Any,
    ) -> None:
        kind = type(self).__name__
        if fill_mode not in FILL_MODES:
            raise NotImplementedError(f"{kind}: fill_mode={fill_mode!r} (one of {', '.join(FILL_MODES)})")
        if interpolation not in ("bilinear", "nearest"):
            raise NotImplementedError(f"{kind}: interpolation={interpolation!r} (only 'bilinear' and 'nearest')")
        super().__init__(seed, **kwargs)
        self.fill_mode, self.interpolation, self.fill_value = fill_mode, interpolation, float(fill_value)

    def _points(self, images: Tensor, rows: Tensor, cols: Tensor) -> tuple[Tensor, Tensor]:
        """The input point (row, column) each output pixel reads, each (N, H, W)."""
        raise NotImplementedError

    def _augment(self, images: Tensor) -> Tensor:
        n, height, width, _ = images.shape
        rows, cols = grid(images, height, width)
        y, x = (ops.broadcast_to(p, (n, height, width)) for p in self._points(images, rows, cols))
        return sample(images, y, x, self.fill_mode, self.interpolation, self.fill_value)


def _centre(images: Tensor) -> tuple[float, float]:
    """The (row, column) of the images' centre, about which they turn and zoom."""
    return (images.shape[1] - 1) / 2, (images.shape[2] - 1) / 2


class RandomRotation(_Transform):
    """Each image rotated about its centre by an angle drawn from ``factor`` (fractions of
    a full turn: 0.1 is up to 36 degrees either way; positive is counter-clockwise)."""

    def __init__(
        self,
        factor: float | Sequence[float],
        fill_mode: str = "reflect",
        interpolation: str = "bilinear",
        seed: int | None = None,
        fill_value: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)
        self.factor = factor
        self._range = tuple(2 * math.pi * f for f in _bounds("RandomRotation", "factor", factor))

    def _points(self, images: Tensor, rows: Tensor, cols: Tensor) -> tuple[Tensor, Tensor]:
        angle = self._offset(images, *self._range)
        cos, sin = ops.cos(angle), ops.sin(angle)
        cy, cx = _centre(images)
        y, x = rows - cy, cols - cx
        return sin * x + cos * y + cy, cos * x - sin * y + cx


class RandomZoom(_Transform):
    """Each image zoomed about its centre by a factor drawn from ``height_factor`` (and
    ``width_factor``; None keeps the aspect ratio): 0.2 is 20% out, -0.2 20% in."""

    def __init__(
        self,
        height_factor: float | Sequence[float],
        width_factor: float | Sequence[float] | None = None,
        fill_mode: str = "reflect",
        interpolation: str = "bilinear",
        seed: int | None = None,
        fill_value: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._heights = _bounds("RandomZoom", "height_factor", height_factor, least=-1.0)
        self._widths = None if width_factor is None else _bounds("RandomZoom", "width_factor", width_factor, -1.0)

    def _points(self, images: Tensor, rows: Tensor, cols: Tensor) -> tuple[Tensor, Tensor]:
        zoom_y = 1.0 + self._offset(images, *self._heights)
        zoom_x = zoom_y if self._widths is None else 1.0 + self._offset(images, *self._widths)
        cy, cx = _centre(images)
        return (rows - cy) * zoom_y + cy, (cols - cx) * zoom_x + cx


class RandomTranslation(_Transform):
    """Each image shifted by fractions of its height and width drawn from
    ``height_factor`` and ``width_factor`` (positive: down and right)."""

    def __init__(
        self,
        height_factor: float | Sequence[float],
        width_factor: float | Sequence[float],
        fill_mode: str = "reflect",
        interpolation: str = "bilinear",
        seed: int | None = None,
        fill_value: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._heights = _bounds("RandomTranslation", "height_factor", height_factor, -1.0, 1.0)
        self._widths = _bounds("RandomTranslation", "width_factor", width_factor, -1.0, 1.0)

    def _points(self, images: Tensor, rows: Tensor, cols: Tensor) -> tuple[Tensor, Tensor]:
        shift_y = self._offset(images, *self._heights) * images.shape[1]
        shift_x = self._offset(images, *self._widths) * images.shape[2]
        return rows - shift_y, cols - shift_x


def _size(layer: str, height: int, width: int) -> tuple[int, int]:
    if int(height) < 1 or int(width) < 1:
        raise ValueError(f"{layer}: height and width must be positive, got {height} and {width}")
    return int(height), int(width)


class Resizing(Layer):
    """Images resized to ``height`` x ``width`` (bilinear or nearest), in training and
    inference alike; ``crop_to_aspect_ratio`` resizes the largest centred window of that
    aspect ratio instead of stretching."""

    def __init__(
        self,
        height: int,
        width: int,
        interpolation: str = "bilinear",
        crop_to_aspect_ratio: bool = False,
        pad_to_aspect_ratio: bool = False,
        data_format: str | None = None,
        **kwargs: Any,
    ) -> None:
        channels_last("Resizing", data_format)
        if interpolation not in ("bilinear", "nearest"):
            raise NotImplementedError(f"Resizing: interpolation={interpolation!r} (only 'bilinear' and 'nearest')")
        if pad_to_aspect_ratio:
            raise NotImplementedError("Resizing: pad_to_aspect_ratio=True is not supported (crop_to_aspect_ratio is)")
        super().__init__(**kwargs)
        self.height, self.width = _size("Resizing", height, width)
        self.interpolation, self.crop_to_aspect_ratio = interpolation, bool(crop_to_aspect_ratio)

    def call(self, x: Tensor) -> Tensor:
        images, single = as_batch(x, self.name)
        return unbatch(
            resize_to(images, self.height, self.width, self.interpolation, self.crop_to_aspect_ratio), single
        )


class CenterCrop(Layer):
    """The centred ``height`` x ``width`` window of each image; an image smaller than that
    is resized (its largest window of that aspect ratio), as Keras 3 does."""

    def __init__(self, height: int, width: int, data_format: str | None = None, **kwargs: Any) -> None:
        channels_last("CenterCrop", data_format)
        super().__init__(**kwargs)
        self.height, self.width = _size("CenterCrop", height, width)

    def call(self, x: Tensor) -> Tensor:
        images, single = as_batch(x, self.name)
        rows, cols = images.shape[1:3]
        if rows >= self.height and cols >= self.width:
            top, left = (rows - self.height) // 2, (cols - self.width) // 2
            out = images[:, top : top + self.height, left : left + self.width]
        else:
            out = resize_to(images, self.height, self.width, "bilinear", crop_to_aspect_ratio=True)
        return unbatch(out, single)


class RandomCrop(_Augmentation):
    """While training, a ``height`` x ``width`` window at a random place, the same for the
    whole batch, as Keras crops; in inference (and for images smaller than the window) the
    largest centred window of that aspect ratio, resized, as tf.keras and Keras's
    documentation do."""

    def __init__(self, height: int, width: int, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(seed, **kwargs)
        self.height, self.width = _size("RandomCrop", height, width)

    def call(self, x: Tensor, training: bool = True) -> Tensor:
        images, single = as_batch(x, self.name)
        rows, cols = images.shape[1:3]
        if training and rows >= self.height and cols >= self.width:
            out = self._augment(images)
        else:
            out = resize_to(images, self.height, self.width, "bilinear", crop_to_aspect_ratio=True)
        return unbatch(out, single)

    def _augment(self, images: Tensor) -> Tensor:
        n, rows, cols, _ = images.shape
        one = images[:1]  # one window for the whole batch, as Keras crops
        top = ops.floor(self._offset(one, 0.0, rows - self.height + 1.0))
        left = ops.floor(self._offset(one, 0.0, cols - self.width + 1.0))
        y, x = grid(images, self.height, self.width)
        shape = (n, self.height, self.width)
        return sample(
            images, ops.broadcast_to(y + top, shape), ops.broadcast_to(x + left, shape), "nearest", "nearest", 0.0
        )
