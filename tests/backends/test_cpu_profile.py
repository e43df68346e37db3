"""BRAZE_PROFILE=1: every kernel call is timed, and the executable reports each kernel's
label and accumulated seconds."""

from __future__ import annotations

import numpy as np
import pytest

from braze.backends import cpu
from braze.ir.text import parse_graph

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")

TEXT = """graph(%0: f32[256,64], %1: f32[64,32]) {
  %2 = dot_general(%0, %1) {lhs_batch=(), lhs_contracting=(1,), rhs_batch=(), rhs_contracting=(0,)} : f32[256,32]
  %3 = reduce_sum(%2) {axes=(0,)} : f32[32]
  return (%2, %3)
}"""


def compiled(tmp_path):
    graph = cpu.optimize(parse_graph(TEXT))
    return cpu.compile_graph(graph, cpu.DiskCache(tmp_path))


def test_profiled_kernels_report_their_labels_and_growing_times(tmp_path, monkeypatch):
    monkeypatch.setenv("BRAZE_PROFILE", "1")
    executable = compiled(tmp_path)
    x, w = np.ones((256, 64), np.float32), np.ones((64, 32), np.float32)
    out, total = executable([x, w])
    np.testing.assert_array_equal(total, np.full(32, 256 * 64, np.float32))
    first = executable.kernel_seconds()
    assert [label.split(" ->")[0] for label, _ in first] == ["output fusion", "input fusion"]
    assert "dot_general" in first[0][0] and "reduce_sum" in first[1][0]
    assert all(seconds > 0 for _, seconds in first)
    executable([x, w])
    assert all(later > earlier for (_, earlier), (_, later) in zip(first, executable.kernel_seconds(), strict=True))


def test_kernel_times_need_a_profiled_build(tmp_path, monkeypatch):
    monkeypatch.delenv("BRAZE_PROFILE", raising=False)
    with pytest.raises(RuntimeError, match="BRAZE_PROFILE=1"):
        compiled(tmp_path).kernel_seconds()
