"""Row kernels (a layer norm, a softmax and their gradients as one loop over each row) agree
with the reference interpreter: random graphs of reductions over the last axis and their
per-row readers, compiled as one library; and the GPT's layer norms and softmaxes each
become one kernel."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from random_graphs import assert_matches_reference, compiled_batches
from row_graphs import row_graphs

import braze
from braze import lazy
from braze.backends import cpu
from braze.ir.prims.fusion import fusion

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")
TOLERANCE = {"float32": 1e-5, "float64": 1e-12}


def _kinds(graph) -> list[str]:
    return [n.attr("kind") for n in graph.nodes() if n.op is fusion]


@compiled_batches(2)
@given(batch=st.lists(row_graphs(), min_size=40, max_size=40))
def test_random_row_graphs_compiled_match_reference(batch, tmp_path_factory):
    optimized = [cpu.optimize(g, verify=True) for g in batch]
    assert sum("row" in _kinds(g) for g in optimized) >= len(batch) // 2, "few graphs made row kernels"
    executables = cpu.compile_graphs(optimized, cpu.DiskCache(tmp_path_factory.mktemp("cache")))
    for graph, native in zip(batch, executables, strict=True):
        assert_matches_reference(graph, native, TOLERANCE)


def _layer_norm_operands() -> tuple[braze.Tensor, braze.Tensor]:
    """Six rows of 32 values and a weight, on the lazy CPU."""
    rng = np.random.default_rng(0)
    x = braze.tensor(rng.standard_normal((6, 32)).astype(np.float32), device=braze.LAZY_CPU)
    w = braze.tensor(rng.standard_normal(32).astype(np.float32), device=braze.LAZY_CPU)
    return x, w


def test_layer_norm_and_its_gradient_are_one_kernel_each():
    """Forward: mean, variance and normalization; backward: the input gradient's two row
    sums and its elementwise tail (the weight and bias gradients sum over the other axis)."""
    x, w = _layer_norm_operands()

    def loss(x):
        return (braze.nn.functional.layer_norm(x, 32, w) * w).sum()

    for value in (braze.nn.functional.layer_norm(x, 32, w), braze.grad(loss)(x)):
        graph = cpu.optimize(lazy.build_graph([value._value]).graph)
        assert _kinds(graph) == ["row"], _kinds(graph)
    lazy.EXECUTOR._live.clear()


def test_a_layer_norms_row_constants_are_computed_before_its_last_loop():
    """1 / sqrt(var + eps) is the same all along a row: computed in the last loop, GCC
    evaluated it at every element (the loop's scalars might have changed under its stores,
    to its knowledge) and left the loop unvectorized."""
    x, w = _layer_norm_operands()
    normed = braze.nn.functional.layer_norm(x, 32, w)
    graph = cpu.optimize(lazy.build_graph([normed._value]).graph)
    (kernel,) = cpu.compile_graph(graph).plan.kernel_sources
    before, last_loop = kernel.rsplit("#pragma omp simd", 1)
    assert "sqrt" in before and "sqrt" not in last_loop, kernel
    lazy.EXECUTOR._live.clear()


def test_a_softmax_without_gradient_computes_each_exponential_once():
    """Under no_grad the exponentials are no result of the kernel: kept in an array of the
    row as its sum's pass computes them, and read back by the pass that divides, not
    computed again (an exp costs more than a load)."""
    rng = np.random.default_rng(1)
    data = (3 * rng.standard_normal((5, 40))).astype(np.float32)  # rows of two vectors and a remainder
    with braze.no_grad():
        probabilities = braze.softmax(braze.tensor(data, device=braze.LAZY_CPU), axis=-1)
    graph = cpu.optimize(lazy.build_graph([probabilities._value]).graph)
    assert _kinds(graph) == ["row"], _kinds(graph)
    (kernel,) = cpu.compile_graph(graph).plan.kernel_sources
    before, last_loop = kernel.rsplit("#pragma omp simd", 1)
    assert "expf(" in before and "expf(" not in last_loop and "kept" in last_loop, kernel
    shifted = data.astype(np.float64) - data.max(-1, keepdims=True)
    expected = np.exp(shifted) / np.exp(shifted).sum(-1, keepdims=True)
    np.testing.assert_allclose(probabilities.numpy(), expected, rtol=TOLERANCE["float32"], atol=1e-7)
    lazy.EXECUTOR._live.clear()
