"""A loop kernel whose innermost dimension a reshape merges from smaller ones (attention's
heads back into channels, in both passes) loops over the merged sizes: the reshape reads
the loop variables directly, with no division or remainder in the index (which the C
compiler turns into gathers), and the kernel computes what the reference interpreter
computes, also where two reshapes merge different sizes (one read through divisions)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from braze.backends import cpu
from braze.backends.cpu.emit import ConstantPool, emit_kernel
from braze.backends.cpu.target import resolve
from braze.backends.reference.interpreter import evaluate
from braze.ir.prims.fusion import fusion
from braze.ir.text import parse_graph

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")

HEADS_MERGED = """graph(%0: f32[2,4,3,16]) {
  %1 = transpose(%0) {permutation=(0, 2, 1, 3)} : f32[2,3,4,16]
  %2 = reshape(%1) {new_sizes=(2, 3, 64)} : f32[2,3,64]
  %3 = constant() {value=literal(f32, (), 2.0)} : f32[]
  %4 = broadcast_in_dim(%3) {broadcast_dimensions=(), shape=(2, 3, 64)} : f32[2,3,64]
  %5 = mul(%2, %4) : f32[2,3,64]
  return (%5)
}"""
# The gradient of attention's query, key and value split from one product: three merged
# heads, padded into their places and added.
HEADS_PADDED = """graph(%0: f32[2,4,3,16], %1: f32[2,4,3,16], %2: f32[2,4,3,16]) {
  %3 = transpose(%0) {permutation=(0, 2, 1, 3)} : f32[2,3,4,16]
  %4 = reshape(%3) {new_sizes=(2, 3, 64)} : f32[2,3,64]
  %5 = pad(%4) {high=(0, 0, 128), interior=(0, 0, 0), low=(0, 0, 0), value=0.0} : f32[2,3,192]
  %6 = transpose(%1) {permutation=(0, 2, 1, 3)} : f32[2,3,4,16]
  %7 = reshape(%6) {new_sizes=(2, 3, 64)} : f32[2,3,64]
  %8 = pad(%7) {high=(0, 0, 64), interior=(0, 0, 0), low=(0, 0, 64), value=0.0} : f32[2,3,192]
  %9 = add(%5, %8) : f32[2,3,192]
  %10 = transpose(%2) {permutation=(0, 2, 1, 3)} : f32[2,3,4,16]
  %11 = reshape(%10) {new_sizes=(2, 3, 64)} : f32[2,3,64]
  %12 = pad(%11) {high=(0, 0, 0), interior=(0, 0, 0), low=(0, 0, 128), value=0.0} : f32[2,3,192]
  %13 = add(%9, %12) : f32[2,3,192]
  return (%13)
}"""
# Two merges of one dimension, 8 x 16 and 4 x 32, each of transposed heads: the loop
# follows one of them.
TWO_MERGES = """graph(%0: f32[2,8,3,16], %1: f32[2,4,3,32]) {
  %2 = transpose(%0) {permutation=(0, 2, 1, 3)} : f32[2,3,8,16]
  %3 = reshape(%2) {new_sizes=(2, 3, 128)} : f32[2,3,128]
  %4 = transpose(%1) {permutation=(0, 2, 1, 3)} : f32[2,3,4,32]
  %5 = reshape(%4) {new_sizes=(2, 3, 128)} : f32[2,3,128]
  %6 = sub(%3, %5) : f32[2,3,128]
  return (%6)
}"""


def _kernel_source(graph):
    optimized = cpu.optimize(graph, verify=True)
    (kernel,) = [n for n in optimized.nodes() if n.op is fusion]
    return optimized, emit_kernel("k", kernel, ConstantPool("c"), False, resolve("x86-64", frozenset())).definition


def _reads(source: str) -> dict[str, list[str]]:
    """Each input's read positions: the index expressions of its loads."""
    offsets = dict(re.findall(r"const int64_t (l\d+) = (.*);", source))
    found: dict[str, list[str]] = {}
    for name, offset in re.findall(r"(in\d+)\[(l\d+)\]", source):
        found.setdefault(name, []).append(offsets[offset])
    return found


def _check_values(graph, optimized, tmp_path):
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(p.aval.shape).astype(np.float32) for p in graph.params]
    (got,) = cpu.compile_graph(optimized, cpu.DiskCache(tmp_path))(args)
    (expected,) = evaluate(graph, args)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("text", [HEADS_MERGED, HEADS_PADDED])
def test_merged_heads_are_read_without_division(text, tmp_path):
    graph = parse_graph(text)
    optimized, source = _kernel_source(graph)
    assert "for (int64_t i2r = 0; i2r < 16; i2r++)" in source, source
    reads = _reads(source)
    assert len(reads) == len(graph.params), source
    for name, positions in reads.items():
        # In each range of the loop the operand read there is read affinely.
        assert any("/" not in p and "%" not in p for p in positions), f"{name}: {positions}\n{source}"
    _check_values(graph, optimized, tmp_path)


def test_a_merge_of_other_sizes_is_read_through_divisions(tmp_path):
    graph = parse_graph(TWO_MERGES)
    optimized, source = _kernel_source(graph)
    assert "i2r < 32" in source, source
    reads = _reads(source)
    assert all("/" not in p for p in reads["in1"]) and any("/" in p for p in reads["in0"]), source
    _check_values(graph, optimized, tmp_path)


# A reshape to a scalar in a kernel that loops over dimensions (found by braze fuzz).
SCALAR_RESHAPED = """graph(%0: f32[1,1], %1: f32[2,3]) {
  %2 = reshape(%0) {new_sizes=()} : f32[]
  %3 = broadcast_in_dim(%2) {broadcast_dimensions=(), shape=(3, 2)} : f32[3,2]
  %4 = transpose(%1) {permutation=(1, 0)} : f32[3,2]
  %5 = copysign(%3, %4) : f32[3,2]
  return (%5)
}"""


def test_a_reshape_to_a_scalar_leaves_the_loop_as_it_is(tmp_path):
    graph = parse_graph(SCALAR_RESHAPED)
    optimized, source = _kernel_source(graph)
    assert "i1r" not in source, source
    _check_values(graph, optimized, tmp_path)
