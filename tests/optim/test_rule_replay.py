"""A lazy optimizer step replays the update rules it recorded for its parameters' types:
the values are NumPy's transcription of the rule whatever changes between steps (a
hyperparameter's value, a term turned on, a parameter of another dtype), and the replayed
trace is the one the rule records (the trace cache hits)."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze.lazy import EXECUTOR
from braze.optim import SGD, AdamW
from braze.runtime import metrics

LAZY = braze.LAZY_CPU
GRADS = [np.array([0.5, -1.0, 2.0]), np.array([0.1, 0.3, -0.2]), np.array([-0.4, 0.2, 0.9]), np.array([1.0, 0, -1])]


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setenv("BRAZE_BACKEND", "reference")  # the traces are the subject, not the kernels
    EXECUTOR.cache.clear()
    EXECUTOR.traces.clear()
    metrics.reset()


def adamw_ref(p, lrs, decays, betas=(0.9, 0.99), eps=1e-8):
    """AdamW in float64 with this step's learning rate and weight decay."""
    m, v = np.zeros_like(p), np.zeros_like(p)
    for t, (g, lr, decay) in enumerate(zip(GRADS, lrs, decays, strict=True), start=1):
        p = p * (1 - lr * decay)
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        p = p - lr * (m / (1 - betas[0] ** t)) / (np.sqrt(v / (1 - betas[1] ** t)) + eps)
    return p


def run_adamw(params, lrs, decays, device=LAZY):
    tensors = [braze.tensor(p, device=device, requires_grad=True) for p in params]
    optimizer = AdamW(tensors, lr=lrs[0], betas=(0.9, 0.99), weight_decay=decays[0])
    for g, lr, decay in zip(GRADS, lrs, decays, strict=True):
        optimizer.lr, optimizer.weight_decay = lr, decay
        for t in tensors:
            t.grad = braze.tensor(g.astype(t.dtype.numpy).reshape(t.shape), device=device)
        optimizer.step()
    return [t.numpy() for t in tensors]


def test_replayed_steps_follow_changing_hyperparameters():
    lrs, decays = [0.01, 0.01, 0.02, 0.005], [0.1, 0.1, 0.1, 0.3]
    (p,) = run_adamw([np.array([1.0, -2.0, 3.0])], lrs, decays)
    np.testing.assert_allclose(p, adamw_ref(np.array([1.0, -2.0, 3.0]), lrs, decays), rtol=1e-12)
    assert metrics.counter("OptimizerReplay") == 3  # recorded in the first step, replayed in the others
    assert metrics.counter("Compile") == 1


def test_hyperparameters_equal_when_recorded_are_two_inputs_later():
    """At the first step the learning rate equals the weight decay, so both are one tensor:
    the recorded program must not read that one value for both once they differ."""
    lrs, decays = [0.1, 0.01, 0.02, 0.05], [0.1, 0.1, 0.1, 0.1]
    (p,) = run_adamw([np.array([1.0, -2.0, 3.0])], lrs, decays)
    np.testing.assert_allclose(p, adamw_ref(np.array([1.0, -2.0, 3.0]), lrs, decays), rtol=1e-12)


def test_a_term_turned_on_is_another_rule():
    """A weight decay of 0 leaves its term out of the rule: turning it on mid-run records a
    second rule rather than replaying the first one (whose trace has no decay)."""
    lrs, decays = [0.01] * 4, [0.0, 0.0, 0.2, 0.2]
    (p,) = run_adamw([np.array([1.0, -2.0, 3.0])], lrs, decays)
    np.testing.assert_allclose(p, adamw_ref(np.array([1.0, -2.0, 3.0]), lrs, decays), rtol=1e-12)
    assert metrics.counter("OptimizerReplay") == 2  # steps 2 and 4
    assert metrics.counter("Compile") == 2


