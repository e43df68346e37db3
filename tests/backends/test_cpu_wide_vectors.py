"""Where the compiler's 512-bit double permutations cannot be trusted, modules prefer
256-bit vectors; a kernel of flat loops over 4-byte values (a GELU, an optimizer's update)
asks for the full width back, and no kernel that indexes its operands elsewhere or holds
8-byte vectors (a float32 pow's, computed in doubles, included) does. Whatever the width,
the kernels compute the reference's values."""

from __future__ import annotations

import platform
from dataclasses import replace

import numpy as np
import pytest
from cpu_targets import capture_sources

from braze.backends import cpu
from braze.backends.cpu.compiler import find_compiler
from braze.backends.cpu.emit import ConstantPool, emit_kernel
from braze.backends.cpu.target import resolve
from braze.backends.reference.interpreter import evaluate
from braze.ir.prims.fusion import fusion
from braze.ir.text import parse_graph

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")

AVX512 = frozenset(
    {"__AVX512F__", "__AVX512BW__", "__AVX512CD__", "__AVX512DQ__", "__AVX512VL__", "__AVX2__", "__FMA__"}
)

GELU = """graph(%0: f32[24,40], %1: f32[]) {
  %2 = broadcast_in_dim(%1) {broadcast_dimensions=(), shape=(24, 40)} : f32[24,40]
  %3 = mul(%0, %2) : f32[24,40]
  %4 = erf(%3) : f32[24,40]
  %5 = mul(%0, %4) : f32[24,40]
  %6 = max(%5, %0) : f32[24,40]
  return (%4, %6)
}"""
TRANSPOSED = """graph(%0: f32[24,40]) {
  %1 = transpose(%0) {permutation=(1, 0)} : f32[40,24]
  %2 = exp(%1) : f32[40,24]
  return (%2)
}"""
POWER = """graph(%0: f32[24,40]) {
  %1 = pow(%0, %0) : f32[24,40]
  return (%1)
}"""
WIDENED = """graph(%0: f32[24,40]) {
  %1 = convert(%0) {dtype=f64} : f64[24,40]
  %2 = exp(%1) : f64[24,40]
  return (%2)
}"""


@pytest.mark.parametrize(
    ("text", "wide"),
    [(GELU, True), (TRANSPOSED, False), (POWER, False), (WIDENED, False)],
    ids=["gelu", "transposed", "pow", "float64"],
)
@pytest.mark.parametrize("narrow_doubles", [True, False], ids=["narrow-doubles", "wide-doubles"])
def test_flat_float_loops_ask_for_full_width_vectors(text, wide, narrow_doubles, tmp_path, monkeypatch):
    graph = parse_graph(text)
    optimized = cpu.optimize(graph, verify=True)
    (kernel,) = [n for n in optimized.nodes() if n.op is fusion]
    target = resolve("x86-64-v4", AVX512, narrow_doubles)
    source = emit_kernel("k", kernel, ConstantPool("c"), False, target).definition
    assert ("BRAZE_WIDE_VECTORS" in source) == (wide and narrow_doubles), source
    # This host's compiler, made to narrow doubles (or not) as the case says: the kernel
    # with the attribute is compiled and run here too, whatever the probe found.
    host = find_compiler()
    if narrow_doubles and platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the wide-vector attribute is GCC's for x86")
    forced = replace(host, target=replace(host.target, narrow_doubles=narrow_doubles))
    monkeypatch.setattr(cpu, "find_compiler", lambda target=None: forced)
    sources = capture_sources(monkeypatch)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(p.aval.shape).astype(np.float32) for p in graph.params]
    got = cpu.compile_graph(optimized, cpu.DiskCache(tmp_path))(args)
    assert ("\nBRAZE_WIDE_VECTORS " in "".join(sources)) == (wide and narrow_doubles and forced.target.narrow_doubles)
    for have, want in zip(got, evaluate(graph, args), strict=True):
        np.testing.assert_allclose(have, want, rtol=2e-6, atol=1e-7)
