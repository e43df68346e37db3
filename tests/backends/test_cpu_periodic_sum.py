"""Sums over every axis but the last (bias gradients, NHWC), summed as a flat array with a
period of whole vectors: remainders, a fused producer written as a second result, both
float types, threads, every CPU target, against the reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_targets import use_target, with_parallel

import braze
from braze.backends import cpu
from braze.backends.reference.interpreter import evaluate
from braze.lazy import EXECUTOR, build_graph

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")

SHAPES = [(3, 5, 7, 6), (4, 4, 4, 16), (2, 3, 5, 3), (40, 7), (9, 1, 13, 10)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("target", with_parallel())
def test_sum_over_leading_axes_agrees_with_the_reference(shape, dtype, target, tmp_path, monkeypatch):
    target = use_target(target, monkeypatch)
    rng = np.random.default_rng(sum(shape))
    device = braze.LAZY_CPU
    x = braze.tensor(rng.standard_normal(shape).astype(dtype), device=device)
    z = braze.tensor(rng.standard_normal(shape).astype(dtype), device=device)
    masked = x * braze.sign(z)  # a ReLU gradient, as the step makes it
    total = masked.sum(axis=tuple(range(len(shape) - 1)))
    traced = build_graph([masked._value, total._value])
    EXECUTOR._live.clear()
    graph = cpu.optimize(traced.graph)
    wants = evaluate(graph, traced.args)
    gots = cpu.compile_graph(graph, cpu.DiskCache(tmp_path))(traced.args)
    tolerance = 1e-5 if dtype == "float32" else 1e-12
    for want, got in zip(wants, gots, strict=True):
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance * shape[0] * 10)


def test_a_bias_gradient_is_summed_with_a_period_of_vectors(tmp_path, monkeypatch):
    monkeypatch.setenv("BRAZE_DUMP", str(tmp_path / "dump"))
    x = braze.tensor(np.ones((16, 28, 28, 6), np.float32), device=braze.LAZY_CPU)
    traced = build_graph([x.sum(axis=(0, 1, 2))._value])
    EXECUTOR._live.clear()
    (got,) = cpu.compile_graph(cpu.optimize(traced.graph), cpu.DiskCache(tmp_path))(traced.args)
    np.testing.assert_array_equal(got, np.full(6, 16 * 28 * 28, np.float32))
    (source,) = [p.read_text() for p in (tmp_path / "dump" / "kernels").iterdir()]
    assert "base += " in source, "the sum should run over blocks of whole vectors"
