"""braze.lax loops: values against NumPy loops in every mode (eager's Python loop, the lazy
device's loop node, jit), the reference interpreter against the CPU backend on the loop's
graph, gradients and second derivatives against float64 finite differences, clear errors
for bad input, and a graph whose size does not grow with the number of steps."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import Runner, check_grads

import braze
from braze import lax, lazy
from braze.backends import cpu
from braze.backends.reference import evaluate
from braze.ir.errors import ShapeError
from braze.ir.graph import schedule
from braze.ir.text import parse_graph, print_graph

RNG = np.random.default_rng(7)
W = (RNG.standard_normal((3, 3)) * 0.5).astype(np.float32)
XS = RNG.standard_normal((6, 2, 3)).astype(np.float32)
H0 = RNG.standard_normal((2, 3)).astype(np.float32)


def rnn(h0, xs, w, reverse=False):
    """A tanh RNN as a scan with a dict carry and a pair of per-step outputs."""

    def step(carry, x):
        h = braze.tanh(carry["h"] @ w + x)
        return {"h": h, "n": carry["n"] + 1}, (h * 2.0, h.sum(axis=1))

    init = {"h": h0, "n": braze.zeros((), dtype=braze.int32, device=h0.device)}
    final, (ys, sums) = lax.scan(step, init, xs, reverse=reverse)
    return final["h"], final["n"], ys, sums


def rnn_reference(h0, xs, w, reverse=False):
    h, ys, sums = h0, [None] * len(xs), [None] * len(xs)
    for i in reversed(range(len(xs))) if reverse else range(len(xs)):
        h = np.tanh(h @ w + xs[i])
        ys[i], sums[i] = h * 2.0, h.sum(axis=1)
    return h, len(xs), np.stack(ys), np.stack(sums)


MODES = ["eager", "lazy", "jit"]


def run(fn, mode, *arrays):
    device = braze.LAZY_CPU if mode == "lazy" else braze.CPU
    tensors = [braze.tensor(a, device=device) for a in arrays]
    results = braze.jit(fn)(*tensors) if mode == "jit" else fn(*tensors)
    return [np.asarray(r.numpy()) for r in (results if isinstance(results, (tuple, list)) else [results])]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("mode", MODES)
def test_scan_matches_a_numpy_loop(mode, reverse):
    got = run(lambda h, x, w: rnn(h, x, w, reverse), mode, H0, XS, W)
    for value, expected in zip(got, rnn_reference(H0, XS, W, reverse), strict=True):
        np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_fori_loop_and_while_loop_match_numpy(mode):
    def fn(x):
        powered = lax.fori_loop(1, 4, lambda i, v: v * 0.5 + braze.astype(i, braze.float32), x)
        count, halved = lax.while_loop(
            lambda s: s[1].sum() > 1.0, lambda s: (s[0] + 1, s[1] * 0.5), (braze.tensor(0, device=x.device), x)
        )
        return powered, count, halved

    x = np.abs(H0) + 1.0
    expected_powered = x
    for i in range(1, 4):
        expected_powered = expected_powered * 0.5 + i
    count, halved = 0, x
    while halved.sum() > 1.0:
        count, halved = count + 1, halved * 0.5
    powered, got_count, got_halved = run(fn, mode, x)
    np.testing.assert_allclose(powered, expected_powered, rtol=1e-6)
    assert int(got_count) == count
    np.testing.assert_allclose(got_halved, halved, rtol=1e-6)


def test_scan_with_length_and_no_xs_and_an_empty_scan():
    for device in (braze.CPU, braze.LAZY_CPU):
        x = braze.tensor(H0, device=device)
        final, ys = lax.scan(lambda c, _: (c * 2.0, c), x, length=3)
        np.testing.assert_allclose(final.numpy(), H0 * 8, rtol=1e-6)
        np.testing.assert_allclose(ys.numpy(), np.stack([H0, H0 * 2, H0 * 4]), rtol=1e-6)
        final, ys = lax.scan(lambda c, x: (c + x, (c * x, x.sum())), x, braze.tensor(XS[:0], device=device))
        np.testing.assert_allclose(final.numpy(), H0)
        assert [y.shape for y in ys] == [(0, 2, 3), (0,)]


def test_the_reference_interpreter_and_the_cpu_backend_agree_on_loop_graphs(tmp_path, monkeypatch):
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path))

    def fn(h, x, w):
        hn, _, ys, sums = rnn(h, x, w)
        fin = lax.fori_loop(0, 3, lambda i, v: braze.sin(v) @ w, hn)
        # A body returning its input, one value twice and a constant: each copied where it goes.
        (same, doubled), (kept, twice, again, ones) = lax.scan(
            lambda c, x: ((c[0], c[1] * 2.0), (c[0], c[1] * 2.0, c[1] * 2.0, braze.ones((3,), device=x.device))),
            (hn, hn),
            x,
        )
        sums = sums + same.sum() + doubled.sum() + kept.sum() + twice.sum() + again.sum() + ones.sum()
        _, halved = lax.while_loop(
            lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * s[1]), (braze.zeros((), braze.int32, ys.device), ys)
        )
        return fin, halved, sums

    graph = lazy.trace(fn, braze.tensor(H0), braze.tensor(XS), braze.tensor(W))
    assert parse_graph(print_graph(graph)).same_structure(graph)  # the text form holds the bodies
    expected = evaluate(graph, [H0, XS, W])
    for fusion in (True, False):
        got = cpu.compile_graph(cpu.optimize(graph, verify=True, fusion=fusion))([H0, XS, W])
        for value, want in zip(got, expected, strict=True):
            np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["lazy", "jit"])
def test_scan_and_fori_loop_gradients_to_second_order_match_finite_differences(mode, monkeypatch):
    monkeypatch.setenv("BRAZE_BACKEND", "reference")  # the loop nodes' rules, in float64

    def fn(fixed, operands):
        h0, xs, w = operands
        final, _, ys, sums = rnn(h0, xs, w, reverse=True)
        looped = lax.fori_loop(0, 2, lambda i, v: braze.sin(v) * w[0], final)
        return looped, ys, sums

    arrays = [H0.astype(np.float64), XS[:3].astype(np.float64), W.astype(np.float64)]
    check_grads(fn, [], arrays, order=2, modes=("fwd", "rev"), run=Runner(mode))


def test_scan_gradients_on_native_code_match_finite_differences():
    def fn(fixed, operands):
        _, _, ys, sums = rnn(*operands)
        return ys, sums

    arrays = [H0.astype(np.float64), XS.astype(np.float64), W.astype(np.float64)]
    check_grads(fn, [], arrays, order=1, modes=("rev",), run=Runner("lazy"))


def test_gradients_through_a_while_loop_say_to_use_fori_loop_or_scan():
    x = braze.tensor(H0, device=braze.LAZY_CPU, requires_grad=True)
    _, y = lax.while_loop(lambda s: s[0] < 2, lambda s: (s[0] + 1, s[1] * s[1]), (braze.tensor(0, device=x.device), x))
    with pytest.raises(NotImplementedError, match="fori_loop.*scan"):
        y.sum().backward()


@pytest.mark.parametrize("device", [braze.CPU, braze.LAZY_CPU], ids=["eager", "lazy"])
def test_bad_loops_fail_with_clear_errors(device):
    h, xs = braze.tensor(H0, device=device), braze.tensor(XS, device=device)
    with pytest.raises(ShapeError, match="turns carry 0 from f32\\[2,3\\] into f32\\[2\\]"):
        lax.scan(lambda c, x: (c.sum(axis=1), None), h, xs)
    with pytest.raises(ShapeError, match="turns carry 0 from f32\\[2,3\\] into f64\\[2,3\\]"):
        lax.scan(lambda c, x: (braze.astype(c, braze.float64), None), h, xs)
    with pytest.raises(TypeError, match="structure"):
        lax.scan(lambda c, x: ((c, c), None), h, xs)
    with pytest.raises(ShapeError, match="different leading lengths \\[5, 6\\]"):
        lax.scan(lambda c, x: (c, None), h, (xs, xs[:5]))
    with pytest.raises(TypeError, match="f must be a callable"):
        lax.scan(None, h, xs)
    with pytest.raises(TypeError, match="body_fun must be a callable"):
        lax.fori_loop(0, 3, 1.0, h)
    with pytest.raises(TypeError, match="pair \\(carry, y\\)"):
        lax.scan(lambda c, x: c, h, xs)


def _lstm_graph_sizes(steps: int) -> tuple[int, int, int]:
    """The optimized graph's nodes and kernels, and the C functions, of an LSTM training
    step over ``steps`` time steps in the scan form."""
    rng = np.random.default_rng(0)
    weights = [braze.tensor(rng.standard_normal(s).astype(np.float32) * 0.1) for s in [(4, 32), (8, 32), (32,)]]
    xs = braze.tensor(rng.standard_normal((steps, 2, 4)).astype(np.float32))

    def loss(w_x, w_h, b, xs):
        def cell(carry, x):
            h, c = carry
            i, f, g, o = braze.chunk(x @ w_x + h @ w_h + b, 4, dim=1)
            c = braze.sigmoid(f) * c + braze.sigmoid(i) * braze.tanh(g)
            h = braze.sigmoid(o) * braze.tanh(c)
            return (h, c), h

        zeros = braze.zeros((2, 8), device=xs.device)
        _, hs = lax.scan(cell, (zeros, zeros), xs)
        return (hs * hs).mean()

    graph = lazy.trace(lambda *a: braze.grad(loss, argnums=(0, 1, 2))(*a), *weights, xs)
    optimized = cpu.optimize(graph)
    executable = cpu.compile_graph(optimized)
    loops = [n for k in schedule(optimized) for n in k.attr("computation").nodes() if n.op.name == "scan"]
    assert len(loops) == 2  # the forward scan recording its carries, and the backward scan
    return len(optimized.nodes()), len(schedule(optimized)), len(executable.plan.kernel_sources)


def test_an_lstm_scan_compiles_to_the_same_graph_and_code_for_10_and_60_steps(tmp_path, monkeypatch):
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path))
    assert _lstm_graph_sizes(10) == _lstm_graph_sizes(60)


@pytest.mark.parametrize("mode", ["lazy", "jit"])
def test_a_scan_inside_a_scan_and_its_gradient_match_eager(mode):
    def fn(xs):
        def outer(c, row):
            inner, ys = lax.scan(lambda d, v: (braze.sin(d * v + 0.5), d * v), c, row)
            return inner, ys.sum(axis=0)

        final, ys = lax.scan(outer, braze.zeros((2,), device=xs.device) + 0.3, xs)
        return (ys * ys).sum() + final.sum()

    xs = XS[:, :, :2]
    gradient = braze.grad(fn)
    expected = [np.asarray(fn(braze.tensor(xs)).numpy()), np.asarray(gradient(braze.tensor(xs)).numpy())]
    got = run(lambda x: (fn(x), gradient(x)), mode, xs)
    for value, want in zip(got, expected, strict=True):
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_fori_loop_with_tensor_bounds_is_a_while_loop(mode):
    def fn(x, n):
        return lax.fori_loop(braze.zeros((), braze.int32, x.device), n, lambda i, v: v * 2.0 + 1.0, x)

    (got,) = run(fn, mode, H0, np.array(3, np.int32))
    np.testing.assert_allclose(got, ((H0 * 2 + 1) * 2 + 1) * 2 + 1, rtol=1e-6)
