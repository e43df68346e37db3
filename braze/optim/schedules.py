"""Keras's learning-rate schedules (``keras.optimizers.schedules``).

A schedule is called with an optimizer's step count (``optimizer.iterations``, the steps
taken before this one) and returns that step's learning rate as a 0-d float64 tensor. It
is computed with tensor ops, so on a lazy device and under ``braze.jit`` the schedule is
part of the step's graph and a new step count is only a new input: nothing recompiles.
Give one as an optimizer's learning rate: ``SGD(model, lr=CosineDecay(0.1, 1000))``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from braze.function_replay import replaying
from braze.ir.dtypes import float64, int64
from braze.ops import as_tensor, astype, floor_divide, full, minimum, power, where
from braze.tensor import Tensor

Step = Tensor | int


class LearningRateSchedule:
    """The base class: ``schedule(step)`` is the learning rate at ``step`` (a count from 0)."""

    def __call__(self, step: Step) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must define __call__(step)")

    def get_config(self) -> dict[str, Any]:
        """The arguments that make this schedule again (``type(s)(**s.get_config())``)."""
        return {name: value for name, value in vars(self).items() if not name.startswith("_")}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> LearningRateSchedule:
        return cls(**config)


def _steps(step: Step) -> Tensor:
    """The step count as an int64 tensor (a Python number on the default device)."""
    if isinstance(step, Tensor):
        return step if step.dtype == int64 else astype(step, int64)
    return as_tensor(np.int64(step), dtype=int64)


def _number(value: float, like: Tensor) -> Tensor:
    return full((), value, float64, like.device)


def _positive(schedule: str, **values: float) -> None:
    for name, value in values.items():
        if not value > 0:
            raise ValueError(f"{schedule}: {name} must be more than 0, got {value}")


def _whole(schedule: str, name: str, value: float) -> int:
    if float(value) != int(value):
        raise ValueError(f"{schedule}: {name} must be a whole number of steps here, got {value}")
    return int(value)


# sin(u) = u (1 - u^2/3! + u^4/5! - ...): ten terms are exact to double rounding for |u| <= pi/2.
_SINE = tuple((-1.0) ** k / math.factorial(2 * k + 1) for k in range(11))


def cos_pi(fraction: Tensor) -> Tensor:
    """cos(pi * fraction) for fractions in [0, 1], from multiplies and adds (braze has no
    cosine primitive): -sin(u) at u = pi * (fraction - 1/2), by its Taylor series."""
    u = (fraction - 0.5) * math.pi
    v = u * u
    total = _number(_SINE[-1], fraction)
    for c in reversed(_SINE[:-1]):
        total = total * v + c
    return -(u * total)


class CosineDecay(LearningRateSchedule):
    """A cosine decay from ``initial_learning_rate`` over ``decay_steps`` to ``alpha`` times
    it, after an optional linear warm-up over ``warmup_steps`` to ``warmup_target`` (which
    the cosine then decays from), as Keras's ``CosineDecay``."""

    def __init__(
        self,
        initial_learning_rate: float,
        decay_steps: int,
        alpha: float = 0.0,
        name: str = "CosineDecay",
        warmup_target: float | None = None,
        warmup_steps: int = 0,
    ) -> None:
        _positive("CosineDecay", decay_steps=decay_steps)
        if warmup_steps < 0:
            raise ValueError(f"CosineDecay: warmup_steps must be 0 or more, got {warmup_steps}")
        self.initial_learning_rate, self.decay_steps, self.alpha = initial_learning_rate, decay_steps, alpha
        self.name, self.warmup_target, self.warmup_steps = name, warmup_target, warmup_steps

    def __call__(self, step: Step) -> Tensor:
        settings = (self.initial_learning_rate, self.decay_steps, self.alpha, self.warmup_target, self.warmup_steps)
        return _cosine_decay(_steps(step), *settings)


@replaying
def _cosine_decay(
    step: Tensor, initial: float, decay_steps: float, alpha: float, target: float | None, warmup: int
) -> Tensor:
    """``CosineDecay`` at ``step``, a function of its settings alone: a lazy step replays
    its ops (about 30 of them) rather than running them through the op library."""
    s = astype(step, float64)
    if target is None:
        return _cosine(minimum(s, decay_steps), initial, decay_steps, alpha)
    s = minimum(s, decay_steps + warmup)
    decayed = _cosine(s - warmup, target, decay_steps, alpha)
    if not warmup:
        return decayed
    warm = s / warmup * (target - initial) + initial
    return where(s < warmup, warm, decayed)