def test_parameters_of_other_types_have_their_own_rules():
    params = [np.array([1.0, -2.0, 3.0]), np.array([0.5, 0.25, -1.0], np.float32), np.array([[1.0, 2.0, 3.0]])]
    lrs, decays = [0.01] * 4, [0.1] * 4
    for p, found in zip(params, run_adamw(params, lrs, decays), strict=True):
        assert found.dtype == p.dtype and found.shape == p.shape
        tolerance = 1e-12 if p.dtype == np.float64 else 1e-6
        np.testing.assert_allclose(found, adamw_ref(p.astype(np.float64), lrs, decays), rtol=tolerance)


def test_replayed_trace_is_the_recorded_one():
    """The second and third steps replay the rule and find the first replayed step's trace."""
    run_adamw([np.array([1.0, -2.0, 3.0]), np.array([[0.5, 1.5, -1.0]])], [0.01] * 4, [0.1] * 4)
    assert metrics.counter("TraceCacheHit") == 3 and metrics.counter("Compile") == 1


def test_eager_and_update_overrides_are_not_replayed():
    (eager,) = run_adamw([np.array([1.0, -2.0, 3.0])], [0.01] * 4, [0.1] * 4, device=braze.CPU)
    np.testing.assert_allclose(eager, adamw_ref(np.array([1.0, -2.0, 3.0]), [0.01] * 4, [0.1] * 4), rtol=1e-12)

    class Halved(SGD):
        def update(self, param, grad, slots):
            return super().update(param, grad * 0.5, slots)

    p = braze.tensor(np.array([1.0, 2.0]), device=LAZY, requires_grad=True)
    optimizer = Halved([p], lr=0.1)
    for g in GRADS[:2]:
        p.grad = braze.tensor(g[:2], device=LAZY)
        optimizer.step()
    np.testing.assert_allclose(p.numpy(), [1.0, 2.0] - 0.05 * (GRADS[0][:2] + GRADS[1][:2]), rtol=1e-12)
    assert metrics.counter("OptimizerReplay") == 0


def test_sgd_momentum_turned_on_and_nesterov_are_rules_of_their_own():
    """Momentum turned on mid-run adds a slot (the rule of the next steps returns one more),
    and Nesterov's switch is part of the rule: each is replayed only where it applies."""
    start = np.array([1.0, -2.0, 3.0])
    p = braze.tensor(start, device=LAZY, requires_grad=True)
    optimizer = SGD([p], lr=0.1)
    settings = [(0.0, False), (0.0, False), (0.9, False), (0.9, False), (0.9, False), (0.9, True), (0.9, True)]
    expected, velocity = start.copy(), None
    for (momentum, nesterov), g in zip(settings, GRADS + GRADS[:3], strict=True):
        optimizer.momentum, optimizer.nesterov = momentum, nesterov
        p.grad = braze.tensor(g, device=LAZY)
        optimizer.step()
        if momentum:
            velocity = g if velocity is None else momentum * velocity + g
            expected = expected - 0.1 * (g + momentum * velocity if nesterov else velocity)
        else:
            expected = expected - 0.1 * g
        np.testing.assert_allclose(p.numpy(), expected, rtol=1e-12)
    # Replayed: the second step, the fifth (momentum's first step has no velocity slot yet;
    # its second records the rule with one) and the seventh.
    assert metrics.counter("OptimizerReplay") == 3


class Squared(SGD):
    """A rule with a matrix product, which ``braze.autocast`` computes in bfloat16."""

    def rule(self, param, grad, slots, h):
        return param - braze.ops.matmul(grad, grad) * h["lr"], {}


def test_autocast_is_part_of_a_rule():
    """A rule recorded outside ``braze.autocast`` is not replayed inside it: the lazy steps
    follow the eager ones, whose products autocast rounds to bfloat16."""
    rng = np.random.default_rng(0)
    grads = [rng.uniform(-1, 1, (4, 4)).astype(np.float32) for _ in range(4)]
    found = {}
    for device in (LAZY, braze.CPU):
        p = braze.tensor(np.eye(4, dtype=np.float32), device=device, requires_grad=True)
        optimizer = Squared([p], lr=0.1)
        found[device] = []
        for g, on in zip(grads, (False, False, True, True), strict=True):
            p.grad = braze.tensor(g, device=device)
            with braze.autocast("bfloat16", enabled=on):
                optimizer.step()
            found[device].append(p.numpy().copy())
    for lazy_value, eager_value in zip(found[LAZY], found[braze.CPU], strict=True):
        np.testing.assert_allclose(lazy_value, eager_value, rtol=1e-6, atol=1e-7)
    assert not np.allclose(found[braze.CPU][2] - found[braze.CPU][1], -0.1 * grads[2] @ grads[2], rtol=1e-6)
    assert metrics.counter("OptimizerReplay") == 2


