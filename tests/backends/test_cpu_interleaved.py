"""The interleaved convolution kernels (few input channels, fewer output channels than a
vector's lanes: a first layer), the forward one with a fused bias and activation and the
filter gradient, against the reference interpreter: paddings, row strides and dilations,
chunk remainders, both float types and every CPU target the host runs."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_targets import use_target, with_parallel

import braze
from braze.backends import cpu
from braze.backends.reference.interpreter import evaluate
from braze.lazy import EXECUTOR, build_graph

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")

CASES = [
    # (image NHWC, filter HWIO, padding, strides, dilation)
    ((3, 28, 28, 1), (5, 5, 1, 6), "SAME", 1, 1),  # LeNet's first layer
    ((2, 9, 11, 3), (3, 3, 3, 5), "VALID", 1, 1),  # RGB; 9 * 5 values a row: a remainder chunk
    ((2, 8, 7, 2), (2, 3, 2, 7), ((1, 2), (0, 3)), (2, 1), (2, 1)),  # strided, dilated rows
    ((1, 5, 4, 4), (1, 1, 4, 1), "SAME", 1, 1),  # one output channel, a 1x1 filter
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=lambda case: "x".join(map(str, case[1])))
@pytest.mark.parametrize("target", with_parallel())
def test_interleaved_convolution_agrees_with_the_reference(case, dtype, target, tmp_path, monkeypatch):
    target = use_target(target, monkeypatch)
    image, kernel, padding, strides, dilation = case
    rng = np.random.default_rng(len(image) + kernel[3])
    device = braze.LAZY_CPU
    x = braze.tensor(rng.standard_normal(image).astype(dtype), device=device)
    w = braze.tensor(rng.standard_normal(kernel).astype(dtype), device=device)
    b = braze.tensor(rng.standard_normal(kernel[3]).astype(dtype), device=device)
    y = braze.relu(braze.conv2d(x, w, stride=strides, padding=padding, dilation=dilation) + b)
    cotangent = braze.tensor(rng.standard_normal(y.shape).astype(dtype), device=device)
    w.requires_grad = True
    dw = braze.grad(
        lambda w: (braze.conv2d(x, w, stride=strides, padding=padding, dilation=dilation) * cotangent).sum()
    )(w)
    traced = build_graph([y._value, dw._value])
    EXECUTOR._live.clear()
    optimized = cpu.optimize(traced.graph)
    assert any(n.op.name == "conv_grad_filter" for n in traced.graph.nodes())
    wants = evaluate(optimized, traced.args)
    gots = cpu.compile_graph(optimized, cpu.DiskCache(tmp_path))(traced.args)
    tolerance = 1e-5 if dtype == "float32" else 1e-12
    for name, want, got in zip(("forward", "filter gradient"), wants, gots, strict=True):
        scale = float(np.abs(want).max())
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance * scale, err_msg=name)
