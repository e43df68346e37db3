"""``keras.random``: Keras 3's random functions on braze's counter-based streams. A
``seed`` is a ``SeedGenerator`` (a stream that moves on at every draw, also inside a
compiled step, where each call draws anew), an int (the same draw at every call, as
Keras's stateless use of an int seed), or None (braze's default stream)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from braze import ops
from braze.ir.dtypes import float32
from braze.ops.random import Generator, normal_quantile
from braze.tensor import Tensor

__all__ = ["SeedGenerator", "dropout", "normal", "randint", "truncated_normal", "uniform"]

# Phi(-2) and Phi(2): the standard normal's mass below -2 and below 2 standard deviations.
_TRUNCATED = (0.022750131948179195, 0.9772498680518208)


class SeedGenerator(Generator):
    """``keras.random.SeedGenerator(seed)``: a stream of keys (a random seed when None)."""

    def __init__(self, seed: int | None = None, **kwargs: Any) -> None:
        if kwargs.get("backend") is not None:
            raise NotImplementedError("SeedGenerator: backend= is not supported")
        super().__init__(int(np.random.randint(2**31)) if seed is None else int(seed))


def _stream(seed: Any) -> dict[str, Any]:
    if isinstance(seed, Generator):
        return {"generator": seed}
    if seed is None:
        return {}
    if isinstance(seed, (int, np.integer)):
        return {"seed": int(seed)}
    raise TypeError(f"keras.random: seed must be an int, a SeedGenerator or None, got {type(seed).__name__}")


def uniform(
    shape: Sequence[int], minval: float = 0.0, maxval: float = 1.0, dtype: Any = None, seed: Any = None
) -> Tensor:
    return ops.uniform(shape, minval, maxval, dtype or float32, **_stream(seed))


def normal(shape: Sequence[int], mean: float = 0.0, stddev: float = 1.0, dtype: Any = None, seed: Any = None) -> Tensor:
    return ops.randn(shape, dtype or float32, **_stream(seed)) * stddev + mean


def truncated_normal(
    shape: Sequence[int], mean: float = 0.0, stddev: float = 1.0, dtype: Any = None, seed: Any = None
) -> Tensor:
    """Normal samples within two standard deviations of ``mean`` (the normal's quantiles of
    uniform draws between its 2.3% and 97.7% points: exact, nothing redrawn)."""
    u = ops.uniform(shape, *_TRUNCATED, dtype or float32, **_stream(seed))
    return normal_quantile(u) * stddev + mean


def randint(shape: Sequence[int], minval: int, maxval: int, dtype: Any = "int32", seed: Any = None) -> Tensor:
    """Integers drawn uniformly from [minval, maxval)."""
    draw = ops.uniform(shape, float(minval), float(maxval), "float64", **_stream(seed))
    return ops.minimum(ops.floor(draw), maxval - 1).astype(dtype)


def dropout(inputs: Any, rate: float, noise_shape: Any = None, seed: Any = None) -> Tensor:
    """``inputs`` with a fraction ``rate`` zeroed, the rest scaled by 1 / (1 - rate)."""
    if noise_shape is not None:
        raise NotImplementedError("keras.random.dropout: noise_shape is not supported")
    if not 0 <= rate < 1:
        raise ValueError(f"keras.random.dropout: rate must be in [0, 1), got {rate}")
    x = ops.as_tensor(inputs)
    keep = ops.rand(x.shape, x.dtype, device=x.device, **_stream(seed)) >= rate
    return ops.where(keep, x / (1 - rate), 0.0)
