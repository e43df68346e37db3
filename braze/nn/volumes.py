"""Keras's 3-D layers over NDHWC volumes (batch, depth, height, width, channels), built from
the 2-D kernels: ``Conv3D`` sums a 2-D convolution of each depth tap of its kernel over the
depth slices it meets, and ``MaxPooling3D`` / ``AveragePooling3D`` pool each slice, then
across slices (a box's maximum, or its mean over the voxels inside the volume, separates
that way). ``GlobalAveragePooling3D``, ``GlobalMaxPooling3D`` and ``UpSampling3D`` too."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from braze import ops
from braze.ir.errors import ShapeError
from braze.nn.conv import _Conv, _GlobalPooling, _Pooling, int_tuple
from braze.nn.layer import Layer
from braze.nn.upsampling import _repeat
from braze.ops.nn import resolve_padding
from braze.tensor import Tensor, user_error

__all__ = [
    "AveragePooling3D",
    "AvgPool3D",
    "Conv3D",
    "Convolution3D",
    "GlobalAveragePooling3D",
    "GlobalAvgPool3D",
    "GlobalMaxPool3D",
    "GlobalMaxPooling3D",
    "MaxPool3D",
    "MaxPooling3D",
    "UpSampling3D",
]


def _volumes(layer: Layer, x: Tensor) -> None:
    if x.ndim != 5:
        raise user_error(ShapeError, f"{layer.name}: expected NDHWC volumes, got inputs of shape {x.shape}")


def _depth_padding(padding: str, depth: int, span: int, stride: int) -> tuple[int, int]:
    """The (before, after) padding of the depth axis, as TensorFlow pads it."""
    return resolve_padding("Conv3D", padding, (depth, 1), (span, 1), (stride, 1))[0]


class Conv3D(_Conv):
    """3-D convolution over NDHWC volumes with a (depth, height, width, in, out) kernel, as
    ``keras.layers.Conv3D`` (``padding`` ``"valid"`` or ``"same"``, strides and dilation
    per axis)."""

    rank = 3

    def call(self, x: Tensor) -> Tensor:
        _volumes(self, x)
        (kd, *_), (sd, sh, sw), (dd, dh, dw) = self.kernel_size, self.strides, self.dilation_rate
        before, after = _depth_padding(self.padding, x.shape[1], (kd - 1) * dd + 1, sd)
        if before or after:
            x = ops.pad(x, ((0, 0), (before, after), (0, 0), (0, 0), (0, 0)))
        depth = (x.shape[1] - (kd - 1) * dd - 1) // sd + 1
        if depth < 1:
            raise user_error(ShapeError, f"{self.name}: a depth of {x.shape[1]} is smaller than the kernel's span")
        total = None
        for tap in range(kd):
            start = tap * dd
            slices = x[:, start : start + (depth - 1) * sd + 1 : sd]
            folded = slices.reshape(x.shape[0] * depth, *x.shape[2:])
            y = ops.conv2d(folded, self.kernel[tap], stride=(sh, sw), padding=self.padding, dilation=(dh, dw))
            total = y if total is None else total + y
        return self._finish(total.reshape(x.shape[0], depth, *total.shape[1:]))


class MaxPooling3D(_Pooling):
    """Max pooling over ``pool_size`` boxes of NDHWC volumes (``strides`` defaults to
    ``pool_size``; padding ``"valid"`` or ``"same"``)."""

    rank = 3

    def call(self, x: Tensor) -> Tensor:
        _volumes(self, x)
        (pd, ph, pw), (sd, sh, sw) = self.pool_size, self.strides
        batch, depth = x.shape[:2]
        slices = self.reduce(x.reshape(batch * depth, *x.shape[2:]), (ph, pw), (sh, sw), self.padding)
        rows = slices.reshape(batch, depth, -1, x.shape[-1])  # each slice's pooled pixels in a row
        pooled = self.reduce(rows, (pd, 1), (sd, 1), self.padding)
        return pooled.reshape(batch, pooled.shape[1], *slices.shape[1:])


class AveragePooling3D(MaxPooling3D):
    """Average pooling over ``pool_size`` boxes of NDHWC volumes (padded voxels not counted)."""

    reduce = staticmethod(ops.avg_pool2d)


class GlobalAveragePooling3D(_GlobalPooling):
    """The mean over the voxels of NDHWC volumes, one value per channel."""


class GlobalMaxPooling3D(_GlobalPooling):
    """The maximum over the voxels of NDHWC volumes, one value per channel."""

    take_max = True


class UpSampling3D(Layer):
    """Each voxel of NDHWC volumes repeated ``size`` (depth, rows, columns) times."""

    def __init__(self, size: int | Sequence[int] = (2, 2, 2), data_format: str | None = None, **kwargs: Any) -> None:
        if data_format not in (None, "channels_last"):
            raise NotImplementedError(f"UpSampling3D: data_format={data_format!r}: braze's layers are channels_last")
        super().__init__(**kwargs)
        self.size = int_tuple(size, 3)

    def call(self, x: Tensor) -> Tensor:
        _volumes(self, x)
        return _repeat(x, self.size)


Convolution3D = Conv3D
"""Keras's other name of ``Conv3D``."""
MaxPool3D = MaxPooling3D
"""Keras's short name of ``MaxPooling3D``."""
AvgPool3D = AveragePooling3D
"""Keras's short name of ``AveragePooling3D``."""
GlobalAvgPool3D = GlobalAveragePooling3D
"""Keras's short name of ``GlobalAveragePooling3D``."""
GlobalMaxPool3D = GlobalMaxPooling3D
"""Keras's short name of ``GlobalMaxPooling3D``."""
