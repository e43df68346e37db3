"""Every op of the op table through the native CPU backend, fused and unfused, against the
reference interpreter (float32 within 1e-5 relative, float64 within 1e-12), and with it
the gradient of every differentiable case (so every VJP's kernels, the convolution
transposes and the pooling gradients among them, run natively too). All cases are
compiled into one shared library per configuration, so the whole table costs a few
compiler runs."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_targets import runnable_targets
from op_cases import CASES
from op_graphs import TOLERANCE, assert_matches, traced, traced_gradients

import braze
from braze.backends import cpu
from braze.backends.cpu import loops
from braze.backends.reference.interpreter import evaluate
from braze.lazy import EXECUTOR, build_graph

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")


GRAD_CASES = [c for c in CASES if c.grad]


# (fusion, target, every loop parallel): kernels small enough to run on one thread also
# run their parallel code paths once.
CONFIGURATIONS = [(fusion, target, False) for target in runnable_targets() for fusion in (True, False)]
CONFIGURATIONS.append((True, "native", True))


@pytest.fixture(
    scope="module",
    params=CONFIGURATIONS,
    ids=[f"{'fused' if f else 'unfused'}-{t}{'-parallel' if p else ''}" for f, t, p in CONFIGURATIONS],
)
def compiled(request, tmp_path_factory):
    """{(case name, dtype): (native outputs, reference outputs)} for the whole table, for one
    CPU target (every x86-64 level this host runs, and ``native``)."""
    fusion, target, parallel = request.param
    cache = cpu.DiskCache(tmp_path_factory.mktemp("cache"))
    runs = [(case.name, dtype, traced(case, dtype)) for case in CASES for dtype in TOLERANCE]
    runs += [(f"{case.name}.grad", dtype, traced_gradients(case, dtype)) for case in GRAD_CASES for dtype in TOLERANCE]
    graphs = [cpu.optimize(t.graph, verify=True, fusion=fusion) for _, _, t in runs]
    thresholds = loops.PARALLEL_MIN_ELEMENTS, loops.PARALLEL_MIN_MACS
    if parallel:
        loops.PARALLEL_MIN_ELEMENTS = loops.PARALLEL_MIN_MACS = 0
    try:
        executables = cpu.compile_graphs(graphs, cache, target)
    finally:
        loops.PARALLEL_MIN_ELEMENTS, loops.PARALLEL_MIN_MACS = thresholds
    return {
        (name, dtype): (native(t.args), evaluate(t.graph, t.args))
        for (name, dtype, t), native in zip(runs, executables, strict=True)
    }


@pytest.mark.parametrize("dtype", list(TOLERANCE))
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_op_compiled_matches_reference(case, dtype, compiled):
    _assert_matches(*compiled[(case.name, dtype)], dtype)


@pytest.mark.parametrize("dtype", list(TOLERANCE))
@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradient_compiled_matches_reference(case, dtype, compiled):
    _assert_matches(*compiled[(f"{case.name}.grad", dtype)], dtype)


def _assert_matches(got, expected, dtype):
    assert_matches(got, expected, TOLERANCE[dtype])


@pytest.mark.parametrize("height", [9, 10], ids=["ragged_pool", "tiled_pool_with_epilogue"])
def test_results_written_past_the_cache_match_the_reference(height, monkeypatch, tmp_path):
    """Results over loops.streams' threshold are stored with non-temporal stores; here every
    convolution and pooling gradient is, and the convolution's result stays inside the
    graph (an aligned arena buffer, which the non-temporal path needs)."""
    monkeypatch.setattr(loops, "STREAM_CACHE_MULTIPLE", 0)
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (2, height, 12, 3)).astype(np.float32)
    w = rng.uniform(-1, 1, (3, 3, 3, 32)).astype(np.float32)

    def pooled_loss(x, w):
        return braze.max_pool2d(braze.relu(braze.conv2d(x, w)), 2).sum()

    tensors = [braze.tensor(a, device=braze.LAZY_CPU, requires_grad=True) for a in (x, w)]
    loss = pooled_loss(*tensors)
    loss.backward()
    trace = build_graph([loss._value, *(t.grad._value for t in tensors)])
    EXECUTOR._live.clear()
    graph = cpu.optimize(trace.graph, verify=True)
    native = cpu.compile_graph(graph, cpu.DiskCache(tmp_path))(trace.args)
    _assert_matches(native, evaluate(trace.graph, trace.args), "float32")


@pytest.mark.parametrize("streamed", [False, True], ids=["stored", "streamed"])
@pytest.mark.parametrize("channels", [16, 5])
def test_a_pooling_gradient_sums_the_bias_gradient_in_its_kernel(streamed, channels, monkeypatch, tmp_path):
    """A conv layer's bias gradient (the sum over every axis but the channels of the pooling
    gradient's relu-masked result) is a second result of the pooling gradient's kernel, with
    per-thread double sums, and matches the reference with every kernel parallel."""
    if streamed:
        monkeypatch.setattr(loops, "STREAM_CACHE_MULTIPLE", 0)
    monkeypatch.setattr(loops, "PARALLEL_MIN_ELEMENTS", 0)
    rng = np.random.default_rng(channels)
    x = rng.uniform(-1, 1, (3, 10, 12, 3)).astype(np.float32)
    w = rng.uniform(-1, 1, (3, 3, 3, channels)).astype(np.float32)
    b = rng.uniform(-1, 1, (channels,)).astype(np.float32)

    def pooled_loss(x, w, b):
        return (braze.max_pool2d(braze.relu(braze.conv2d(x, w) + b), 2) ** 2).sum()

    tensors = [braze.tensor(a, device=braze.LAZY_CPU, requires_grad=True) for a in (x, w, b)]
    loss = pooled_loss(*tensors)
    loss.backward()
    trace = build_graph([loss._value, *(t.grad._value for t in tensors)])
    EXECUTOR._live.clear()
    graph = cpu.optimize(trace.graph, verify=True)
    kernels = [n.attr("computation") for n in graph.nodes() if n.op.name == "fusion"]
    assert any(
        {"select_and_scatter_add", "reduce_sum"} <= {m.op.name for m in k.nodes()} and len(k.outputs) == 2
        for k in kernels
    )
    native = cpu.compile_graph(graph, cpu.DiskCache(tmp_path))(trace.args)
    _assert_matches(native, evaluate(trace.graph, trace.args), "float32")
