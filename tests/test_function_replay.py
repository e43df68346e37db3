"""Functions of tensors replayed on a lazy device (``braze.function_replay.replaying``): a
call binds the first call's recorded ops as one expression with one gradient record, and
computes what the function computes, gradients and second derivatives included (eager
runs, NumPy and float64 finite differences are the references), tracing the same graph
(the trace cache hits)."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze import ops
from braze.function_replay import replaying
from braze.nn import functional as F
from braze.nn import softmax_cross_entropy
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


@replaying
def _scaled_norm(x, w):
    """A layer norm times ``w``, plus ``x`` cubed: ops whose rules read inputs, outputs and
    intermediate values."""
    return F.layer_norm(x, x.shape[-1], weight=w, bias=None) * w + x**3


def _second_derivative(device, x_np, w_np, v_np, computed):
    x = braze.tensor(x_np, device=device).requires_grad_()
    w = braze.tensor(w_np, device=device).requires_grad_()
    # The call's argument a leaf, or computed from the leaves by other ops.
    argument = x * ops.abs(w) + 0.5 if computed else x
    (gx,) = braze.autograd.grad((_scaled_norm(argument, w) ** 2).sum(), x, create_graph=True)
    (gx * braze.tensor(v_np, device=device)).sum().backward()
    return gx, x.grad, w.grad


@pytest.mark.parametrize("computed", [False, True], ids=["leaf", "computed"])
def test_second_derivatives_through_a_replayed_call_match_eager_ones(computed):
    """A differentiable backward through the call's one gradient record builds the graph of
    its ops' rules, which a second backward differentiates to the leaves, through the ops
    that computed the call's argument too."""
    rng = np.random.default_rng(5)
    for _ in range(3):
        x_np, v_np = rng.normal(size=(2, 4, 6)).astype(np.float32), rng.normal(size=(2, 4, 6)).astype(np.float32)
        w_np = rng.normal(size=6).astype(np.float32)
        lazy = _second_derivative(LAZY, x_np, w_np, v_np, computed)
        eager = _second_derivative(braze.CPU, x_np, w_np, v_np, computed)
        for a, b in zip(lazy, eager, strict=True):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)
    assert metrics.counter("FunctionReplay") >= 2  # all three calls when the other case recorded the key


def test_an_argument_given_twice_gets_its_gradient_once():
    @replaying
    def product_plus(a, b):
        return a * b + a

    x_np = np.array([1.5, -2.0, 0.25], np.float32)
    for _ in range(3):
        x = braze.tensor(x_np, device=LAZY).requires_grad_()
        product_plus(x, x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), 2 * x_np + 1, rtol=1e-6)
        # In a differentiable backward both arguments are the leaf itself.
        x = braze.tensor(x_np, device=LAZY).requires_grad_()
        (gx,) = braze.autograd.grad(product_plus(x, x).sum(), x, create_graph=True)
        np.testing.assert_allclose(gx.numpy(), 2 * x_np + 1, rtol=1e-6)
        gx.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.full(3, 2.0), rtol=1e-6)
    assert metrics.counter("FunctionReplay") == 5  # six calls with one key: the first records


def test_gradients_of_some_arguments_and_of_none():
    """Gradients asked for one argument, an argument that takes none, and a call under
    no_grad (one expression without a gradient record) each agree with NumPy."""
    rng = np.random.default_rng(7)
    for _ in range(3):
        x_np, w_np = rng.normal(size=(3, 5)).astype(np.float32), rng.normal(size=5).astype(np.float32)
        x = braze.tensor(x_np, device=LAZY).requires_grad_()
        w = braze.tensor(w_np, device=LAZY).requires_grad_()
        frozen = braze.tensor(w_np, device=LAZY)
        (gw,) = braze.autograd.grad(_scaled_norm(x, w).sum(), w)
        _scaled_norm(x, frozen).sum().backward()
        with braze.no_grad():
            plain = _scaled_norm(x, w)
        centered = x_np - x_np.mean(-1, keepdims=True)
        normed = centered / np.sqrt((centered**2).mean(-1, keepdims=True) + 1e-5)
        np.testing.assert_allclose(plain.numpy(), normed * w_np * w_np + x_np**3, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(gw.numpy(), (normed * 2 * w_np).sum(0), rtol=1e-4, atol=1e-5)
        # d/dx of sum(layer_norm(x) * w * w + x**3), with w fixed: the layer norm's rule, plus 3x^2.
        u = w_np * w_np
        n = x_np.shape[-1]
        inverse = 1 / np.sqrt((centered**2).mean(-1, keepdims=True) + 1e-5)
        expected = inverse * (u - u.mean() - normed * (u * normed).sum(-1, keepdims=True) / n) + 3 * x_np**2
        np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-4, atol=1e-5)
        assert frozen.grad is None and w.grad is None  # autograd.grad leaves .grad alone
    assert metrics.counter("FunctionReplay") == 2 * 3


