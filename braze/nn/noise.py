"""Keras's regularization layers that draw noise while training and pass their inputs
unchanged in inference: ``GaussianNoise``, ``GaussianDropout`` and ``SpatialDropout1D``/
``2D``/``3D`` (whole channels dropped). Each draws afresh at every training step, compiled steps
too, from its ``seed`` (or braze's ``generator``) or the global stream."""

from __future__ import annotations

from typing import Any

from braze import ops
from braze.ir.errors import ShapeError
from braze.nn.conv import channels_last
from braze.nn.layer import Layer, new_generator
from braze.ops.random import Generator
from braze.tensor import Tensor, user_error

__all__ = ["GaussianDropout", "GaussianNoise", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D"]


class _Noise(Layer):
    supports_masking = True

    def __init__(self, seed: int | None = None, *, generator: Generator | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._generator = new_generator(seed, generator)

    def _draws(self) -> dict[str, Any]:
        return {} if self._generator is None else {"generator": self._generator}

    def call(self, x: Tensor, training: bool = False) -> Tensor:
        return self.noisy(x) if training else x

    def noisy(self, x: Tensor) -> Tensor:
        raise NotImplementedError


class GaussianNoise(_Noise):
    """``x`` plus normal noise of standard deviation ``stddev`` while training."""

    def __init__(self, stddev: float, seed: int | None = None, **kwargs: Any) -> None:
        if stddev < 0:
            raise ValueError(f"GaussianNoise: stddev must be non-negative, got {stddev}")
        super().__init__(seed, **kwargs)
        self.stddev = float(stddev)

    def noisy(self, x: Tensor) -> Tensor:
        return x + ops.randn(x.shape, x.dtype, device=x.device, **self._draws()) * self.stddev


class GaussianDropout(_Noise):
    """``x`` times normal noise of mean 1 and standard deviation sqrt(rate / (1 - rate))
    while training."""

    def __init__(self, rate: float, seed: int | None = None, **kwargs: Any) -> None:
        if not 0 <= rate < 1:
            raise ValueError(f"GaussianDropout: rate must be in [0, 1), got {rate}")
        super().__init__(seed, **kwargs)
        self.rate = float(rate)

    def noisy(self, x: Tensor) -> Tensor:
        if self.rate == 0:
            return x
        deviation = (self.rate / (1.0 - self.rate)) ** 0.5
        return x * (ops.randn(x.shape, x.dtype, device=x.device, **self._draws()) * deviation + 1.0)


class SpatialDropout1D(_Noise):
    """Dropout of whole channels: each (example, channel) of (batch, steps, channels) kept
    with probability 1 - ``rate`` over every step (scaled by 1 / (1 - rate)) or zeroed."""

    axes = 1

    def __init__(self, rate: float, seed: int | None = None, data_format: str | None = None, **kwargs: Any) -> None:
        if not 0 <= rate < 1:
            raise ValueError(f"{type(self).__name__}: rate must be in [0, 1), got {rate}")
        channels_last(type(self).__name__, data_format)
        super().__init__(seed, **kwargs)
        self.rate = float(rate)

    def noisy(self, x: Tensor) -> Tensor:
        if x.ndim != self.axes + 2:
            raise user_error(ShapeError, f"{self.name}: inputs of rank {self.axes + 2} expected, got {x.shape}")
        if self.rate == 0:
            return x
        shape = (x.shape[0], *([1] * self.axes), x.shape[-1])
        keep = ops.rand(shape, x.dtype, device=x.device, **self._draws()) >= self.rate
        return ops.where(keep, x / (1.0 - self.rate), 0.0)


class SpatialDropout2D(SpatialDropout1D):
    """Dropout of whole channels of NHWC images, each kept over every pixel or zeroed."""

    axes = 2


class SpatialDropout3D(SpatialDropout1D):
    """Dropout of whole channels of NDHWC volumes, each kept over every voxel or zeroed."""

    axes = 3
