"""Keras's learning-rate schedules against their formulas (written here with ``math``), and
driving an optimizer eagerly, on a lazy device and under ``@braze.jit`` without a recompile."""

from __future__ import annotations

import math

import numpy as np
import pytest

import braze
from braze.optim import SGD, schedules
from braze.runtime import metrics

STEPS = [0, 1, 2, 5, 9, 10, 11, 17, 40, 49, 50, 51, 99, 100, 101, 250]


def cosine(step, initial, decay_steps, alpha=0.0, warmup_target=None, warmup_steps=0):
    if warmup_target is None:
        s = min(step, decay_steps)
        return initial * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * s / decay_steps)) + alpha)
    s = min(step, decay_steps + warmup_steps)
    if s < warmup_steps:
        return initial + (warmup_target - initial) * s / warmup_steps
    done = (s - warmup_steps) / decay_steps
    return warmup_target * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * done)) + alpha)


CASES = {
    "cosine": (schedules.CosineDecay(0.1, 50, alpha=0.1), lambda s: cosine(s, 0.1, 50, 0.1)),
    "cosine warm-up": (
        schedules.CosineDecay(0.0, 90, warmup_target=0.5, warmup_steps=10),
        lambda s: cosine(s, 0.0, 90, warmup_target=0.5, warmup_steps=10),
    ),
    "exponential": (schedules.ExponentialDecay(0.1, 10, 0.5), lambda s: 0.1 * 0.5 ** (s / 10)),
    "exponential staircase": (
        schedules.ExponentialDecay(0.1, 10, 0.5, staircase=True),
        lambda s: 0.1 * 0.5 ** (s // 10),
    ),
    "inverse time": (schedules.InverseTimeDecay(0.1, 10, 0.5), lambda s: 0.1 / (1 + 0.5 * s / 10)),
    "inverse time staircase": (
        schedules.InverseTimeDecay(0.1, 10, 0.5, staircase=True),
        lambda s: 0.1 / (1 + 0.5 * (s // 10)),
    ),
    "polynomial": (
        schedules.PolynomialDecay(0.1, 50, 0.001, power=2.0),
        lambda s: (0.1 - 0.001) * (1 - min(s, 50) / 50) ** 2 + 0.001,
    ),
    "polynomial cycle": (
        schedules.PolynomialDecay(0.1, 50, 0.001, power=2.0, cycle=True),
        lambda s: (0.1 - 0.001) * (1 - s / (50 * max(1, math.ceil(s / 50)))) ** 2 + 0.001,
    ),
    "piecewise": (
        schedules.PiecewiseConstantDecay([10, 50], [1.0, 0.5, 0.1]),
        lambda s: 1.0 if s <= 10 else (0.5 if s <= 50 else 0.1),
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_a_schedule_follows_its_formula(name):
    schedule, formula = CASES[name]
    got = [float(schedule(step)) for step in STEPS]
    np.testing.assert_allclose(got, [formula(step) for step in STEPS], rtol=1e-13, atol=1e-16)
    assert schedule(braze.tensor(7, dtype=braze.int64)).dtype == braze.float64


def test_the_cosine_is_exact_to_double_rounding():
    fractions = np.linspace(0.0, 1.0, 4001)
    got = schedules.cos_pi(braze.tensor(fractions)).numpy()
    np.testing.assert_allclose(got, np.cos(np.pi * fractions), rtol=0, atol=4 * np.finfo(np.float64).eps)


def test_a_schedule_is_made_again_from_its_config():
    schedule = schedules.CosineDecay(0.1, 50, alpha=0.1, warmup_target=0.2, warmup_steps=5)
    again = schedules.CosineDecay.from_config(schedule.get_config())
    assert [float(again(s)) for s in STEPS] == [float(schedule(s)) for s in STEPS]


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: schedules.CosineDecay(0.1, 0), "decay_steps must be more than 0"),
        (lambda: schedules.CosineDecay(0.1, 10, warmup_steps=-1), "warmup_steps must be 0 or more"),
        (lambda: schedules.ExponentialDecay(0.1, 2.5, 0.5, staircase=True), "whole number"),
        (lambda: schedules.PiecewiseConstantDecay([1, 2], [1.0]), "one value more than boundaries"),
        (lambda: schedules.PiecewiseConstantDecay([2, 1], [1.0, 2.0, 3.0]), "must increase"),
    ],
)
def test_bad_schedule_arguments_are_named(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def sgd_with_schedule(schedule, mode, steps):
    """SGD on f(w) = sum(w^2) / 2 (gradient w): each step scales w by 1 - lr."""
    device = braze.LAZY_CPU if mode == "lazy" else braze.CPU
    w = braze.tensor(np.array([1.0, -2.0], np.float32), device=device, requires_grad=True)
    optimizer = SGD([w], lr=schedule)

    def step(w, optimizer):
        optimizer.zero_grad()
        ((w * w).sum() * 0.5).backward()
        optimizer.step()

    run = braze.jit(step) if mode == "jit" else step
    for _ in range(steps):
        run(w, optimizer)
    return w.numpy(), run


@pytest.mark.parametrize("mode", ["eager", "lazy", "jit"])
def test_an_optimizer_follows_its_schedule_in_every_mode_without_recompiling(mode):
    schedule, formula = CASES["cosine warm-up"]
    metrics.reset()
    got, run = sgd_with_schedule(schedule, mode, 14)
    expected = np.array([1.0, -2.0])
    for step in range(14):
        expected = expected * (1 - np.float32(formula(step)))
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    if mode == "lazy":
        assert metrics.counter("CacheMiss") <= 1
        assert metrics.counter("FunctionReplay") == 13  # the schedule's ops, recorded on the first step
    if mode == "jit":
        assert run.compiles == 1


def test_cosine_schedules_of_other_settings_replay_their_own_ops_on_a_lazy_device():
    """A lazy step replays a cosine schedule's recorded ops: two schedules that differ in
    any setting each follow their own formula, step after step."""
    settings = [(0.1, 50, 0.1, None, 0), (0.1, 50, 0.2, None, 0), (0.0, 90, 0.0, 0.5, 10), (0.0, 90, 0.0, 0.5, 20)]
    for step in (0, 5, 12, 60, 120):
        count = braze.tensor(np.int64(step), device=braze.LAZY_CPU)
        for initial, decay, alpha, target, warmup in settings:
            schedule = schedules.CosineDecay(initial, decay, alpha, warmup_target=target, warmup_steps=warmup)
            want = cosine(step, initial, decay, alpha, warmup_target=target, warmup_steps=warmup)
            np.testing.assert_allclose(schedule(count).numpy(), want, rtol=1e-12, atol=1e-15)
