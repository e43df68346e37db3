"""Random valid graphs through the whole pipeline and the native backend agree with the
reference interpreter. Each batch of graphs is compiled as one shared library."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_targets import runnable_targets
from hypothesis import given
from hypothesis import strategies as st
from random_graphs import assert_matches_reference, compiled_batches, graphs

from braze.backends import cpu
from braze.ir.text import parse_graph

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")
TOLERANCE = {"float32": 1e-5, "float64": 1e-12, "bfloat16": 2**-7}  # bfloat16: one unit in its 8th bit


@pytest.mark.parametrize("target", runnable_targets())
@pytest.mark.parametrize("fusion", [True, False], ids=["fused", "unfused"])
@compiled_batches(4)
@given(batch=st.lists(graphs(), min_size=60, max_size=60))
def test_random_graphs_compiled_match_reference(batch, fusion, target, tmp_path_factory):
    optimized = [cpu.optimize(g, verify=True, fusion=fusion) for g in batch]
    executables = cpu.compile_graphs(optimized, cpu.DiskCache(tmp_path_factory.mktemp("cache")), target)
    for graph, native in zip(batch, executables, strict=True):
        assert_matches_reference(graph, native, TOLERANCE)


def test_a_kernel_reads_what_the_kernel_before_it_wrote(tmp_path):
    """Found by this test: with each kernel inlined into the entry function, GCC 12 at -O3
    moved the transpose's load of the slice's output ahead of the slice's store (their
    restrict pointers are the same buffer, one kernel after the other)."""
    graph = parse_graph(
        """graph(%0: f64[3,4]) {
  %1 = iota() {dimension=0, dtype=s32, shape=(3, 4)} : s32[3,4]
  %2 = convert(%1) {dtype=f64} : f64[3,4]
  %3 = add(%0, %2) : f64[3,4]
  %4 = transpose(%3) {permutation=(1, 0)} : f64[4,3]
  %5 = slice(%4) {limit_indices=(3, 2), start_indices=(0, 0), strides=(1, 1)} : f64[3,2]
  %6 = transpose(%5) {permutation=(1, 0)} : f64[2,3]
  %7 = convert(%0) {dtype=f32} : f32[3,4]
  %8 = convert(%7) {dtype=f64} : f64[3,4]
  return (%6, %8, %5)
}"""
    )
    x = np.arange(12, dtype=np.float64).reshape(3, 4) / 4
    optimized = cpu.optimize(graph, fusion=False)
    transposed, _, sliced = cpu.compile_graph(optimized, cpu.DiskCache(tmp_path))([x])
    expected = (x + np.arange(3)[:, None]).T[:3, :2]
    np.testing.assert_array_equal(sliced, expected)
    np.testing.assert_array_equal(transposed, expected.T)