def _on_both(run):
    """``run(device)`` on the lazy device and eagerly."""
    return run(LAZY), run(braze.CPU)


def test_two_tensors_of_one_value_keep_their_own_gradients():
    """``q`` beside ``q.detach()``, or beside another leaf made from its value: a recording
    sees one value, so such a call runs its Python, and each gets the gradient it has."""

    @replaying
    def weighted(a, b):
        return a * 2.0 + b * 3.0

    values = np.array([1.0, -2.0], np.float32)
    for _ in range(3):

        def run(device):
            a = braze.tensor(values, device=device).requires_grad_()
            b = a.detach().requires_grad_()
            weighted(a, b).sum().backward()
            c = braze.tensor(values, device=device).requires_grad_()
            weighted(c, c.detach()).sum().backward()
            return a.grad.numpy(), b.grad.numpy(), c.grad.numpy()

        for got, want in zip(*_on_both(run), strict=True):
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(want, [2.0, 2.0])
    assert metrics.counter("FunctionReplay") == 0


def test_a_result_detached_inside_the_function_takes_no_gradient():
    @replaying
    def detached(x):
        return (x * 2.0).detach()

    @replaying
    def argument(x, y):
        return y.detach()

    for _ in range(3):
        x = braze.tensor(np.array([1.0, 2.0], np.float32), device=LAZY).requires_grad_()
        y = x * 3.0
        assert not detached(x).requires_grad and not argument(x, y).requires_grad
        np.testing.assert_array_equal(argument(x, y).numpy(), [3.0, 6.0])
    assert metrics.counter("FunctionReplay") == 2 + 5  # the later calls of 3 and of 6


def test_an_argument_read_only_through_detach_is_no_gradient_parent():
    """``w`` enters only as ``w.detach()``: the gradient of ``x`` depends on nothing that
    takes gradients, as eagerly, so ``grad`` records no differentiable backward."""

    @replaying
    def scaled(x, w):
        return x * w.detach() + x * x

    for _ in range(3):

        def run(device):
            w = braze.tensor(np.array([0.5, -1.0], np.float32), device=device).requires_grad_()
            gx = braze.grad(lambda x: scaled(x, w).sum())(braze.tensor(np.array([1.0, 2.0], np.float32), device=device))
            return gx.requires_grad, gx.numpy()

        (lazy_takes, lazy), (eager_takes, eager) = _on_both(run)
        assert lazy_takes is eager_takes is False
        np.testing.assert_array_equal(lazy, eager)


def test_a_replayed_result_can_be_deep_copied():
    import copy

    for _ in range(2):
        x = braze.tensor(np.array([0.5, -1.5], np.float32), device=LAZY).requires_grad_()
        y = F.gelu(x * 2.0)
        copied = copy.deepcopy(y)
        np.testing.assert_array_equal(copied.numpy(), y.numpy())


def test_a_first_call_inside_a_loop_body_leaves_later_calls_their_gradients():
    """A loop body's binds see stand-ins for the tensors it captured, which take no
    gradients: a first call there records nothing for the calls after the loop."""
    rng = np.random.default_rng(11)
    xs_np, w_np = rng.normal(size=(3, 5, 4)).astype(np.float32), rng.normal(size=4).astype(np.float32)

    def run(device):
        w = braze.tensor(w_np, device=device).requires_grad_()
        xs = braze.tensor(xs_np, device=device)

        def body(carry, x):
            return carry + F.layer_norm(x, 4, weight=w).sum(), None

        total, _ = braze.lax.scan(body, braze.tensor(np.float32(0.0), device=device), xs)
        (total + (F.layer_norm(xs[0], 4, weight=w) ** 2).sum() + F.gelu(w).sum()).backward()
        return w.grad.numpy()

    lazy, eager = _on_both(run)
    np.testing.assert_allclose(lazy, eager, rtol=1e-5, atol=1e-5)


def test_minus_zero_is_another_program():
    @replaying
    def scaled(x, c):
        return 1.0 / (x * c)

    x = braze.tensor(np.array([1.0, 2.0], np.float32), device=LAZY)
    for c in (0.0, -0.0, 0.0, -0.0):
        expected = np.copysign(np.full(2, np.inf, np.float32), c)  # 1 / (x * c), x positive
        np.testing.assert_array_equal(scaled(x, c).numpy(), expected)
    assert metrics.counter("FunctionReplay") == 2
