"""Optimizer ``state_dict``/``load_state_dict``: N steps, a save, a load into a fresh model
and optimizer, and M more steps are the N + M steps of one uninterrupted run."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze.nn import Dense, Sequential, softmax_cross_entropy
from braze.nn.utils import clip_grad_norm_
from braze.optim import SGD, AdamW
from braze.optim.schedules import CosineDecay
from braze.runtime import metrics


def network(seed: int) -> Sequential:
    g = braze.Generator(seed)
    return Sequential(Dense(8, activation="tanh", input_dim=5, generator=g), Dense(3, generator=g))


def optimizer_for(model) -> AdamW:
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    schedule = CosineDecay(1e-3 / 3, decay_steps=6, alpha=0.1, warmup_target=1e-2, warmup_steps=2)
    return AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=schedule,
        betas=(0.9, 0.99),
    )


def step(model, optimizer, x, y):
    optimizer.zero_grad()
    loss = softmax_cross_entropy(model(x), y)
    loss.backward()
    clip_grad_norm_(model.parameters(), 0.5)
    optimizer.step()
    return loss


def batch(i: int) -> tuple[braze.Tensor, braze.Tensor]:
    rng = np.random.default_rng(i)
    return braze.tensor(rng.standard_normal((6, 5)).astype(np.float32)), braze.tensor(rng.integers(0, 3, 6))


def train(model, optimizer, steps: range, run) -> list[float]:
    return [run(model, optimizer, *batch(i)).item() for i in steps]


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_training_resumes_exactly_from_saved_state(jitted):
    metrics.reset()
    run = braze.jit(step) if jitted else step
    whole = network(0)
    whole_optimizer = optimizer_for(whole)
    expected = train(whole, whole_optimizer, range(6), run)

    first = network(0)
    first_optimizer = optimizer_for(first)
    losses = train(first, first_optimizer, range(3), run)
    model_state, optimizer_state = first.state_dict(), first_optimizer.state_dict()
    assert optimizer_state["iterations"] == 3
    assert [group["params"] for group in optimizer_state["param_groups"]] == [[0, 1], [2, 3]]
    train(first, first_optimizer, range(3, 4), run)  # the saved state is a copy: later steps leave it
    if jitted:  # the learning rate, a schedule of the step count, is computed in the step
        assert run.compiles == 1 and metrics.counter("JitCompile") == 1

    resumed = network(1)  # other initial weights: all of them come from the state
    resumed_optimizer = optimizer_for(resumed)
    resumed.load_state_dict(model_state)
    resumed_optimizer.load_state_dict(optimizer_state)
    run = braze.jit(step) if jitted else step
    losses += train(resumed, resumed_optimizer, range(3, 6), run)
    assert losses == expected
    for p, q in zip(whole.parameters(), resumed.parameters(), strict=True):
        np.testing.assert_array_equal(q.numpy(), p.numpy())
    for a, b in zip(whole_optimizer.state, resumed_optimizer.state, strict=True):
        for name in a:
            np.testing.assert_array_equal(b[name].numpy(), a[name].numpy())
    assert resumed_optimizer.iterations.item() == 6


def test_hyperparameters_come_back_with_the_state():
    model = network(0)
    optimizer = SGD(model, lr=0.1, momentum=0.9)
    optimizer.param_groups[0]["lr"] = 0.025
    saved = optimizer.state_dict()
    fresh = SGD(network(0), lr=0.1, momentum=0.9)
    fresh.load_state_dict(saved)
    assert fresh.lr == 0.025 and fresh.momentum == 0.9


def test_a_state_that_does_not_fit_is_refused_and_nothing_is_loaded():
    optimizer = optimizer_for(network(0))
    saved = optimizer.state_dict()
    other = SGD(network(0), lr=0.1, momentum=0.9)
    with pytest.raises(ValueError, match="2 parameter groups saved, this optimizer has 1"):
        other.load_state_dict(saved)
    fewer = AdamW(network(0).parameters()[:3], lr=0.1)
    with pytest.raises(ValueError, match="1 parameter groups saved, this optimizer has 2|group 0 saved"):
        optimizer.load_state_dict(fewer.state_dict())
    wide = Sequential(Dense(9, input_dim=5), Dense(3))
    wrong = optimizer_for(wide)
    before = [np.array(slots["m"].numpy()) for slots in optimizer.state]
    with pytest.raises(ValueError, match=r"slot 'm' of parameter 0 is \(5, 8\), the saved one \(5, 9\)"):
        optimizer.load_state_dict(wrong.state_dict())
    for slots, kept in zip(optimizer.state, before, strict=True):
        np.testing.assert_array_equal(slots["m"].numpy(), kept)
    adam = AdamW(network(0), lr=0.1)
    with pytest.raises(ValueError, match=r"group 0 saved the hyperparameters \[.*'momentum'"):
        adam.load_state_dict(SGD(network(0), lr=0.1).state_dict())
    # An optimizer made with momentum takes the state of one without, as PyTorch's does:
    # its momentum and its slots are the saved ones.
    momentum = SGD(network(0), lr=0.1, momentum=0.9)
    momentum.load_state_dict(SGD(network(0), lr=0.1).state_dict())
    assert momentum.param_groups[0]["momentum"] == 0 and all(not slots for slots in momentum.state)


def plain_step(model, optimizer, x, y):
    optimizer.zero_grad()
    softmax_cross_entropy(model(x), y).backward()
    optimizer.step()


def test_momentum_turned_on_mid_run_resumes_in_an_optimizer_made_without_it():
    rng = np.random.default_rng(3)
    x, y = braze.tensor(rng.random((6, 5), dtype=np.float32)), braze.tensor(rng.integers(0, 3, 6).astype(np.int32))
    model = network(0)
    optimizer = SGD(model, lr=0.05)
    plain_step(model, optimizer, x, y)
    optimizer.param_groups[0]["momentum"] = 0.9  # a momentum warm-up
    plain_step(model, optimizer, x, y)
    resumed = network(1)
    resumed.load_state_dict(model.state_dict())
    again = SGD(resumed, lr=0.05)  # the construction code of the run, momentum off
    again.load_state_dict(optimizer.state_dict())
    for m, o in ((model, optimizer), (resumed, again)):
        for _ in range(2):
            plain_step(m, o, x, y)
    for p, q in zip(model.parameters(), resumed.parameters(), strict=True):
        np.testing.assert_array_equal(q.numpy(), p.numpy())


def test_slots_follow_a_model_converted_to_float64_after_the_optimizer_was_made():
    rng = np.random.default_rng(4)
    x, y = rng.random((6, 5)), rng.integers(0, 3, 6).astype(np.int32)
    single, double = network(0), network(0)
    optimizers = [AdamW(single, lr=0.01), AdamW(double, lr=0.01)]
    plain_step(single, optimizers[0], braze.tensor(x, dtype="float32"), braze.tensor(y))
    plain_step(double, optimizers[1], braze.tensor(x, dtype="float32"), braze.tensor(y))
    double.to(dtype=braze.float64)  # then trained in double precision, as PyTorch allows
    plain_step(single, optimizers[0], braze.tensor(x, dtype="float32"), braze.tensor(y))
    plain_step(double, optimizers[1], braze.tensor(x, dtype="float64"), braze.tensor(y))
    assert {slot.dtype for slots in optimizers[1].state for slot in slots.values()} == {braze.float64}
    for p, q in zip(single.parameters(), double.parameters(), strict=True):
        assert q.dtype == braze.float64
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-5, atol=1e-6)
