"""Reductions over the innermost axis split into a vector of partial results (a softmax's
max and its exp-and-sum, a layer norm's moments): rows shorter than two vectors, rows with
a remainder, a fused producer written as a second result, NaN in a maximum, both float
types, threads, every CPU target, against the reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_targets import use_target, with_parallel

import braze
from braze.backends import cpu
from braze.backends.reference.interpreter import evaluate
from braze.lazy import EXECUTOR, build_graph

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")

SHAPES = [(12, 4, 64), (5, 37), (3, 7), (2, 3, 129), (1, 200)]


def _compile_and_evaluate(results, tmp_path):
    traced = build_graph([r._value for r in results])
    EXECUTOR._live.clear()
    graph = cpu.optimize(traced.graph)
    return evaluate(graph, traced.args), cpu.compile_graph(graph, cpu.DiskCache(tmp_path))(traced.args)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("target", with_parallel())
def test_softmax_rows_agree_with_the_reference(shape, dtype, target, tmp_path, monkeypatch):
    use_target(target, monkeypatch)
    rng = np.random.default_rng(sum(shape))
    x = braze.tensor(3 * rng.standard_normal(shape).astype(dtype), device=braze.LAZY_CPU)
    top = x.max(axis=-1, keepdims=True)
    e = braze.exp(x - top)
    total = e.sum(axis=-1)
    wants, gots = _compile_and_evaluate([top, e, total], tmp_path)
    # exp is a few ulp; a row's sum of n positive terms in double is rounded once to the type
    rtol = 1e-6 if dtype == "float32" else 1e-14
    for want, got in zip(wants, gots, strict=True):
        np.testing.assert_allclose(got, want, rtol=rtol * 4, atol=0)


@pytest.mark.parametrize("target", with_parallel())
def test_a_row_maximum_keeps_nan_and_infinities(target, tmp_path, monkeypatch):
    use_target(target, monkeypatch)
    values = np.arange(3 * 40, dtype=np.float32).reshape(3, 40) - 60
    values[0, 17] = np.nan
    values[1, 39] = np.inf  # in the remainder of a row of 40 past whole vectors of 16
    values[2, :] = -np.inf
    x = braze.tensor(values, device=braze.LAZY_CPU)
    wants, gots = _compile_and_evaluate([x.max(axis=-1), x.sum(axis=-1)], tmp_path)
    for want, got in zip(wants, gots, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape", [(12, 64, 128), (3, 37)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("target", with_parallel())
def test_sibling_row_sums_agree_with_the_reference(shape, target, tmp_path, monkeypatch):
    """A layer norm's two moments, sums of one input over its rows that share a kernel."""
    use_target(target, monkeypatch)
    rng = np.random.default_rng(sum(shape))
    x = braze.tensor(rng.standard_normal(shape).astype(np.float32), device=braze.LAZY_CPU)
    wants, gots = _compile_and_evaluate([x.sum(axis=-1), (x * x).sum(axis=-1), (x * 3.0).sum(axis=-1)], tmp_path)
    for want, got in zip(wants, gots, strict=True):
        # a row of n terms summed in double, rounded once to float32 (plus the squares' rounding)
        np.testing.assert_allclose(got, want, rtol=4 * 2.0**-24, atol=4 * 2.0**-24 * shape[-1])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("target", with_parallel())
def test_every_lane_of_a_row_reaches_its_maximum_and_sum(dtype, target, tmp_path, monkeypatch):
    """The partial results are combined in halves (lane j with lane j + half): a row's
    largest value, NaN or a large term at each of its 64 positions (every lane of every
    vector width) reaches the row's maximum and sum."""
    use_target(target, monkeypatch)
    values = np.random.default_rng(3).standard_normal((64, 64)).astype(dtype)
    largest, nans = values.copy(), values.copy()
    diagonal = np.arange(64)
    largest[diagonal, diagonal] = 1e6 + diagonal
    nans[diagonal, diagonal] = np.nan
    x, y = (braze.tensor(v, device=braze.LAZY_CPU) for v in (largest, nans))
    wants, gots = _compile_and_evaluate([x.max(axis=-1), y.max(axis=-1), x.sum(axis=-1)], tmp_path)
    np.testing.assert_array_equal(gots[0], 1e6 + diagonal)
    np.testing.assert_array_equal(gots[0], wants[0])
    assert np.isnan(gots[1]).all()
    # 64 terms summed in double, rounded once to the type
    np.testing.assert_allclose(gots[2], wants[2], rtol=4 * np.finfo(dtype).eps, atol=0)
