"""Keras's image augmentation layers: ``RandomFlip``, ``RandomRotation``, ``RandomZoom``,
``RandomTranslation`` and ``RandomContrast``. While training each draws its change for
every image of the batch (on a lazy device and under ``@jit`` a new draw every step, as
``Dropout``'s masks); in inference they pass their inputs through.

Rotation, zoom and translation map each output pixel to a point of the input image, as
TensorFlow's projective transform does: the point is brought back into the image by
``fill_mode`` (``"reflect"``: d c b a | a b c d | d c b a, ``"wrap"``, ``"nearest"``, or
``"constant"``: ``fill_value`` outside), then read by ``"bilinear"`` or ``"nearest"``
interpolation, each of the four neighbours one gather from the flattened image.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from braze import ops
from braze.ir.dtypes import int32
from braze.ir.errors import ShapeError
from braze.nn.conv import channels_last
from braze.nn.layer import Layer, new_generator
from braze.ops.random import Generator
from braze.tensor import Tensor, user_error

__all__ = ["RandomContrast", "RandomFlip", "RandomRotation", "RandomTranslation", "RandomZoom"]

FILL_MODES = ("reflect", "wrap", "constant", "nearest")


def _bounds(layer: str, name: str, factor: float | Sequence[float], least: float = -math.inf) -> tuple[float, float]:
    """Keras's factor: a number f is the range [-f, f], a pair (lower, upper) is itself."""
    low, high = (-abs(float(factor)), abs(float(factor))) if isinstance(factor, (int, float)) else map(float, factor)
    if not least <= low <= high:
        raise ValueError(f"{layer}: {name} must be a number or a pair lower <= upper, above {least}, got {factor!r}")
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

    def call(self, x: Tensor, training: bool = False) -> Tensor:
        if not training:
            return x
        if x.ndim not in (3, 4):
            raise user_error(ShapeError, f"{self.name}: expected NHWC images or one HWC image, got shape {x.shape}")
        x = x if x.dtype.is_float else x.astype("float32")
        images = x if x.ndim == 4 else ops.expand_dims(x, 0)
        changed = self._augment(images)
        return changed if x.ndim == 4 else changed[0]

    def _augment(self, images: Tensor) -> Tensor:
        raise NotImplementedError

    def _uniform(self, images: Tensor, low: float, high: float) -> Tensor:
        """One draw in [low, high) per image, shaped (N, 1, 1)."""
        draw = ops.rand((images.shape[0], 1, 1), images.dtype, generator=self._generator, device=images.device)
        return draw * (high - low) + low


class RandomFlip(_Augmentation):
    """Each image flipped left to right, top to bottom, or both (``mode``), each with
    probability one half."""

    def __init__(self, mode: str = "horizontal_and_vertical", seed: int | None = None, **kwargs: Any) -> None:
        axes = {"horizontal": (2,), "vertical": (1,), "horizontal_and_vertical": (2, 1)}
        if mode not in axes:
            raise ValueError(f"RandomFlip: mode must be one of {sorted(axes)}, got {mode!r}")
        super().__init__(seed, **kwargs)
        self.mode, self._axes = mode, axes[mode]

    def _augment(self, images: Tensor) -> Tensor:
        for axis in self._axes:
            flipped = self._uniform(images, 0.0, 1.0)[..., None] < 0.5
            images = ops.where(flipped, ops.flip(images, axis), images)
        return images


