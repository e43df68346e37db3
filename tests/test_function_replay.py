"""Functions of tensors replayed on a lazy device (``braze.replay.replaying``): a later call
binds the first call's recorded ops straight, with gradient edges, and computes what the
function computes (eager runs, NumPy and float64 finite differences are the references),
tracing the same graph (the trace cache hits)."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze import ops
from braze.nn import functional as F
from braze.nn import softmax_cross_entropy
from braze.replay import replaying
from braze.runtime import metrics

LAZY = braze.LAZY_CPU


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setenv("BRAZE_BACKEND", "reference")
    metrics.reset()


def _attention_block(device, x_np, w_np, labels_np):
    """Layer norm, causal attention, GELU and cross-entropy: the transformer's replayed functions."""
    x = braze.tensor(x_np, device=device).requires_grad_()
    w = braze.tensor(w_np, device=device).requires_grad_()
    h = F.layer_norm(x, 8, weight=w, bias=w * 0.5)
    heads = h.reshape(2, 5, 2, 4).transpose(1, 2)
    y = F.scaled_dot_product_attention(heads, heads, heads, causal=True).transpose(1, 2).reshape(2, 5, 8)
    logits = F.gelu(y + h).reshape(10, 8)
    loss = softmax_cross_entropy(logits, braze.tensor(labels_np, device=device))
    loss.backward()
    return loss, x.grad, w.grad


def test_replayed_transformer_functions_compute_what_eager_does_and_reuse_the_graph():
    rng = np.random.default_rng(0)
    for _ in range(3):
        x_np = rng.normal(size=(2, 5, 8)).astype(np.float32)
        w_np = rng.normal(size=8).astype(np.float32)
        labels = rng.integers(0, 8, 10).astype(np.int32)
        lazy = _attention_block(LAZY, x_np, w_np, labels)
        braze.barrier()
        eager = _attention_block(braze.CPU, x_np, w_np, labels)
        for a, b in zip(lazy, eager, strict=True):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    assert metrics.counter("FunctionReplay") == 2 * 4  # layer norm, attention, GELU, cross-entropy
    assert metrics.counter("Compile") == 1, metrics.report()  # the replays build the first step's graph


@replaying
def _cut_in_two_ways(x, w):
    """``x`` cut from the gradient twice (a detach, a no_grad region) and used as is."""
    with braze.no_grad():
        shift = ops.max(x * w)
    return (x - shift) * w.detach() + x * w


def test_ops_cut_from_the_gradient_stay_cut_when_replayed():
    x_np, w_np = np.array([1.0, -2.0, 3.0], np.float32), np.array([0.5, 2.0, -1.0], np.float32)
    for _ in range(3):
        x = braze.tensor(x_np, device=LAZY).requires_grad_()
        w = braze.tensor(w_np, device=LAZY).requires_grad_()
        out = _cut_in_two_ways(x, w)
        out.sum().backward()
        shift = (x_np * w_np).max()
        np.testing.assert_allclose(out.numpy(), (x_np - shift) * w_np + x_np * w_np, rtol=1e-6)
        np.testing.assert_allclose(x.grad.numpy(), 2 * w_np, rtol=1e-6)
        np.testing.assert_allclose(w.grad.numpy(), x_np, rtol=1e-6)
    assert metrics.counter("FunctionReplay") == 2


