"""A ReLU and a sign in CPU kernels are bitwise selects, not C ternaries: a kernel compiled
without if-conversion (a reduction kernel of several sums, such as a batch norm's
gradient) otherwise keeps their branches in its loop, which then runs scalar. The selects
give the reference interpreter's values bit for bit: NaN stays NaN, infinities keep their
sign, and a ReLU or a sign of either zero is +0 (NumPy's maximum(x, 0) and sign)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from cpu_targets import capture_sources, use_target, with_parallel

import braze
from braze.backends import cpu
from braze.backends.reference.interpreter import evaluate
from braze.lazy import EXECUTOR, build_graph

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")

# 1e-40 is a float32 denormal, 5e-324 a float64 one
SPECIAL = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.5, 1e-40, -1e-40, 5e-324, -5e-324, 3e38, -3e38]


def _compiled(results: list, tmp_path, monkeypatch) -> tuple[list, list, str]:
    """The compiled values of the lazy ``results``, the reference interpreter's, and the C
    source of their kernels."""
    traced = build_graph([r._value for r in results])
    EXECUTOR._live.clear()
    graph = cpu.optimize(traced.graph)
    sources = capture_sources(monkeypatch)
    got = cpu.compile_graph(graph, cpu.DiskCache(tmp_path))(traced.args)
    return got, evaluate(graph, traced.args), "".join(sources)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("target", with_parallel())
def test_relu_and_sign_in_a_kernel_of_several_sums_are_selects_with_the_references_values(
    dtype, target, tmp_path, monkeypatch
):
    use_target(target, monkeypatch)
    rng = np.random.default_rng(0)
    values = np.resize(np.array(SPECIAL, dtype), (24, 16))
    values[12:] = rng.standard_normal((12, 16))  # the NaNs of the first rows stay in those columns' sums
    weights = rng.standard_normal((24, 16)).astype(dtype)
    x, w = (braze.tensor(a, device=braze.LAZY_CPU) for a in (values, weights))
    relu, sign = braze.relu(x), braze.sign(x)
    results = [relu, sign, braze.sign(relu), (relu * w).sum(axis=0), (sign * w).sum(axis=0), sign.sum(axis=0)]
    got, expected, source = _compiled(results, tmp_path, monkeypatch)
    kernels = source.split("braze_run0_kernel", 1)[1]  # past the prelude's own selects
    assert "0 ?" not in kernels and "!= (" not in kernels and "braze_pick" in kernels
    for have, want in zip(got, expected, strict=True):
        if have.ndim == 2:  # elementwise: bit for bit, the signs of zeros included
            np.testing.assert_array_equal(have.view(np.uint8), want.view(np.uint8))
        else:
            np.testing.assert_allclose(have, want, rtol=1e-6 if dtype == np.float32 else 1e-12, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("target", with_parallel())
def test_maxima_minima_and_clamps_are_selects_with_the_references_values(dtype, target, tmp_path, monkeypatch):
    """maximum, minimum, a clamp (two of them in a row, which GCC left scalar as ternaries)
    and a row's maximum of clamped values: NaN from either operand, infinities and both
    zeros as the reference interpreter gives them, from bitwise selects."""
    use_target(target, monkeypatch)
    x = np.resize(np.array(SPECIAL, dtype), (14, 14))
    y = x.T.copy()  # every pair of special values, in both orders
    # rows without NaN for the maxima: values, both zeros, ties, an infinity
    z = np.random.default_rng(1).standard_normal((14, 40)).astype(dtype)
    z[:, ::7], z[:, 3::7], z[:, 5], z[2, 6], z[4] = 0.0, -0.0, z[:, 4], np.inf, -0.0
    a, b, c = (braze.tensor(v, device=braze.LAZY_CPU) for v in (x, y, z))
    clamped = braze.minimum(braze.maximum(a, -1.0), 1.0)
    held = braze.minimum(braze.maximum(c, -1.0), 1.0)
    results = [braze.maximum(a, b), braze.minimum(a, b), clamped, held.max(axis=-1), (c * 2).max(axis=0)]
    got, expected, source = _compiled(results, tmp_path, monkeypatch)
    # the kernels' values and their rows' partial maxima
    values = [line for line in source.splitlines() if re.match(r"\s+(const \w+ v\d+|part\d+\[j\]) = ", line)]
    assert not [line for line in values if " ? " in line] and any("braze_pick" in line for line in values)
    for have, want in zip(got, expected, strict=True):
        # NaN where the reference has NaN (of either sign), every other value bit for bit
        np.testing.assert_array_equal(np.isnan(have), np.isnan(want))
        np.testing.assert_array_equal(
            np.where(np.isnan(want), 0, have).view(np.uint8), np.where(np.isnan(want), 0, want).view(np.uint8)
        )
