"""Every op of the op table through the native CPU backend, fused and unfused, against the
reference interpreter (float32 within 1e-5 relative, float64 within 1e-12, bfloat16 within
one unit of its 8th bit), and with it the gradient of every differentiable case (so every
VJP's kernels, the convolution transposes and the pooling gradients among them, run
natively too). All cases are
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


# (fusion, target, every loop parallel, dtypes). ``native`` runs every dtype fused and
# unfused, and its parallel code paths (one loop structure for every dtype) in float32.
# Each other x86-64 level, another vector width, runs fused only: the table's cases are
# single ops, so their unfused kernels are the fused ones, and the gradients' fused
# kernels are made of the same emitters.
DTYPES = tuple(TOLERANCE)
CONFIGURATIONS = [(True, "native", False, DTYPES), (False, "native", False, DTYPES)]
CONFIGURATIONS.append((True, "native", True, ("float32",)))
CONFIGURATIONS += [(True, target, False, DTYPES) for target in runnable_targets() if target != "native"]


@pytest.fixture(
    scope="module",
    params=CONFIGURATIONS,
    ids=[f"{'fused' if f else 'unfused'}-{t}{'-parallel' if p else ''}" for f, t, p, _ in CONFIGURATIONS],
)
def compiled(request, tmp_path_factory):
    """{(case name, dtype): (native outputs, reference outputs)} for the whole table in the
    configuration's dtypes, for one CPU target (every x86-64 level this host runs, and
    ``native``)."""
    fusion, target, parallel, dtypes = request.param
    cache = cpu.DiskCache(tmp_path_factory.mktemp("cache"))
    runs = [(case.name, dtype, traced(case, dtype)) for case in CASES for dtype in dtypes]
    runs += [(f"{case.name}.grad", dtype, traced_gradients(case, dtype)) for case in GRAD_CASES for dtype in dtypes]
    graphs = [cpu.optimize(t.graph, verify=True, fusion=fusion) for _, _, t in runs]
    thresholds = loops.PARALLEL_MIN_ELEMENTS, loops.PARALLEL_MIN_MACS
    if parallel:
        loops.PARALLEL_MIN_ELEMENTS = loops.PARALLEL_MIN_MACS = 0
    try:
        executables = cpu.compile_graphs(graphs, cache, target)
    finally:
        loops.PARALLEL_MIN_ELEMENTS, loops.PARALLEL_MIN_MACS = thresholds
    results = {
        (name, dtype): (native(t.args), evaluate(t.graph, t.args))
        for (name, dtype, t), native in zip(runs, executables, strict=True)
    }
    return results, dtypes


@pytest.mark.parametrize("dtype", list(TOLERANCE))
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_op_compiled_matches_reference(case, dtype, compiled):
    _assert_table_matches(compiled, case.name, dtype)


@pytest.mark.parametrize("dtype", list(TOLERANCE))
@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradient_compiled_matches_reference(case, dtype, compiled):
    _assert_table_matches(compiled, f"{case.name}.grad", dtype)


def _assert_table_matches(compiled, name, dtype):
    results, dtypes = compiled
    if dtype not in dtypes:
        pytest.skip(f"this configuration runs the table in {', '.join(dtypes)}")
    assert_matches(*results[(name, dtype)], TOLERANCE[dtype])


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
    assert_matches(native, evaluate(trace.graph, trace.args), TOLERANCE["float32"])


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
    assert_matches(native, evaluate(trace.graph, trace.args), TOLERANCE["float32"])
