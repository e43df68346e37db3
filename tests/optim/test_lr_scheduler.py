"""PyTorch's learning-rate schedulers: the learning rate each epoch against the formulas of
PyTorch's documentation (written here with ``math``), and their state."""

from __future__ import annotations

import math

import numpy as np
import pytest

import braze
from braze.optim import SGD, lr_scheduler, schedules

EPOCHS = 14
BASE = 0.1


def optimizer() -> SGD:
    return SGD([braze.tensor([1.0], requires_grad=True)], lr=BASE)


def rates(make) -> list[float]:
    """The learning rate of each epoch: read before the epoch's scheduler step, as training does."""
    opt = optimizer()
    scheduler = make(opt)
    seen = []
    for _ in range(EPOCHS):
        assert scheduler.get_last_lr() == [opt.lr]
        seen.append(opt.lr)
        scheduler.step()
    return seen


def linear(epoch, start, end, total):
    return BASE * (start + (end - start) * min(epoch, total) / total)


def annealed(epoch, t_max, eta_min=0.0, base=BASE):
    return eta_min + (base - eta_min) * (1 + math.cos(math.pi * epoch / t_max)) / 2


CASES = {
    "step": (lambda o: lr_scheduler.StepLR(o, 3, gamma=0.5), lambda e: BASE * 0.5 ** (e // 3)),
    "multistep": (
        lambda o: lr_scheduler.MultiStepLR(o, [5, 2], gamma=0.1),
        lambda e: BASE * 0.1 ** ((e >= 2) + (e >= 5)),
    ),
    "exponential": (lambda o: lr_scheduler.ExponentialLR(o, 0.9), lambda e: BASE * 0.9**e),
    "cosine": (lambda o: lr_scheduler.CosineAnnealingLR(o, 10, eta_min=0.001), lambda e: annealed(e, 10, 0.001)),
    "lambda": (lambda o: lr_scheduler.LambdaLR(o, lambda e: 1 / (e + 1)), lambda e: BASE / (e + 1)),
    "linear": (lambda o: lr_scheduler.LinearLR(o, 0.25, 1.0, total_iters=4), lambda e: linear(e, 0.25, 1.0, 4)),
    "warm-up then cosine": (
        lambda o: lr_scheduler.SequentialLR(
            o, [lr_scheduler.LinearLR(o, 0.1, total_iters=3), lr_scheduler.CosineAnnealingLR(o, 8)], milestones=[3]
        ),
        lambda e: linear(e, 0.1, 1.0, 3) if e < 3 else annealed(e - 3, 8),
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_a_scheduler_sets_the_learning_rate_of_each_epoch(name):
    make, formula = CASES[name]
    np.testing.assert_allclose(rates(make), [formula(e) for e in range(EPOCHS)], rtol=1e-12)


def test_a_scheduler_resumes_from_its_state():
    opt = optimizer()
    scheduler = lr_scheduler.StepLR(opt, 2, gamma=0.5)
    for _ in range(5):
        scheduler.step()
    state = scheduler.state_dict()
    fresh = optimizer()
    resumed = lr_scheduler.StepLR(fresh, 2, gamma=0.5)
    resumed.load_state_dict(state)
    scheduler.step()
    resumed.step()
    assert resumed.get_last_lr() == scheduler.get_last_lr() == [BASE * 0.5**3]
    assert fresh.lr == opt.lr


def test_a_scheduler_refuses_an_optimizer_whose_learning_rate_is_a_schedule():
    opt = SGD([braze.tensor([1.0], requires_grad=True)], lr=schedules.ExponentialDecay(0.1, 10, 0.5))
    with pytest.raises(TypeError, match="ExponentialDecay"):
        lr_scheduler.StepLR(opt, 2)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda o: lr_scheduler.StepLR(o, 0), "step_size must be 1 or more"),
        (lambda o: lr_scheduler.LinearLR(o, start_factor=0.0), "start_factor"),
        (lambda o: lr_scheduler.SequentialLR(o, [lr_scheduler.StepLR(o, 2)], milestones=[3]), "1 schedulers need 0"),
        (lambda o: lr_scheduler.StepLR(o, 2, last_epoch=4), "resumes a schedule"),
    ],
)
def test_bad_scheduler_arguments_are_named(make, message):
    with pytest.raises(ValueError, match=message):
        make(optimizer())
