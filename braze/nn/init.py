"""Keras's default initialisers: Glorot (Xavier) uniform kernels and zero biases."""

from __future__ import annotations

import math

from braze.ops import random
from braze.ops.creation import zeros
from braze.tensor import Tensor


def fans(shape: tuple[int, ...]) -> tuple[int, int]:
    """(fan_in, fan_out) as Keras computes them: a conv kernel's receptive field counts."""
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = math.prod(shape[:-2])
    return receptive * shape[-2], receptive * shape[-1]


def glorot_uniform(shape: tuple[int, ...], generator: random.Generator | None = None) -> Tensor:
    fan_in, fan_out = fans(shape)
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    return random.uniform(shape, -limit, limit, generator=generator).requires_grad_()


def zeros_parameter(shape: tuple[int, ...]) -> Tensor:
    return zeros(shape).requires_grad_()
