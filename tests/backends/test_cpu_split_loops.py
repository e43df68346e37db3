"""A loop kernel whose pads and concatenates change operand along the last axis runs one
innermost loop per range between the changes (the branches fold away), and computes what
the reference interpreter computes: the sum of three pads (the gradient of a split into
query, key and value), a concatenate of a pad (whose own edges are not the loop's), both
float types."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from braze.backends import cpu
from braze.backends.cpu.emit import ConstantPool, emit_kernel
from braze.backends.cpu.target import resolve
from braze.backends.reference.interpreter import evaluate
from braze.ir.prims.fusion import fusion
from braze.ir.text import parse_graph

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")

PADS_ADDED = """graph(%0: f32[2,3,5], %1: f32[2,5,3], %2: f32[2,3,5]) {
  %3 = pad(%0) {high=(0, 0, 5), interior=(0, 0, 0), low=(0, 0, 5), value=0.0} : f32[2,3,15]
  %4 = transpose(%1) {permutation=(0, 2, 1)} : f32[2,3,5]
  %5 = pad(%4) {high=(0, 0, 0), interior=(0, 0, 0), low=(0, 0, 10), value=0.0} : f32[2,3,15]
  %6 = add(%3, %5) : f32[2,3,15]
  %7 = pad(%2) {high=(0, 0, 10), interior=(0, 0, 0), low=(0, 0, 0), value=0.0} : f32[2,3,15]
  %8 = add(%6, %7) : f32[2,3,15]
  return (%8)
}"""
CONCATENATED = """graph(%0: f32[4,3], %1: f32[4,6], %2: f32[4,4]) {
  %3 = pad(%2) {high=(0, 1), interior=(0, 0), low=(0, 2), value=1.5} : f32[4,7]
  %4 = concatenate(%0, %1, %3) {dimension=1} : f32[4,16]
  %5 = exp(%4) : f32[4,16]
  return (%5)
}"""


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize(("text", "ranges"), [(PADS_ADDED, (0, 5, 10, 15)), (CONCATENATED, (0, 3, 9, 16))])
def test_split_loop_kernel_matches_reference(text, ranges, dtype, tmp_path):
    graph = parse_graph(text.replace("f32", dtype))
    optimized = cpu.optimize(graph, verify=True)
    (kernel,) = [n for n in optimized.nodes() if n.op is fusion]
    source = emit_kernel("k", kernel, ConstantPool("c"), False, resolve("x86-64", frozenset())).definition
    last = f"i{len(graph.outputs[0].shape) - 1}"
    for start, end in itertools.pairwise(ranges):
        assert f"for (int64_t {last} = {start}; {last} < {end}; {last}++)" in source, source
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(p.aval.shape).astype(dtype.replace("f", "float")) for p in graph.params]
    (got,) = cpu.compile_graph(optimized, cpu.DiskCache(tmp_path))(args)
    (expected,) = evaluate(graph, args)
    np.testing.assert_allclose(got, expected, rtol=1e-6 if dtype == "f32" else 1e-14)
