"""A lazy backward over a structure seen before replays its recorded ops: the same gradients
as the VJP rules (NumPy and finite differences are the references), the same trace (the
trace cache hits), and the same release of saved values."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import braze
from braze import backward_replay, replay
from braze.models import LeNet
from braze.nn import softmax_cross_entropy
from braze.runtime import metrics

LAZY = braze.LAZY_CPU


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setenv("BRAZE_BACKEND", "reference")
    backward_replay._PROGRAMS.clear()
    metrics.reset()


def _lazy(array: np.ndarray) -> braze.Tensor:
    return braze.tensor(array, device=LAZY).requires_grad_()


def test_lenet_gradients_replayed_equal_the_rules_and_hit_the_trace_cache():
    rng = np.random.default_rng(0)
    images = rng.random((4, 28, 28, 1), dtype=np.float32)
    labels = rng.integers(0, 10, 4).astype(np.int32)
    lazy_model, eager_model = LeNet(seed=1).to(LAZY), LeNet(seed=1)
    for step in range(3):
        for model, device in ((lazy_model, LAZY), (eager_model, braze.CPU)):
            model.zero_grad()
            x, y = braze.tensor(images * (step + 1), device=device), braze.tensor(labels, device=device)
            softmax_cross_entropy(model(x), y).backward()
        braze.barrier()
        for p, q in zip(lazy_model.parameters(), eager_model.parameters(), strict=True):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert metrics.counter("BackwardReplay") == 2
    assert metrics.counter("TraceCacheHit") >= 2, metrics.report()


def test_a_shared_input_is_not_confused_with_two_inputs_of_the_same_type():
    a_np, b_np = np.array([1.0, 2.0, 3.0], np.float32), np.array([5.0, 7.0, 11.0], np.float32)
    for first, second in (("ab", "aa"), ("aa", "ab")):
        backward_replay._PROGRAMS.clear()
        for pattern in (first, second, first, second):
            a, b = _lazy(a_np), _lazy(b_np)
            operands = {"a": a, "b": b}
            (operands[pattern[0]] * operands[pattern[1]]).sum().backward()
            if pattern == "aa":
                np.testing.assert_allclose(a.grad.numpy(), 2 * a_np)
                assert b.grad is None
            else:
                np.testing.assert_allclose(a.grad.numpy(), b_np)
                np.testing.assert_allclose(b.grad.numpy(), a_np)
    assert metrics.counter("BackwardReplay") == 4


def test_a_saved_value_shared_without_gradient_is_told_apart():
    """``a * a.detach()`` and ``a * c`` have the same parents; only the saved values differ."""
    a_np, c_np = np.array([1.0, 2.0], np.float32), np.array([3.0, 5.0], np.float32)
    for order in (("shared", "other"), ("other", "shared")):
        backward_replay._PROGRAMS.clear()
        for kind in order * 2:
            a = _lazy(a_np)
            other = a.detach() if kind == "shared" else braze.tensor(c_np, device=LAZY)
            (a * other).sum().backward()
            np.testing.assert_allclose(a.grad.numpy(), a_np if kind == "shared" else c_np)
    assert metrics.counter("BackwardReplay") == 4


def test_replayed_gradient_matches_finite_differences():
    x_np = np.random.default_rng(2).normal(size=(3, 4))

    def f(x):
        return (braze.tanh(x) * x + braze.exp(-x)).mean(axis=0).sum()

    for _ in range(2):
        x = braze.tensor(x_np, dtype=braze.float64, device=LAZY).requires_grad_()
        f(x).backward()
        got = x.grad.numpy()
    assert metrics.counter("BackwardReplay") == 1
    expected = np.zeros_like(x_np)
    for i in np.ndindex(x_np.shape):
        step = np.zeros_like(x_np)
        step[i] = 1e-6
        up, down = (f(braze.tensor(x_np + s, dtype=braze.float64)).item() for s in (step, -step))
        expected[i] = (up - down) / 2e-6
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def test_a_replayed_backward_releases_saved_values_as_the_rules_do():
    for _ in range(2):
        x = _lazy(np.arange(3, dtype=np.float32))
        loss = (x * x).sum()
        loss.backward()
    assert metrics.counter("BackwardReplay") == 1
    with pytest.raises(RuntimeError, match="backward through a graph a second time"):
        loss.backward()


def test_retain_graph_keeps_values_for_a_second_replayed_backward():
    for _ in range(2):
        x = _lazy(np.array([1.0, -2.0], np.float32))
        loss = (x * x * x).sum()
        loss.backward(retain_graph=True)
        loss.backward()
        np.testing.assert_allclose(x.grad.numpy(), 2 * 3 * x.numpy() ** 2)
    assert metrics.counter("BackwardReplay") == 3


def test_while_another_thread_records_a_backward_is_recorded_as_its_own():
    """Recorders send only their own thread's binds to themselves: a backward in this thread
    while another thread records is recorded (and replayed) as if alone."""
    from braze.ir import primitive
    from braze.tensor import bind

    recording, release = threading.Event(), threading.Event()

    def other() -> list:
        recording.set()
        assert release.wait(10)
        return []

    thread = threading.Thread(target=lambda: replay.record([], other))
    thread.start()
    try:
        assert recording.wait(10)
        for value in ([1.0, 2.0], [3.0, -1.0]):
            x = _lazy(np.array(value, np.float32))
            (x * x).sum().backward()
            np.testing.assert_allclose(x.grad.numpy(), 2 * np.array(value))
        assert len(backward_replay._PROGRAMS) == 1 and primitive.current_binder() is bind
        assert metrics.counter("BackwardReplay") == 1
    finally:
        release.set()
        thread.join(10)


def test_a_replayed_backward_computes_each_repeated_op_once():
    """``x * w`` twice: the rules multiply the same cotangent by ``w`` twice; the replay
    does it once (one expression fewer), with the same gradient and the same executable."""
    from braze import lazy

    w_np = np.array([0.5, 1.5, 2.5])
    recorded = []
    for k in range(3):
        x = _lazy(np.array([1.0, 2.0, 3.0]) + k)
        w = braze.tensor(w_np, device=LAZY)
        y = (x * w).sum() + (x * w).sum()
        start = next(lazy._SEQUENCE)
        y.backward()
        recorded.append(next(lazy._SEQUENCE) - start)
        np.testing.assert_allclose(x.grad.numpy(), 2 * w_np)
    assert recorded[1] == recorded[2] < recorded[0]
    assert metrics.counter("BackwardReplay") == 2 and metrics.counter("Compile") == 1


def test_repeated_constants_stay_apart_in_a_replayed_backward():
    """Each ``erf(x)`` has a gradient rule making its own constant 2 / sqrt(pi), which the
    trace takes as a graph input of its own: the replay keeps both, so it builds the
    recorded step's graph and compiles nothing more."""
    from scipy import special

    for k in range(3):
        x_np = np.array([0.1, -0.5, 1.2]) + k
        x = _lazy(x_np)
        (braze.ops.erf(x).sum() + braze.ops.erf(x).sum()).backward()
        h = 1e-6
        numeric = (special.erf(x_np + h) - special.erf(x_np - h)) / h  # twice the central difference's slope
        np.testing.assert_allclose(x.grad.numpy(), numeric, rtol=1e-6)
    assert metrics.counter("BackwardReplay") == 2 and metrics.counter("Compile") == 1


