"""Random numbers with explicit seeds: a counter-based generator whose keys enter the
computation as data, so eager and lazy runs draw the same numbers and a new key never
causes a recompile."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from braze.ir.dtypes import DEFAULT_FLOAT, as_dtype, int64
from braze.ir.errors import DTypeError
from braze.ir.prims import sources
from braze.ops.core import as_tensor
from braze.ops.math import log as _log
from braze.ops.math import maximum, minimum, sqrt, where
from braze.runtime.device import as_device
from braze.tensor import Tensor, user_error


class Generator:
    """A seeded stream of random keys (``torch.Generator`` / a JAX key that splits itself)."""

    def __init__(self, seed: int = 0) -> None:
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> Generator:
        self.seed = int(seed)
        self.counter = 0
        return self

    def next_key(self) -> int:
        """A fresh 63-bit key; each call advances the stream."""
        mixed = sources.splitmix64(np.array([self.seed, self.counter], dtype=np.uint64))
        self.counter += 1
        return int(sources.splitmix64(mixed[:1] ^ mixed[1:])[0] >> np.uint64(1))


default_generator = Generator(0)


def manual_seed(seed: int) -> Generator:
    """Reset the default generator (``torch.manual_seed``)."""
    return default_generator.manual_seed(seed)


def _key(generator: Generator | None, seed: int | None) -> int:
    if seed is not None:
        return Generator(seed).next_key()
    return (generator or default_generator).next_key()


def _shape(shape: Sequence[int] | int) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)


def rand(
    shape: Sequence[int] | int,
    dtype: Any = DEFAULT_FLOAT,
    *,
    seed: int | None = None,
    generator: Generator | None = None,
    device: Any = None,
    key: Tensor | None = None,
) -> Tensor:
    """Uniform samples in [0, 1). ``key`` (an int64 scalar tensor) picks the stream instead
    of a seed or generator: a key that a compiled step reads and advances as state draws
    new numbers on every call, where a Python seed would be fixed when the step is traced."""
    dt = as_dtype(dtype)
    if not dt.is_float:
        raise user_error(DTypeError, f"rand: dtype must be float32 or float64, got {dt.name}")
    if key is None:
        key = as_tensor(np.int64(_key(generator, seed)), dtype=int64, device=as_device(device))
    return sources.rng_uniform.bind(key, shape=_shape(shape), dtype=dt)


def new_key(generator: Generator | None = None, device: Any = None) -> Tensor:
    """A fresh int64 key drawn from ``generator`` (braze's default), as device data."""
    return Tensor.from_numpy(np.array(_key(generator, None), dtype=np.int64), as_device(device))


def uniform(
    shape: Sequence[int] | int,
    low: float = 0.0,
    high: float = 1.0,
    dtype: Any = DEFAULT_FLOAT,
    *,
    seed: int | None = None,
    generator: Generator | None = None,
    device: Any = None,
) -> Tensor:
    return rand(shape, dtype, seed=seed, generator=generator, device=device) * (high - low) + low


# Acklam's rational approximation of the normal quantile (relative error below 1.2e-9):
# it needs only log and sqrt, so normal samples are built from primitives every backend has.
_A = (
    -3.969683028665376e01,
    2.209460984245205e02,
    -2.759285104469687e02,
    1.383577518672690e02,
    -3.066479806614716e01,
    2.506628277459239e00,
)
_B = (
    -5.447609879822406e01,
    1.615858368580409e02,
    -1.556989798598866e02,
    6.680131188771972e01,
    -1.328068155288572e01,
    1.0,
)
_C = (
    -7.784894002430293e-03,
    -3.223964580411365e-01,
    -2.400758277161838e00,
    -2.549732539343734e00,
    4.374664141464968e00,
    2.938163982698783e00,
)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00, 1.0)
_TAIL = 0.02425


def _polynomial(coefficients: Sequence[float], x: Tensor) -> Tensor:
    out = x * coefficients[0] + coefficients[1]
    for c in coefficients[2:]:
        out = out * x + c
    return out


def normal_quantile(p: Tensor) -> Tensor:
    """The standard normal inverse CDF of probabilities strictly inside (0, 1)."""
    q = p - 0.5
    r = q * q
    central = _polynomial(_A, r) * q / _polynomial(_B, r)
    tail_p = minimum(p, 1.0 - p)
    s = sqrt(_log(tail_p) * -2.0)
    tail = _polynomial(_C, s) / _polynomial(_D, s)
    tail = where(q < 0.0, tail, -tail)
    return where(tail_p < _TAIL, tail, central)


def randn(
    shape: Sequence[int] | int,
    dtype: Any = DEFAULT_FLOAT,
    *,
    seed: int | None = None,
    generator: Generator | None = None,
    device: Any = None,
) -> Tensor:
    """Standard normal samples."""
    dt = as_dtype(dtype)
    u = rand(shape, dt, seed=seed, generator=generator, device=device)
    half_step = 2.0**-25 if dt.itemsize == 4 else 2.0**-54
    return normal_quantile(maximum(u + half_step, half_step))
