"""Sibling reductions (of one input shape and axes, reading a common input) share one loop
nest on the CPU, each into its own accumulators: a batch norm's gradient sums; over every
axis configuration the reduction kernel has a path for (the periodic sum over all axes but
the last, inner, leading and middle axes), threads, both float types, every CPU target,
against the reference interpreter. The target-independent policy (the GPU's) keeps them
apart."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_targets import runnable_targets

import braze
from braze.backends import cpu
from braze.backends.cpu import loops
from braze.backends.reference.interpreter import evaluate
from braze.ir.primitive import Category
from braze.ir.prims.fusion import fusion
from braze.lazy import EXECUTOR, build_graph
from braze.passes import pipeline

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")

CASES = [((3, 5, 7, 6), (0, 1, 2)), ((4, 4, 4, 16), (0, 1, 2)), ((6, 9), (1,)), ((40, 7), (0,)), ((5, 6, 7), (1,))]


def sibling_sums(shape, axes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x, z, w = (braze.tensor(rng.standard_normal(shape).astype(dtype), device=braze.LAZY_CPU) for _ in range(3))
    dy = x * braze.sign(z)  # a ReLU gradient, as the step makes it
    results = [dy.sum(axis=axes), (dy * w).sum(axis=axes), (dy * w * w).max(axis=axes), (dy * z).sum(axis=axes)]
    traced = build_graph([r._value for r in results])
    EXECUTOR._live.clear()
    return traced


def reduction_roots(kernel):
    return [n for n in kernel.attr("computation").nodes() if n.op.category is Category.REDUCTION]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("shape", "axes"), CASES, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("target", [*runnable_targets(), "native-parallel"])
def test_sibling_sums_share_a_loop_and_agree_with_the_reference(shape, axes, dtype, target, tmp_path, monkeypatch):
    if target == "native-parallel":
        target = "native"
        monkeypatch.setattr(loops, "PARALLEL_MIN_ELEMENTS", 0)
    monkeypatch.setenv("BRAZE_CPU_TARGET", target)
    traced = sibling_sums(shape, axes, dtype, seed=sum(shape))
    graph = cpu.optimize(traced.graph)
    sums = [len(reduction_roots(k)) for k in graph.nodes() if k.op is fusion and reduction_roots(k)]
    assert sorted(sums) == [1, 3], "the three sums share one kernel; the max is a kernel of its own"
    wants = evaluate(traced.graph, traced.args)
    gots = cpu.compile_graph(graph, cpu.DiskCache(tmp_path))(traced.args)
    # Each sum adds at most prod(shape) terms of magnitude ~3 (products of normals).
    tolerance = (1e-6 if dtype == "float32" else 1e-13) * np.prod(shape)
    for want, got in zip(wants, gots, strict=True):
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)


def test_the_target_independent_policy_keeps_sibling_reductions_apart():
    traced = sibling_sums((4, 4, 4, 16), (0, 1, 2), "float32")
    optimized, _ = pipeline.run(traced.graph)
    assert all(len(reduction_roots(k)) <= 1 for k in optimized.nodes() if k.op is fusion)