def test_equal_gradients_of_two_leaves_stay_two_results():
    """``a * w`` and ``b * w``: the rules compute both gradients alike, ``g * w``, as two
    values, each a result of the recorded step's graph; the replay keeps them two, so it
    builds that graph again rather than one with a result fewer (a second compile)."""
    w_np = np.array([0.5, 1.5, 2.5])
    for k in range(3):
        a, b = _lazy(np.full(3, 1.0 + k)), _lazy(np.full(3, -2.0 - k))
        w = braze.tensor(w_np, device=LAZY)
        ((a * w).sum() + (b * w).sum()).backward()
        braze.barrier()  # the step's graph: both gradients its results
        np.testing.assert_allclose(a.grad.numpy(), w_np)
        np.testing.assert_allclose(b.grad.numpy(), w_np)
    assert metrics.counter("BackwardReplay") == 2 and metrics.counter("Compile") == 1


def test_a_replayed_backward_is_one_expression_and_one_per_gradient():
    """A replayed backward binds its program as one expression and one per gradient, from
    the first step on (the step compiles once), with NumPy's gradients."""
    from braze import lazy

    rng = np.random.default_rng(3)
    w1_np, w2_np = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    made = []
    for k in range(3):
        x_np = rng.standard_normal((5, 3)) + k
        w1, w2 = _lazy(w1_np), _lazy(w2_np)
        loss = (braze.ops.tanh(braze.tensor(x_np, device=LAZY) @ w1) @ w2).sum()
        start = next(lazy._SEQUENCE)
        loss.backward()
        made.append(next(lazy._SEQUENCE) - start - 1)
        braze.barrier()  # both gradients in one graph
        hidden = np.tanh(x_np @ w1_np)
        np.testing.assert_allclose(w2.grad.numpy(), hidden.T @ np.ones((5, 2)), rtol=1e-12)
        np.testing.assert_allclose(w1.grad.numpy(), x_np.T @ (np.ones((5, 2)) @ w2_np.T * (1 - hidden**2)), rtol=1e-12)
    assert made[1] == made[2] == 1 + 1 + 2 < made[0]  # the seed, the call, each gradient
    assert metrics.counter("BackwardReplay") == 2 and metrics.counter("Compile") == 1


def test_a_gradient_taken_inside_a_lazy_loop_body_runs_its_rules():
    """A loop body traced on a lazy device records through its own binder: a backward
    there runs its VJP rules (a replay would bind past the body's recorder and leave its
    placeholders in the outer graph). The loop matches NumPy's."""
    xs_np = np.array([0.3, -0.2, 0.5, 0.1])

    def body(c, x):
        g = braze.grad(lambda v: (braze.ops.tanh(v * x) * v).sum())(c)
        return c - 0.1 * g, g.sum()

    for k in range(2):
        c_np = np.array([0.5, -1.0, 2.0]) + k
        c, _ = braze.lax.scan(
            body, braze.tensor(c_np, device=LAZY), braze.tensor(xs_np[:, None] * np.ones(3), device=LAZY)
        )
        for x in xs_np:
            t = np.tanh(c_np * x)
            c_np = c_np - 0.1 * (t + c_np * x * (1 - t * t))
        np.testing.assert_allclose(c.numpy(), c_np, rtol=1e-12)
