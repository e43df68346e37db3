"""A fused kernel computes each value at a bounded number of positions per element.

Found by the differential fuzzer: a scan written by doubling (``x[s:] + x[:-s]`` for s =
1, 2, 4...) fused into one loop kernel whose element read the step before at two
positions, each of those the step before at two more: the first value was computed
2^depth times per element (2 MB of C at depth 8, minutes of compiling at 12). Past
``FusionPolicy.max_positions`` positions a value is written out by a kernel of its own."""

from __future__ import annotations

import numpy as np

import braze as B
from braze.lazy import EXECUTOR, build_graph
from braze.passes import pipeline
from braze.passes.fusion_policy import TARGET_INDEPENDENT


def doubling_scan(x, depth: int):
    offset = 1
    for _ in range(depth):
        x = B.concatenate([x[:offset], x[offset:] + x[:-offset] * 0.5])
        offset *= 2
    return x


def doubling_scan_numpy(x: np.ndarray, depth: int) -> np.ndarray:
    x = x.astype(np.float64)
    offset = 1
    for _ in range(depth):
        x = np.concatenate([x[:offset], x[offset:] + x[:-offset] * 0.5])
        offset *= 2
    return x


def _traced(depth: int, size: int):
    x = B.tensor(np.random.default_rng(5).standard_normal(size).astype(np.float32), device=B.LAZY_CPU)
    trace = build_graph([doubling_scan(x, depth)._value])
    EXECUTOR._live.clear()
    return trace.graph


def test_a_value_read_at_too_many_positions_is_written_out():
    fused, _ = pipeline.run(_traced(8, 256))
    limit = TARGET_INDEPENDENT.max_positions
    assert any(f"computed at more than {limit} positions per element" in note for note in fused.notes)
    kernels = [n for n in fused.nodes() if n.op.name == "fusion"]
    assert len(kernels) > 1  # the scan is cut into kernels, each reading the last one's result


def test_a_deep_doubling_scan_compiles_and_matches_numpy():
    depth, size = 12, 4096
    x = np.random.default_rng(6).standard_normal(size).astype(np.float32)
    got = B.jit(lambda t: doubling_scan(t, depth))(B.tensor(x)).numpy()
    want = doubling_scan_numpy(x, depth)
    # Each output sums at most 2^12 terms, each of them rounded a few times in float32.
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 * 64 * np.abs(want).max())


def test_a_stencil_of_nine_slices_stays_one_kernel():
    x = B.tensor(np.random.default_rng(7).standard_normal((10, 10)).astype(np.float32), device=B.LAZY_CPU)
    padded = B.pad(x, ((1, 1), (1, 1)))
    total = sum(padded[i : i + 10, j : j + 10] for i in range(3) for j in range(3))
    graph = build_graph([total._value]).graph
    EXECUTOR._live.clear()
    fused, _ = pipeline.run(graph)
    assert sum(n.op.name == "fusion" for n in fused.nodes()) == 1
