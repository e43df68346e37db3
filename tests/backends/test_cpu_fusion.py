"""The CPU's fusion hooks beside the target-independent policy: a reversal read by a sum
(which GCC 12 miscompiles when fused) and a pooling gradient's bias sum over more channels
than a thread's stack holds are refused only where the CPU compiles; either way the
optimized graph computes what the unoptimized one does."""

from __future__ import annotations

import numpy as np
import pytest
from random_graphs import random_args

import braze
from braze.backends import cpu
from braze.backends.cpu.fusion import MAX_SUMMED_CHANNELS
from braze.backends.reference.interpreter import evaluate
from braze.ir.prims.fusion import fusion
from braze.ir.prims.reductions import reduce_sum
from braze.ir.prims.structural import rev
from braze.ir.text import parse_graph
from braze.passes import pipeline

REVERSED_SUM = """
graph(%0: f32[4,6]) {
  %1 = rev(%0) {dimensions=(1,)} : f32[4,6]
  %2 = reduce_sum(%1) {axes=(1,)} : f32[4]
  return (%2)
}
"""

POOL_WINDOWS = "padding=((0, 0), (0, 0), (0, 0), (0, 0)), window_dimensions=(1, 2, 2, 1), window_strides=(1, 2, 2, 1)"


def pool_gradient_with_bias_sum(channels: int):
    return parse_graph(
        f"""graph(%0: f32[1,1,1,{channels}], %1: f32[1,2,2,{channels}]) {{
  %2 = select_and_scatter_add(%0, %1) {{{POOL_WINDOWS}}} : f32[1,2,2,{channels}]
  %3 = reduce_sum(%2) {{axes=(0, 1, 2)}} : f32[{channels}]
  return (%2, %3)
}}"""
    )


def _fusions(graph):
    return [n for n in graph.nodes() if n.op is fusion]


def _agrees(before, after):
    args = random_args(before)
    for want, got in zip(evaluate(before, args), evaluate(after, args), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_reversal_joins_a_sum_except_on_the_cpu():
    graph = parse_graph(REVERSED_SUM)
    anywhere = pipeline.run(graph, verify=True)[0]
    (kernel,) = _fusions(anywhere)
    assert any(n.op is rev for n in kernel.attr("computation").nodes())
    on_cpu = cpu.optimize(graph, verify=True)
    assert len(_fusions(on_cpu)) == 2
    assert any("reductions read reversed axes from memory" in note for note in on_cpu.notes), on_cpu.notes
    _agrees(graph, anywhere)
    _agrees(graph, on_cpu)


def _joins(optimized) -> bool:
    (kernel,) = [n for n in _fusions(optimized) if n.attr("kind") == "output"]
    return reduce_sum in {m.op for m in kernel.attr("computation").nodes()}


@pytest.mark.parametrize(("channels", "on_cpu"), [(MAX_SUMMED_CHANNELS, True), (MAX_SUMMED_CHANNELS + 1, False)])
def test_a_bias_sum_joins_a_cpu_pooling_gradient_only_while_its_sums_fit_a_stack(channels, on_cpu):
    """The CPU's pooling-gradient kernel keeps one double per channel on every thread's stack."""
    graph = pool_gradient_with_bias_sum(channels)
    assert _joins(pipeline.run(graph, verify=True)[0])  # the target-independent policy joins it
    optimized = cpu.optimize(graph, verify=True)
    assert _joins(optimized) == on_cpu
    _agrees(graph, optimized)


@pytest.mark.skipif(not cpu.available(), reason="no C compiler")
def test_the_cpu_compiles_what_its_hooks_left(tmp_path):
    graph = parse_graph(REVERSED_SUM)
    args = random_args(graph)
    (got,) = cpu.compile_graph(cpu.optimize(graph), cpu.DiskCache(tmp_path))(args)
    np.testing.assert_allclose(got, evaluate(graph, args)[0], rtol=1e-5)


def test_a_full_contraction_to_a_scalar_compiles_where_its_sum_could_be_an_epilogue():
    # The backward of a scalar contraction broadcast over a batch (keras-io's recommender:
    # ops.tensordot(users, movies, 2) plus per-row biases) offered the CPU policy an
    # epilogue sum on a 0-d result, which it indexed by its channels and crashed on.
    def loss(u, v, b):
        return braze.sigmoid(braze.tensordot(u, v, 2) + b).sum()

    rng = np.random.default_rng(0)
    arrays = [rng.normal(size=s).astype("float32") for s in ((4, 3), (4, 3), (4, 1))]
    compiled = braze.jit(braze.grad(loss, argnums=(0, 1, 2)))(*map(braze.tensor, arrays))
    eager = braze.grad(loss, argnums=(0, 1, 2))(*map(braze.tensor, arrays))
    for got, want in zip(compiled, eager, strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