def test_replayed_gradient_matches_float64_finite_differences():
    rng = np.random.default_rng(3)
    x_np, w_np = rng.normal(size=(3, 6)), rng.normal(size=6)

    def loss(x, w):
        return (F.layer_norm(x, 6, weight=w, bias=None) ** 3).sum()

    for _ in range(2):  # the second call replays
        x = braze.tensor(x_np, device=LAZY).requires_grad_()
        w = braze.tensor(w_np, device=LAZY).requires_grad_()
        loss(x, w).backward()
    assert metrics.counter("FunctionReplay") == 1
    eps = 1e-6
    numeric = np.zeros_like(x_np)
    for i in np.ndindex(x_np.shape):
        up, down = x_np.copy(), x_np.copy()
        up[i] += eps
        down[i] -= eps
        w = braze.tensor(w_np)
        numeric[i] = (loss(braze.tensor(up), w).item() - loss(braze.tensor(down), w).item()) / (2 * eps)
    np.testing.assert_allclose(x.grad.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_arguments_other_than_tensors_key_the_program():
    x_np = np.array([[1.0, 2.0, 4.0]], np.float32)
    for eps in (1e-5, 1.0, 1e-5, 1.0):
        x = braze.tensor(x_np, device=LAZY)
        centered = x_np - x_np.mean()
        expected = centered / np.sqrt((centered**2).mean() + eps)
        np.testing.assert_allclose(F.layer_norm(x, 3, eps=eps).numpy(), expected, rtol=1e-5)
    assert metrics.counter("FunctionReplay") == 2


def test_a_function_reading_another_tensor_runs_every_time():
    outside = {"t": None}

    @replaying
    def scaled(x):
        return x * outside["t"]

    x = braze.tensor(np.array([1.0, 2.0], np.float32), device=LAZY)
    for factor in (2.0, 3.0, 5.0):
        outside["t"] = braze.tensor(np.full(2, factor, np.float32), device=LAZY)
        np.testing.assert_allclose(scaled(x).numpy(), [factor, 2 * factor])
    assert metrics.counter("FunctionReplay") == 0


def test_a_leaf_made_inside_the_function_is_not_replayed():
    @replaying
    def with_own_leaf(x):
        own = (x * 2.0).detach().requires_grad_()
        return own * x, own

    made = []

    @replaying
    def product(x):
        result, own = with_own_leaf(x)
        made.append(own)
        return result

    for _ in range(2):
        x = braze.tensor(np.array([1.0, 3.0], np.float32), device=LAZY).requires_grad_()
        product(x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [2.0, 6.0])
        np.testing.assert_allclose(made[-1].grad.numpy(), [1.0, 3.0])
    assert metrics.counter("FunctionReplay") == 0


def test_attention_with_dropout_draws_a_new_mask_every_call():
    q = braze.tensor(np.ones((1, 1, 16, 4), np.float32), device=LAZY)
    v = braze.tensor(np.arange(64, dtype=np.float32).reshape(1, 1, 16, 4), device=LAZY)
    outs = [F.scaled_dot_product_attention(q, q, v, dropout_p=0.5).numpy() for _ in range(3)]
    assert not np.array_equal(outs[0], outs[1]) and not np.array_equal(outs[1], outs[2])
    assert metrics.counter("FunctionReplay") == 0


def test_a_replay_inside_a_recording_is_recorded_by_it():
    @replaying
    def doubled(x):
        return x * 2.0 + 1.0

    calls = []

    def inner(x):
        calls.append(x)
        return doubled(x)

    @replaying
    def outer(x):
        return inner(x) * x

    for k, function in enumerate((inner, outer, outer, outer)):
        values = np.array([1.0, -2.0, 0.5], np.float32) + k
        result = function(braze.tensor(values, device=LAZY)).numpy()
        expected = 2 * values + 1 if function is inner else (2 * values + 1) * values
        np.testing.assert_allclose(result, expected, rtol=1e-6)
    # The inner function replays within the outer one's recording, which notes its ops:
    # the outer function replays them too, without calling it.
    assert len(calls) == 2
    assert metrics.counter("FunctionReplay") == 3


def test_numbers_of_other_types_are_other_programs():
    @replaying
    def plus(x, c):
        return x + c

    x = braze.tensor(np.array([1, 2], np.int32), device=LAZY)
    for c in (1, 1.0, 1, 1.0):
        found = plus(x, c)
        assert found.dtype == (braze.int32 if type(c) is int else braze.float32)
        np.testing.assert_array_equal(found.numpy(), [2, 3])
    assert metrics.counter("FunctionReplay") == 2