def _cosine(s: Tensor, start: float, decay_steps: float, alpha: float) -> Tensor:
    cosine = (cos_pi(s / decay_steps) + 1.0) * 0.5
    return (cosine * (1.0 - alpha) + alpha) * start


class _DecayOverTime(LearningRateSchedule):
    """A decay driven by ``elapsed`` = step / ``decay_steps`` (rounded down with ``staircase``)."""

    def __init__(
        self,
        initial_learning_rate: float,
        decay_steps: int,
        decay_rate: float,
        staircase: bool = False,
        name: str | None = None,
    ) -> None:
        name = type(self).__name__ if name is None else name
        _positive(name, decay_steps=decay_steps)
        if staircase:
            _whole(name, "decay_steps", decay_steps)
        self.initial_learning_rate, self.decay_steps, self.decay_rate = initial_learning_rate, decay_steps, decay_rate
        self.staircase, self.name = staircase, name

    def _elapsed(self, step: Step) -> Tensor:
        s = _steps(step)
        if self.staircase:
            return astype(floor_divide(s, int(self.decay_steps)), float64)
        return astype(s, float64) / self.decay_steps


class ExponentialDecay(_DecayOverTime):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)``; with ``staircase`` the
    exponent is rounded down (the rate drops every ``decay_steps`` steps)."""

    def __call__(self, step: Step) -> Tensor:
        elapsed = self._elapsed(step)
        return power(_number(self.decay_rate, elapsed), elapsed) * self.initial_learning_rate


class InverseTimeDecay(_DecayOverTime):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)`` (rounded down with
    ``staircase``)."""

    def __call__(self, step: Step) -> Tensor:
        elapsed = self._elapsed(step)
        return _number(self.initial_learning_rate, elapsed) / (elapsed * self.decay_rate + 1.0)


class PolynomialDecay(LearningRateSchedule):
    """From ``initial_learning_rate`` to ``end_learning_rate`` over ``decay_steps`` along
    ``(1 - step / decay_steps) ** power``; with ``cycle`` the decay starts again, over the
    next multiple of ``decay_steps``, once it is over."""

    def __init__(
        self,
        initial_learning_rate: float,
        decay_steps: int,
        end_learning_rate: float = 0.0001,
        power: float = 1.0,
        cycle: bool = False,
        name: str = "PolynomialDecay",
    ) -> None:
        _positive("PolynomialDecay", decay_steps=decay_steps)
        if cycle:
            _whole("PolynomialDecay", "decay_steps", decay_steps)
        self.initial_learning_rate, self.decay_steps, self.end_learning_rate = (
            initial_learning_rate,
            decay_steps,
            end_learning_rate,
        )
        self.power, self.cycle, self.name = power, cycle, name

    def __call__(self, step: Step) -> Tensor:
        s = _steps(step)
        if self.cycle:  # decay over the smallest multiple of decay_steps that is at least the step (and 1)
            periods = -floor_divide(-s, int(self.decay_steps))
            span = astype(where(s == 0, 1, periods) * int(self.decay_steps), float64)
            fraction = astype(s, float64) / span
        else:
            fraction = minimum(astype(s, float64), self.decay_steps) / self.decay_steps
        remaining = power(-fraction + 1.0, _number(self.power, s))
        return remaining * (self.initial_learning_rate - self.end_learning_rate) + self.end_learning_rate


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[0]`` up to step ``boundaries[0]`` (included), ``values[1]`` up to
    ``boundaries[1]``, ..., and ``values[-1]`` after the last boundary."""

    def __init__(self, boundaries: list[int], values: list[float], name: str = "PiecewiseConstant") -> None:
        if len(values) != len(boundaries) + 1:
            raise ValueError(
                f"PiecewiseConstantDecay: {len(values)} values for {len(boundaries)} boundaries; "
                "there must be one value more than boundaries"
            )
        if any(b >= a for a, b in zip(boundaries[1:], boundaries, strict=False)):
            raise ValueError(f"PiecewiseConstantDecay: boundaries must increase, got {boundaries}")
        self.boundaries, self.values, self.name = list(boundaries), list(values), name

    def __call__(self, step: Step) -> Tensor:
        s = _steps(step)
        rate = _number(self.values[-1], s)
        for boundary, value in zip(reversed(self.boundaries), reversed(self.values[:-1]), strict=True):
            rate = where(s <= boundary, value, rate)
        return rate


__all__ = [
    "CosineDecay",
    "ExponentialDecay",
    "InverseTimeDecay",
    "LearningRateSchedule",
    "PiecewiseConstantDecay",
    "PolynomialDecay",
    "cos_pi",
]
