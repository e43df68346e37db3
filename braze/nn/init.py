"""Initial parameter values: Keras's defaults (Glorot (Xavier) uniform kernels, zero
biases), and the normal, uniform and constant values other layers start from."""

from __future__ import annotations

import math

import numpy as np

from braze.ops import random
from braze.ops.creation import ones, zeros
from braze.runtime.device import CPU, default_device
from braze.tensor import Tensor


def fans(shape: tuple[int, ...]) -> tuple[int, int]:
    """(fan_in, fan_out) as Keras computes them: a conv kernel's receptive field counts."""
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = math.prod(shape[:-2])
    return receptive * shape[-2], receptive * shape[-1]


def _parameter(value: Tensor) -> Tensor:
    """Initial values are data on the default device, never a computation traced into the
    first training step (which would make that step's graph differ from the next ones)."""
    return Tensor.from_numpy(np.array(value.numpy()), default_device()).requires_grad_()


def glorot_uniform(shape: tuple[int, ...], generator: random.Generator | None = None) -> Tensor:
    """Glorot (Xavier) uniform initial values for a kernel of ``shape``: Keras's default for
    ``Dense`` and ``Conv2D``."""
    fan_in, fan_out = fans(shape)
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    return _parameter(random.uniform(shape, -limit, limit, generator=generator, device=CPU))


def zeros_parameter(shape: tuple[int, ...]) -> Tensor:
    return _parameter(zeros(shape, device=CPU))


def ones_parameter(shape: tuple[int, ...]) -> Tensor:
    return _parameter(ones(shape, device=CPU))


def normal_parameter(shape: tuple[int, ...], std: float = 1.0, generator: random.Generator | None = None) -> Tensor:
    """Normal values of mean 0 and ``std`` (PyTorch's ``Embedding`` starts from std 1)."""
    return _parameter(random.randn(shape, generator=generator, device=CPU) * std)


def uniform_parameter(
    shape: tuple[int, ...], low: float, high: float, generator: random.Generator | None = None
) -> Tensor:
    """Uniform values in [low, high) (Keras's ``Embedding`` starts from [-0.05, 0.05))."""
    return _parameter(random.uniform(shape, low, high, generator=generator, device=CPU))
