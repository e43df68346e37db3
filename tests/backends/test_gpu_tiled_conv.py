"""Tiled convolutions: conv (plain, and with a fused bias and relu epilogue),
conv_grad_filter and conv_grad_input as implicit matrix products through work-group-local
tiles, for random shapes, strides, dilations and paddings whose edges leave remainder
tiles, agree with the reference interpreter on the OpenCL device at two work-group sizes;
a tap in the padding still multiplies its zero (0 * inf is NaN, as in the reference) and a
conv_grad_input tap that reaches no output adds nothing; the same kernels, tiled for an
H200, compile as CUDA C for sm_90."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_device import assert_tiled_kernels_match_reference, requires_gpu_runtime

from braze.backends import gpu
from braze.backends.reference.interpreter import evaluate
from braze.ir.prims.conv import output_hw
from braze.ir.text import parse_graph
from braze.runtime.diskcache import DiskCache

pytestmark = requires_gpu_runtime
RNG = np.random.default_rng(1313)


def _shape(t: str, shape: tuple) -> str:
    return f"{t}[{','.join(map(str, shape))}]"


def _convolution(channels: int = 1) -> tuple[tuple, tuple, tuple, str]:
    """Random (x, w, output) shapes and the attributes of a conv whose output has more
    than one pixel and one channel, and at least ``channels`` input channels (two make
    each gradient's product a matrix too)."""
    while True:
        n, h, w, c, o = (int(v) for v in RNG.integers((1, 3, 3, channels, 2), (3, 9, 9, 5, 7)))
        kh, kw, sh, sw, dh, dw = (int(v) for v in RNG.integers((1, 1, 1, 1, 1, 1), (4, 4, 3, 3, 3, 3)))
        padding = tuple(tuple(int(p) for p in RNG.integers(0, 3, 2)) for _ in range(2))
        oh, ow = output_hw((h, w), (kh, kw), (sh, sw), padding, (dh, dw))
        if oh >= 1 and ow >= 1 and n * oh * ow > 1:
            attrs = f"dilation=({dh}, {dw}), padding={padding}, strides=({sh}, {sw})"
            return (n, h, w, c), (kh, kw, c, o), (n, oh, ow, o), attrs


def _graphs(dtype: str) -> list[tuple[str, list[tuple]]]:
    """(graph text, operand shapes): a conv, a conv with bias and relu fused after it, and
    the two gradients, each of a random convolution."""
    t = {"float32": "f32", "float64": "f64"}[dtype]
    cases = []
    x, w, y, attrs = _convolution()
    cases.append(
        (
            f"graph(%0: {_shape(t, x)}, %1: {_shape(t, w)}) {{\n"
            f"  %2 = conv(%0, %1) {{{attrs}}} : {_shape(t, y)}\n  return (%2)\n}}",
            [x, w],
        )
    )
    x, w, y, attrs = _convolution()
    cases.append(
        (
            f"graph(%0: {_shape(t, x)}, %1: {_shape(t, w)}, %9: {t}[{w[3]}], %8: {t}[]) {{\n"
            f"  %2 = conv(%0, %1) {{{attrs}}} : {_shape(t, y)}\n"
            f"  %3 = broadcast_in_dim(%9) {{broadcast_dimensions=(3,), shape={y}}} : {_shape(t, y)}\n"
            f"  %4 = add(%2, %3) : {_shape(t, y)}\n"
            f"  %6 = broadcast_in_dim(%8) {{broadcast_dimensions=(), shape={y}}} : {_shape(t, y)}\n"
            f"  %5 = max(%4, %6) : {_shape(t, y)}\n  return (%5)\n}}",
            [x, w, (w[3],), ()],
        )
    )
    x, w, y, attrs = _convolution(2)
    cases.append(
        (
            f"graph(%0: {_shape(t, x)}, %1: {_shape(t, y)}) {{\n"
            f"  %2 = conv_grad_filter(%0, %1) {{{attrs}, filter_hw={w[:2]}}} : {_shape(t, w)}\n"
            "  return (%2)\n}",
            [x, y],
        )
    )
    x, w, y, attrs = _convolution(2)
    cases.append(
        (
            f"graph(%0: {_shape(t, y)}, %1: {_shape(t, w)}) {{\n"
            f"  %2 = conv_grad_input(%0, %1) {{{attrs}, input_hw={x[1:3]}}} : {_shape(t, x)}\n"
            "  return (%2)\n}",
            [y, w],
        )
    )
    return cases


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("warp", [1, 8], ids=["group4", "group32"])
def test_tiled_convolutions_match_the_reference(dtype, warp, monkeypatch, tmp_path):
    # The simulator reports a warp of 1 (4 work-items a group, 2 x 2 tiles); a warp of 8
    # gives 32 work-items and 8 x 8 tiles, two outputs per work-item.
    assert_tiled_kernels_match_reference(_graphs(dtype), dtype, warp, monkeypatch, tmp_path, RNG)


def test_tiled_convolution_taps_outside_the_image_as_the_reference(tmp_path):
    """An inf in the filter (in the cotangent for the filter's gradient): the conv's and
    the filter gradient's taps in the padding multiply it by zero, which is NaN as in the
    reference; the input gradient's taps that reach no output of the strided conv never
    meet it, which leaves those positions numbers."""
    x, w, y = _shape("f32", (1, 4, 5, 2)), _shape("f32", (2, 2, 2, 3)), _shape("f32", (1, 2, 3, 3))
    attrs = "dilation=(1, 1), padding=((1, 0), (0, 1)), strides=(2, 2)"
    graph = parse_graph(
        f"graph(%0: {x}, %1: {w}, %2: {y}) {{\n"
        f"  %3 = conv(%0, %1) {{{attrs}}} : {y}\n"
        f"  %4 = conv_grad_filter(%0, %2) {{{attrs}, filter_hw=(2, 2)}} : {w}\n"
        f"  %5 = conv_grad_input(%2, %1) {{{attrs}, input_hw=(4, 5)}} : {x}\n"
        "  return (%3, %4, %5)\n}"
    )
    arrays = [RNG.standard_normal(s).astype(np.float32) for s in ((1, 4, 5, 2), (2, 2, 2, 3), (1, 2, 3, 3))]
    arrays[1][0, 0, 1, 2] = arrays[2][0, 0, 0, 1] = np.inf  # the first tap row meets the top padding
    optimized = gpu.optimize(graph, verify=True)
    assert gpu.render([optimized], gpu.runtime().info)[1].count("xtile") >= 3  # all three tiled
    got = gpu.compile_graph(optimized, DiskCache(tmp_path))(arrays)
    with np.errstate(all="ignore"):
        expected = evaluate(graph, arrays)
    for value, want in zip(got[:2], expected[:2], strict=True):
        assert np.isnan(want).any() and not np.isnan(want).all()  # the case this test is about
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-5, equal_nan=True)
    assert np.isinf(expected[2]).any() and not np.isnan(expected[2]).any()
    np.testing.assert_allclose(got[2], expected[2], rtol=1e-5, atol=1e-5)