class RandomContrast(_Augmentation):
    """Each image's distance from its mean (per channel) scaled by a factor drawn from
    [1 - lower, 1 + upper], then clipped to ``value_range``, as Keras 3 does."""

    def __init__(
        self,
        factor: float | Sequence[float],
        seed: int | None = None,
        value_range: Sequence[float] = (0, 255),
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
        n, height, width, channels = images.shape
        rows = ops.arange(height, dtype=images.dtype, device=images.device).reshape(1, height, 1)
        cols = ops.arange(width, dtype=images.dtype, device=images.device).reshape(1, 1, width)
        y, x = (ops.broadcast_to(p, (n, height, width)) for p in self._points(images, rows, cols))
        y, x = self._fill(y, height), self._fill(x, width)
        flat = images.reshape(n, height * width, channels)
        if self.interpolation == "nearest":
            return self._read(flat, ops.floor(y + 0.5), ops.floor(x + 0.5), height, width).reshape(images.shape)
        y0, x0 = ops.floor(y), ops.floor(x)
        dy, dx = (y - y0)[..., None], (x - x0)[..., None]
        top = self._read(flat, y0, x0, height, width) * (1 - dx) + self._read(flat, y0, x0 + 1, height, width) * dx
        low = (
            self._read(flat, y0 + 1, x0, height, width) * (1 - dx)
            + self._read(flat, y0 + 1, x0 + 1, height, width) * dx
        )
        return (top * (1 - dy) + low * dy).reshape(images.shape)

    def _fill(self, point: Tensor, size: int) -> Tensor:
        """``point`` brought into [0, size - 1] by the fill mode (``"constant"`` keeps it)."""
        if self.fill_mode == "reflect":  # about the outer edges of the first and last pixels
            folded = ops.remainder(point + 0.5, 2.0 * size)
            point = ops.where(folded >= size, 2.0 * size - folded, folded) - 0.5
        elif self.fill_mode == "wrap":
            point = ops.remainder(point, float(size))
        return point if self.fill_mode == "constant" else ops.clip(point, 0.0, size - 1.0)

    def _read(self, flat: Tensor, y: Tensor, x: Tensor, height: int, width: int) -> Tensor:
        """The pixels at integral points (N, H, W) of ``flat`` (N, H * W, C): one gather;
        outside the image ``fill_value``."""
        inside = (y >= 0) & (y <= height - 1) & (x >= 0) & (x <= width - 1)
        index = ops.clip(y, 0, height - 1) * width + ops.clip(x, 0, width - 1)
        index = index.astype(int32).reshape(flat.shape[0], -1, 1)
        pixels = ops.take_along_axis(flat, index, axis=1).reshape(*y.shape, flat.shape[-1])
        return ops.where(inside[..., None], pixels, self.fill_value)


class RandomRotation(_Transform):
    """Each image rotated about its centre by an angle drawn from ``factor`` (fractions of
    a full turn: 0.1 is up to 36 degrees either way; positive is counter-clockwise)."""

    def __init__(self, factor: float | Sequence[float], fill_mode: str = "reflect", **kwargs: Any) -> None:
        super().__init__(fill_mode, **kwargs)
        self.factor = factor
        self._range = tuple(2 * math.pi * f for f in _bounds("RandomRotation", "factor", factor))

    def _points(self, images: Tensor, rows: Tensor, cols: Tensor) -> tuple[Tensor, Tensor]:
        angle = self._uniform(images, *self._range)
        cos, sin = ops.cos(angle), ops.sin(angle)
        cy, cx = (images.shape[1] - 1) / 2, (images.shape[2] - 1) / 2
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
        **kwargs: Any,
    ) -> None:
        super().__init__(fill_mode, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._heights = _bounds("RandomZoom", "height_factor", height_factor, least=-1.0)
        self._widths = None if width_factor is None else _bounds("RandomZoom", "width_factor", width_factor, -1.0)

    def _points(self, images: Tensor, rows: Tensor, cols: Tensor) -> tuple[Tensor, Tensor]:
        zoom_y = 1.0 + self._uniform(images, *self._heights)
        zoom_x = zoom_y if self._widths is None else 1.0 + self._uniform(images, *self._widths)
        cy, cx = (images.shape[1] - 1) / 2, (images.shape[2] - 1) / 2
        return (rows - cy) * zoom_y + cy, (cols - cx) * zoom_x + cx


class RandomTranslation(_Transform):
    """Each image shifted by fractions of its height and width drawn from
    ``height_factor`` and ``width_factor`` (positive: down and right)."""

    def __init__(
        self,
        height_factor: float | Sequence[float],
        width_factor: float | Sequence[float],
        fill_mode: str = "reflect",
        **kwargs: Any,
    ) -> None:
        super().__init__(fill_mode, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._heights = _bounds("RandomTranslation", "height_factor", height_factor)
        self._widths = _bounds("RandomTranslation", "width_factor", width_factor)

    def _points(self, images: Tensor, rows: Tensor, cols: Tensor) -> tuple[Tensor, Tensor]:
        shift_y = self._uniform(images, *self._heights) * images.shape[1]
        shift_x = self._uniform(images, *self._widths) * images.shape[2]
        return rows - shift_y, cols - shift_x