def test_update_outside_a_step_reads_the_hyperparameters_of_each_call():
    p = braze.tensor(np.array([1.0, 2.0]), requires_grad=True)
    g = braze.tensor(np.array([0.5, -1.0]))
    optimizer = SGD([p], lr=0.1)
    first, _ = optimizer.update(p, g, optimizer.init_slots(p))
    optimizer.lr = 0.01
    second, _ = optimizer.update(p, g, optimizer.init_slots(p))
    np.testing.assert_allclose(first.numpy(), [1 - 0.05, 2 + 0.1], rtol=1e-12)
    np.testing.assert_allclose(second.numpy(), [1 - 0.005, 2 + 0.01], rtol=1e-12)


def test_parameters_of_one_shape_share_their_hyperparameters_broadcasts():
    """The replayed step records each broadcast of a hyperparameter to a shape once (a
    repeat computes the same value): fewer expressions than the rule records, the same
    values, the same executable."""
    from braze import lazy

    params = [np.array([1.0, -2.0, 3.0]), np.array([0.5, 0.25, -1.0]), np.array([2.0, 1.0, -0.5])]
    tensors = [braze.tensor(p, device=LAZY, requires_grad=True) for p in params]
    optimizer = AdamW(tensors, lr=0.01, betas=(0.9, 0.99), weight_decay=0.1)
    recorded = []
    for g in GRADS:
        for t in tensors:
            t.grad = braze.tensor(g, device=LAZY)
        start = next(lazy._SEQUENCE)
        optimizer.step()
        recorded.append(next(lazy._SEQUENCE) - start)
    for p, found in zip(params, tensors, strict=True):
        np.testing.assert_allclose(found.numpy(), adamw_ref(p, [0.01] * 4, [0.1] * 4), rtol=1e-12)
    assert recorded[1] == recorded[2] == recorded[3] <= recorded[0] - 2 * 6  # two parameters' six broadcasts
    assert metrics.counter("OptimizerReplay") == 3 and metrics.counter("Compile") == 1


def test_a_replayed_step_is_one_expression_read_by_each_result():
    """A lazy step binds its recorded program as one expression: every new parameter and
    slot the barrier computes reads that one call, at the first step as at later ones; the
    graph expands the call into the rule's ops (NumPy's AdamW)."""
    from braze import lazy
    from braze.lazy import RESULT, Program

    params = [np.array([1.0, -2.0, 3.0]), np.array([[0.5, 1.5, -1.0], [2.0, -0.5, 0.25]])]
    tensors = [braze.tensor(p, device=LAZY, requires_grad=True) for p in params]
    optimizer = AdamW(tensors, lr=0.01, betas=(0.9, 0.99), weight_decay=0.1)
    for g in GRADS:
        for t in tensors:
            t.grad = braze.tensor(np.broadcast_to(g, t.shape), device=LAZY)
        with lazy.barriers_held():  # the step's own barrier waits for the asserts
            optimizer.step()
        roots = [r for r in EXECUTOR.pending_roots(LAZY) if r.primitive is RESULT]
        assert len(roots) == 2 * 4  # each parameter, its two moments and its step count
        (call,) = {id(r.inputs[0]): r.inputs[0] for r in roots}.values()
        assert isinstance(call.primitive, Program) and len(call.primitive.ops) > len(roots)
        braze.barrier()
    for p, found in zip(params, tensors, strict=True):
        np.testing.assert_allclose(found.numpy(), adamw_ref(p, [0.01] * 4, [0.1] * 4), rtol=1e-12)
    assert metrics.counter("OptimizerReplay") == 3 and metrics.counter("Compile") == 1
