"""Parameter groups as PyTorch has them: per-group hyperparameters that equal separate
optimizers, that a jitted step takes as inputs, and that schedulers set per group."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze.nn import Dense, Sequential, softmax_cross_entropy
from braze.optim import SGD, AdamW
from braze.optim.lr_scheduler import StepLR
from braze.runtime import metrics

RTOL, ATOL = 2e-5, 1e-6  # the same float32 arithmetic, eager and compiled (other orders)


def network() -> Sequential:
    g = braze.Generator(3)
    return Sequential(Dense(8, activation="relu", input_dim=5, generator=g), Dense(3, generator=g))


def batch(seed: int = 0) -> tuple[braze.Tensor, braze.Tensor]:
    rng = np.random.default_rng(seed)
    return braze.tensor(rng.standard_normal((6, 5)).astype(np.float32)), braze.tensor(rng.integers(0, 3, 6))


def split(model):
    """nanoGPT's grouping: matrices decay, vectors (biases, norms) do not."""
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    return decay, no_decay


def train(model, optimizers, steps: int) -> list[float]:
    losses = []
    for i in range(steps):
        for optimizer in optimizers:
            optimizer.zero_grad()
        loss = softmax_cross_entropy(model(batch(i)[0]), batch(i)[1])
        loss.backward()
        for optimizer in optimizers:
            optimizer.step()
        losses.append(loss.item())
    return losses


def test_groups_update_as_separate_optimizers_would():
    grouped, separate = network(), network()
    decay, no_decay = split(grouped)
    optimizer = AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}], lr=0.01)
    assert [len(g["params"]) for g in optimizer.param_groups] == [2, 2]
    assert optimizer.param_groups[1]["lr"] == 0.01 and optimizer.param_groups[1]["weight_decay"] == 0.0
    assert optimizer.params == decay + no_decay
    decay2, no_decay2 = split(separate)
    pair = [AdamW(decay2, lr=0.01, weight_decay=0.1), AdamW(no_decay2, lr=0.01, weight_decay=0.0)]
    assert train(grouped, [optimizer], 4) == train(separate, pair, 4)
    for p, q in zip(grouped.parameters(), separate.parameters(), strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def test_a_groups_learning_rate_set_between_jitted_steps_is_an_input():
    metrics.reset()
    eager, compiled = network(), network()
    optimizers = []
    for model in (eager, compiled):
        decay, no_decay = split(model)
        optimizers.append(SGD([{"params": decay}, {"params": no_decay, "lr": 0.05}], lr=0.1, momentum=0.9))
    step = braze.jit(_step)
    for i, lr in enumerate((0.1, 0.02, 0.3)):
        for optimizer in optimizers:
            optimizer.param_groups[0]["lr"] = lr  # as PyTorch training loops set it
            optimizer.param_groups[1]["lr"] = lr / 2
        expected = _step(eager, optimizers[0], *batch(i)).item()
        np.testing.assert_allclose(step(compiled, optimizers[1], *batch(i)).item(), expected, rtol=RTOL, atol=ATOL)
    assert step.compiles == 1 and metrics.counter("JitRecompile") == 0
    for p, q in zip(eager.parameters(), compiled.parameters(), strict=True):
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=RTOL, atol=ATOL)


def _step(model, optimizer, x, y):
    optimizer.zero_grad()
    loss = softmax_cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def test_optimizer_attributes_read_and_set_every_group():
    model = network()
    decay, no_decay = split(model)
    optimizer = AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}], lr=0.01)
    assert optimizer.lr == 0.01 and optimizer.betas == (0.9, 0.999)
    optimizer.lr = 0.5
    assert [g["lr"] for g in optimizer.param_groups] == [0.5, 0.5] and optimizer.defaults["lr"] == 0.01
    with pytest.raises(ValueError, match=r"different weight_decay \(0.1, 0.0\): read optimizer.param_groups\[i\]"):
        optimizer.weight_decay  # noqa: B018 - the read is the test
    with pytest.raises(AttributeError):
        optimizer.no_such_thing  # noqa: B018


def test_bad_groups_are_named():
    model = network()
    decay, no_decay = split(model)
    with pytest.raises(ValueError, match=r"unknown hyperparameters \['weight_dacay'\]"):
        AdamW([{"params": decay, "weight_dacay": 0.1}])
    with pytest.raises(ValueError, match="more than one parameter group"):
        AdamW([{"params": decay}, {"params": [decay[0], *no_decay]}])
    with pytest.raises(ValueError, match="needs 'params'"):
        AdamW([{"lr": 0.1}])
    with pytest.raises(ValueError, match="weight_decay must be 0 or more"):
        AdamW([{"params": decay, "weight_decay": -1.0}])
    with pytest.raises(TypeError, match="either tensors or parameter groups"):
        SGD([decay[0], {"params": no_decay}])
    with pytest.raises(KeyError, match="add_param_group"):
        SGD(decay).param_groups[0]["params"] = no_decay


def test_add_param_group_makes_its_slots_at_once():
    model = network()
    decay, no_decay = split(model)
    optimizer = SGD(decay, lr=0.1, momentum=0.9)
    optimizer.add_param_group({"params": no_decay, "momentum": 0.5})
    assert len(optimizer.state) == 4 and all("momentum" in slots for slots in optimizer.state)
    assert optimizer.param_groups[1]["lr"] == 0.1 and optimizer.param_groups[1]["momentum"] == 0.5


def test_a_scheduler_sets_each_groups_rate_from_its_own_base():
    model = network()
    decay, no_decay = split(model)
    optimizer = SGD([{"params": decay}, {"params": no_decay, "lr": 0.01}], lr=0.1)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.5)
    assert scheduler.base_lrs == [0.1, 0.01]
    scheduler.step()
    assert scheduler.get_last_lr() == [0.05, 0.005]
    assert [g["lr"] for g in optimizer.param_groups] == [0.05, 0.005]
