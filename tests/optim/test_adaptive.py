"""PyTorch's Adadelta, RMSprop and Adagrad against NumPy transcriptions of PyTorch's update
rules (in float64), eagerly, on the lazy device and under ``braze.jit``, with parameter
groups and a resumed state."""

from __future__ import annotations

from functools import partial

import numpy as np
import optim_references as references
import pytest

import braze
from braze.optim import Adadelta, Adagrad, RMSprop

W0 = np.random.default_rng(0).standard_normal(5).astype(np.float32)
GRADS = np.random.default_rng(1).standard_normal((6, 5)).astype(np.float32)
# Six steps of float32 arithmetic from values near 1: a few ulp each, far below this.
RTOL = 1e-5


# PyTorch's rules from W0 (tests/optim_references.py).
adadelta, rmsprop, adagrad = (
    partial(rule, W0) for rule in (references.adadelta, references.rmsprop, references.adagrad)
)


def _case_id(value) -> str:
    """A test id: an optimizer's or rule's name (a partial's function's), or the settings."""
    return getattr(getattr(value, "func", value), "__name__", repr(value))


CASES = [
    (Adadelta, adadelta, {}),
    (Adadelta, adadelta, {"lr": 0.5, "rho": 0.8, "eps": 1e-4, "weight_decay": 0.1}),
    (RMSprop, rmsprop, {}),
    (RMSprop, rmsprop, {"lr": 0.01, "centered": True, "momentum": 0.9, "weight_decay": 0.05}),
    (Adagrad, adagrad, {"lr": 0.1}),
    (Adagrad, adagrad, {"lr": 0.1, "lr_decay": 0.05, "initial_accumulator_value": 0.3, "weight_decay": 0.02}),
]


def _train(optimizer_class, settings, mode, grads=GRADS):
    device = braze.LAZY_CPU if mode == "lazy" else braze.CPU
    w = braze.tensor(W0.copy(), requires_grad=True, device=device)
    optimizer = optimizer_class([w], **settings)

    def step(g):
        w.grad = g
        optimizer.step()

    run = braze.jit(step) if mode == "jit" else step
    for g in grads:
        run(braze.tensor(g, device=device))
    return w, optimizer


@pytest.mark.parametrize("mode", ["eager", "lazy", "jit"])
@pytest.mark.parametrize(("optimizer_class", "rule", "settings"), CASES, ids=_case_id)
def test_each_step_is_pytorchs_rule(optimizer_class, rule, settings, mode):
    w, _ = _train(optimizer_class, settings, mode)
    np.testing.assert_allclose(w.numpy(), rule(GRADS, **settings), rtol=RTOL, atol=RTOL)


@pytest.mark.parametrize(("optimizer_class", "rule", "settings"), CASES, ids=_case_id)
def test_a_resumed_state_continues_the_same_trajectory(optimizer_class, rule, settings):
    w, optimizer = _train(optimizer_class, settings, "eager", GRADS[:3])
    resumed_w = braze.tensor(w.numpy(), requires_grad=True)
    resumed = optimizer_class([resumed_w], **settings)
    resumed.load_state_dict(optimizer.state_dict())
    for g in GRADS[3:]:
        resumed_w.grad = braze.tensor(g)
        resumed.step()
    np.testing.assert_allclose(resumed_w.numpy(), rule(GRADS, **settings), rtol=RTOL, atol=RTOL)


def test_rmsprop_momentum_turned_on_mid_run_starts_its_buffer_at_zero():
    w = braze.tensor(W0.copy(), requires_grad=True)
    optimizer = RMSprop([w], lr=0.01)
    w.grad = braze.tensor(GRADS[0])
    optimizer.step()
    optimizer.param_groups[0]["momentum"] = 0.5
    w.grad = braze.tensor(GRADS[1])
    optimizer.step()
    v1 = 0.01 * GRADS[0].astype(np.float64) ** 2
    after_one = W0 - 0.01 * GRADS[0] / (np.sqrt(v1) + 1e-8)
    v2 = 0.99 * v1 + 0.01 * GRADS[1].astype(np.float64) ** 2
    expected = after_one - 0.01 * GRADS[1] / (np.sqrt(v2) + 1e-8)  # the buffer starts as this step
    np.testing.assert_allclose(w.numpy(), expected, rtol=RTOL, atol=RTOL)


def test_bad_hyperparameters_are_refused():
    w = braze.tensor(W0.copy(), requires_grad=True)
    with pytest.raises(ValueError, match="rho must be in"):
        Adadelta([w], rho=1.5)
    with pytest.raises(ValueError, match="lr must be 0 or more"):
        RMSprop([w], lr=-1.0)
    with pytest.raises(ValueError, match="initial_accumulator_value"):
        Adagrad([w], initial_accumulator_value=-1.0)
    with pytest.raises(TypeError, match="eps must be a number"):
        Adagrad([w], eps=None)
