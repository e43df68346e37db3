"""Gradient clipping as ``torch.nn.utils`` defines it, against NumPy, eager and compiled."""

from __future__ import annotations

import math

import numpy as np
import pytest

import braze
from braze.nn.utils import clip_grad_norm_, clip_grad_value_


def parameters_with_grads(scale: float, seed: int = 0) -> tuple[list[braze.Tensor], list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    grads = [rng.standard_normal(shape) * scale for shape in ((3, 4), (4,), (2, 2, 2))]
    params = [braze.tensor(np.zeros(g.shape), requires_grad=True) for g in grads]
    for p, g in zip(params, grads, strict=True):
        p.grad = braze.tensor(g)
    return params, grads


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("scale", [0.01, 10.0], ids=["below", "above"])
def test_clip_grad_norm_scales_by_the_norm_of_the_norms(norm_type, scale):
    params, grads = parameters_with_grads(scale)
    total = clip_grad_norm_(params, 1.0, norm_type)
    norms = [np.linalg.norm(g.reshape(-1), norm_type) for g in grads]
    expected = np.linalg.norm(np.array(norms), norm_type)
    np.testing.assert_allclose(total.item(), expected, rtol=1e-12)
    factor = min(1.0, 1.0 / (expected + 1e-6))
    for p, g in zip(params, grads, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), g * factor, rtol=1e-12)


def test_parameters_without_gradients_are_left_out():
    params, grads = parameters_with_grads(5.0)
    params[1].grad = None
    total = clip_grad_norm_(params + [braze.tensor(np.ones(2), requires_grad=True)], 0.5)
    expected = math.sqrt(sum(float((g * g).sum()) for i, g in enumerate(grads) if i != 1))
    np.testing.assert_allclose(total.item(), expected, rtol=1e-12)
    assert params[1].grad is None
    assert clip_grad_norm_([], 1.0).item() == 0.0


def test_clipping_is_part_of_the_compiled_step():
    rng = np.random.default_rng(1)
    x = braze.tensor(rng.standard_normal((4, 3)).astype(np.float32))
    runs = []
    for compiled in (False, True):
        w = braze.tensor(rng.standard_normal((3, 2)).astype(np.float32) * 0 + 3.0, requires_grad=True)

        def step(w, x):
            w.grad = None
            loss = ((x @ w) ** 2.0).sum()
            loss.backward()
            return clip_grad_norm_([w], 0.25)

        run = braze.jit(step) if compiled else step
        norms = [run(w, x).item() for _ in range(2)]
        runs.append((norms, np.array(w.grad.numpy())))
        if compiled:
            assert run.compiles == 1
    (eager_norms, eager_grad), (jit_norms, jit_grad) = runs
    np.testing.assert_allclose(jit_norms, eager_norms, rtol=1e-6)
    np.testing.assert_allclose(jit_grad, eager_grad, rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(jit_grad), 0.25, rtol=1e-5)


def test_errors_name_the_problem():
    params, _ = parameters_with_grads(1.0)
    with pytest.raises(ValueError, match="max_norm must be 0 or more"):
        clip_grad_norm_(params, -1.0)
    with pytest.raises(ValueError, match="norm_type must be more than 0"):
        clip_grad_norm_(params, 1.0, norm_type=-1)
    params[0].grad = braze.tensor(np.full((3, 4), np.inf))
    with pytest.raises(RuntimeError, match="total norm of order 2.0 of the gradients is inf"):
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    lazy = braze.tensor(np.ones(2), requires_grad=True)
    lazy.grad = braze.tensor(np.ones(2), device="lazy")
    with pytest.raises(braze.TraceError, match="check the returned norm after the step instead"):
        clip_grad_norm_([lazy], 1.0, error_if_nonfinite=True)


def test_clip_grad_value_clips_each_element():
    params, grads = parameters_with_grads(2.0)
    clip_grad_value_(params, 0.5)
    for p, g in zip(params, grads, strict=True):
        np.testing.assert_array_equal(p.grad.numpy(), np.clip(g, -0.5, 0.5))
    with pytest.raises(ValueError, match="clip_value must be 0 or more"):
        clip_grad_value_(params, -1.0)


def test_lazy_clipping_replays_its_recorded_ops_for_each_bound_and_order(monkeypatch):
    """A lazy step's clipping is recorded once per (gradient types, max_norm, norm_type) and
    replayed: the values follow each step's gradients, and another bound is another program."""
    from braze.runtime import metrics

    monkeypatch.setenv("BRAZE_BACKEND", "reference")
    metrics.reset()
    for seed, max_norm, norm_type in [(0, 1.0, 2.0), (1, 1.0, 2.0), (2, 0.5, 2.0), (3, 1.0, 1.0), (4, 1.0, 2.0)]:
        _, grads = parameters_with_grads(10.0, seed)
        params = [braze.tensor(np.zeros(g.shape), device=braze.LAZY_CPU, requires_grad=True) for g in grads]
        for p, g in zip(params, grads, strict=True):
            p.grad = braze.tensor(g, device=braze.LAZY_CPU)
        total = clip_grad_norm_(params, max_norm, norm_type)
        expected = np.linalg.norm([np.linalg.norm(g.reshape(-1), norm_type) for g in grads], norm_type)
        np.testing.assert_allclose(total.item(), expected, rtol=1e-12)
        for p, g in zip(params, grads, strict=True):
            np.testing.assert_allclose(p.grad.numpy(), g * min(1.0, max_norm / (expected + 1e-6)), rtol=1e-12)
    assert metrics.counter("ClipReplay") == 2  # the second and the last


def test_a_lazy_steps_bound_is_an_input_of_its_graph(monkeypatch):
    """A replayed clipping binds its program as one expression, but its bound stays an
    input of the step's graph, as the number is outside a replay: a schedule of bounds
    changes the graph's arguments, not the graph (NumPy's values each step)."""
    from braze import lazy

    monkeypatch.setenv("BRAZE_BACKEND", "reference")
    graphs = set()
    for seed, max_norm in enumerate([0.5, 0.5, 1.5, 2.5]):
        _, grads = parameters_with_grads(10.0, seed)
        params = [braze.tensor(np.zeros(g.shape), device=braze.LAZY_CPU, requires_grad=True) for g in grads]
        for p, g in zip(params, grads, strict=True):
            p.grad = braze.tensor(g, device=braze.LAZY_CPU)
        clip_grad_norm_(params, max_norm)
        trace = lazy.Trace(lazy.EXECUTOR.pending_roots(braze.LAZY_CPU))
        assert max_norm in [float(a) for a in trace.args if np.ndim(a) == 0]
        graphs.add(trace.graph)
        braze.barrier()
        total = np.linalg.norm([np.linalg.norm(g.reshape(-1)) for g in grads])
        for p, g in zip(params, grads, strict=True):
            np.testing.assert_allclose(p.grad.numpy(), g * min(1.0, max_norm / (total + 1e-6)), rtol=1e-12)
    assert len(graphs) == 1
