"""The input gradient of a convolution with few input channels and many output channels
(LeNet's second layer): the narrow kernel's row tiles (each option the autotuner may pick),
remainder rows, skipped padding taps, strides and dilations, against the reference
interpreter on every CPU target the host runs."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_targets import use_target, with_parallel

import braze
from braze.backends import cpu
from braze.backends.cpu import autotune
from braze.backends.cpu.compiler import find_compiler
from braze.backends.reference.interpreter import evaluate
from braze.lazy import EXECUTOR, build_graph

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")

CASES = [
    # (image NHWC, filter HWIO, padding, strides, dilation)
    ((4, 14, 14, 6), (5, 5, 6, 16), "VALID", 1, 1),  # LeNet's second layer
    ((2, 9, 13, 3), (3, 3, 3, 8), "SAME", 1, 1),  # 9 rows: a remainder tile
    ((2, 11, 10, 2), (3, 2, 2, 12), ((2, 1), (0, 3)), (2, 1), (1, 2)),  # strided, dilated
    ((1, 7, 20, 5), (4, 3, 5, 9), "SAME", (1, 2), (2, 1)),  # more than a vector of columns
    ((9, 10, 9, 4), (3, 3, 4, 8), "SAME", (2, 1), 1),  # more images than threads
]


def _input_gradient(case, seed: int):
    image, kernel, padding, strides, dilation = case
    rng = np.random.default_rng(seed)
    device = braze.LAZY_CPU
    x = braze.tensor(rng.standard_normal(image).astype(np.float32), device=device)
    w = braze.tensor(rng.standard_normal(kernel).astype(np.float32), device=device)
    y = braze.conv2d(x, w, stride=strides, padding=padding, dilation=dilation)
    cotangent = braze.tensor(rng.standard_normal(y.shape).astype(np.float32), device=device)
    dx = braze.grad(
        lambda x: (braze.conv2d(x, w, stride=strides, padding=padding, dilation=dilation) * cotangent).sum()
    )(x)
    traced = build_graph([dx._value])
    EXECUTOR._live.clear()
    graph = cpu.optimize(traced.graph)
    assert any(n.op.name == "conv_grad_input" for n in traced.graph.nodes())
    return graph, traced.args


@pytest.mark.parametrize("case", CASES, ids=lambda case: "x".join(map(str, case[1])))
@pytest.mark.parametrize("target", with_parallel())
def test_narrow_input_gradient_agrees_with_the_reference_for_every_row_tile(case, target, tmp_path, monkeypatch):
    target = use_target(target, monkeypatch)
    graph, args = _input_gradient(case, seed=len(case[0]) + case[1][3])
    (want,) = evaluate(graph, args)
    # Every option of every choice offered, whatever the kernel's size.
    monkeypatch.setattr("braze.backends.cpu.elemental.AUTOTUNE_MIN_WORK", 0)
    found = autotune.menus(graph, find_compiler(target))
    assert found, "the input gradient's kernel should offer a row tile"
    for option in range(2):
        tunings = {t: {name: min(option, count - 1) for name, count in menu.items()} for t, _, _, menu, _ in found}
        monkeypatch.setattr(autotune, "tune", lambda *_, tunings=tunings: tunings)
        (got,) = cpu.compile_graph(graph, cpu.DiskCache(tmp_path))(args)
        scale = float(np.abs(want).max())
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale, err_msg=f"option {option}")
