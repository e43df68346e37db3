"""Random numbers with explicit seeds: a counter-based generator whose keys enter the
computation as data, so eager and lazy runs draw the same numbers and a new key never
causes a recompile."""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from braze.ir.dtypes import DEFAULT_FLOAT, as_dtype, float64, int64
from braze.ir.errors import DTypeError, TraceError
from braze.ir.prims import sources
from braze.ops.core import as_tensor, astype
from braze.ops.math import log as _log
from braze.ops.math import maximum, minimum, sqrt, where
from braze.ops.reduction import argmax
from braze.ops.selection import topk
from braze.runtime.device import Device, as_device
from braze.tensor import Tensor, user_error, user_location


class _Draws(threading.local):
    """The keys drawn while ``braze.jit`` records a function (None when it does not), and
    which recording this is: a generator seeded during it draws the same keys on every
    call, as eagerly, so its keys are constants."""

    drawn: list[tuple[Generator, Tensor]] | None = None
    recording = 0


_DRAWS = _Draws()
_RECORDINGS = itertools.count(1)


class Generator:
    """A seeded stream of random keys (``torch.Generator`` / a JAX key that splits itself)."""

    def __init__(self, seed: int = 0) -> None:
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> Generator:
        self.seed = int(seed)
        self.counter = 0
        self._seeded_in = _DRAWS.recording
        return self

    def next_key(self) -> int:
        """A fresh 63-bit key; each call advances the stream."""
        if _DRAWS.drawn is not None and self._seeded_in != _DRAWS.recording:
            raise TraceError(
                f"Generator.next_key() was called while braze.jit traced (at {user_location()}): the Python "
                "number it returns would be the same on every call. Pass the generator to braze.rand, "
                "braze.randn or braze.uniform (generator=...) instead: their keys are inputs of the call"
            )
        return self._advance()

    def _advance(self) -> int:
        mixed = sources.splitmix64(np.array([self.seed, self.counter], dtype=np.uint64))
        self.counter += 1
        return int(sources.splitmix64(mixed[:1] ^ mixed[1:])[0] >> np.uint64(1))


default_generator = Generator(0)


def manual_seed(seed: int) -> Generator:
    """Reset the default generator (``torch.manual_seed``)."""
    return default_generator.manual_seed(seed)


@contextlib.contextmanager
def recording_draws() -> Iterator[list[tuple[Generator, Tensor]]]:
    """Collect (generator, key tensor) for every key drawn in the block from a generator
    seeded before it, in drawing order: ``braze.jit`` draws them afresh on each call, as
    eager code does, so that every call gets new random numbers from the same sequence."""
    outer = (_DRAWS.drawn, _DRAWS.recording)
    _DRAWS.drawn, _DRAWS.recording = [], next(_RECORDINGS)
    try:
        yield _DRAWS.drawn
    finally:
        _DRAWS.drawn, _DRAWS.recording = outer


def _key(generator: Generator | None, seed: int | None, device: Device) -> Tensor:
    if seed is not None:
        return as_tensor(np.int64(Generator(seed)._advance()), dtype=int64, device=device)
    generator = generator or default_generator
    key = as_tensor(np.int64(generator._advance()), dtype=int64, device=device)
    if _DRAWS.drawn is not None and generator._seeded_in != _DRAWS.recording:
        _DRAWS.drawn.append((generator, key))
    return key


def _shape(shape: Sequence[int] | int) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)


def rand(
    shape: Sequence[int] | int,
    dtype: Any = DEFAULT_FLOAT,
    *,
    seed: int | None = None,
    generator: Generator | None = None,
    device: Any = None,
) -> Tensor:
    """Uniform samples in [0, 1)."""
    dt = as_dtype(dtype)
    if not dt.is_float:
        raise user_error(DTypeError, f"rand: dtype must be float32 or float64, got {dt.name}")
    key = _key(generator, seed, as_device(device))
    return sources.rng_uniform.bind(key, shape=_shape(shape), dtype=dt)


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
    """Uniform random numbers in ``[low, high)``, from ``seed``, ``generator`` or the default generator."""
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
    if dt is float64:
        return normal_quantile(maximum(u + half_step, half_step))
    # The quantile's rational functions cancel digits: evaluated in float32, a compiled
    # kernel (which may fuse a multiply and an add) and NumPy differed by up to 1e-4. In
    # float64 both are the float32 rounding of nearly the same number.
    wide = astype(u, float64)
    return astype(normal_quantile(maximum(wide + half_step, half_step)), dt)


def multinomial(
    probs: Tensor,
    num_samples: int = 1,
    replacement: bool = False,
    *,
    generator: Generator | None = None,
    seed: int | None = None,
) -> Tensor:
    """Indices (int32) drawn from each row of ``probs`` (non-negative weights over the last
    axis, normalized or not), as ``torch.multinomial``: ``num_samples`` per row, distinct
    unless ``replacement``. Sampled by the Gumbel-max trick, the largest of ``log(p) + g``
    for standard Gumbel noise ``g`` (its ``num_samples`` largest without replacement), so a
    compiled sampler draws new numbers from its generator on every call. Eager weights that
    are NaN, infinite or negative, or a row of zeros, are a ValueError; compiled code cannot
    raise, and draws such a row's first NaN, negative or (all zero) first category."""
    probs = as_tensor(probs)
    if not probs.dtype.is_float or probs.ndim not in (1, 2):
        raise user_error(
            DTypeError,
            f"multinomial: expected a 1-D or 2-D float tensor of weights, got {probs.dtype.name}{list(probs.shape)}",
        )
    categories = probs.shape[-1]
    if num_samples < 1 or (not replacement and num_samples > categories):
        raise user_error(
            ValueError,
            f"multinomial: cannot draw {num_samples} samples from {categories} categories "
            f"{'with' if replacement else 'without'} replacement",
        )
    if not probs.device.is_lazy:  # eager weights are checked, as torch.multinomial checks them
        weights = probs.numpy()
        if not np.isfinite(weights).all() or (weights < 0).any():
            raise user_error(ValueError, "multinomial: the weights must be finite and not negative (a NaN, inf or < 0)")
        if (weights.sum(axis=-1) == 0).any():
            raise user_error(ValueError, "multinomial: a row of weights sums to 0: there is nothing to draw")
    draws = (*probs.shape[:-1], num_samples if replacement else 1, categories)
    u = rand(draws, probs.dtype, seed=seed, generator=generator, device=probs.device)
    gumbel = -_log(-_log(u))  # u = 0 gives -inf: never drawn
    scores = _log(probs.detach()).reshape((*probs.shape[:-1], 1, categories)) + gumbel
    if replacement:
        return argmax(scores, axis=-1)
    return topk(scores.reshape(probs.shape), num_samples, dim=-1)[1]
