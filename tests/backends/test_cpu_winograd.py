"""3x3 convolutions by Winograd's F(2x2, 3x3): forward, input-gradient and filter-gradient
kernels, with their fused epilogues, whole and partial blocks of tiles, against the
reference interpreter on every CPU target the host runs; and the convolutions it must
leave to the direct kernels."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_targets import use_target, with_parallel

import braze
from braze.backends import cpu
from braze.backends.cpu import autotune, contractions
from braze.backends.cpu.compiler import find_compiler
from braze.backends.reference.interpreter import evaluate
from braze.lazy import EXECUTOR, build_graph

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")

# (image NHWC, output channels, padding, which): "forward" is relu(conv + bias), "input
# gradient" the gradient of sum(conv(relu(x)) * cotangent) with respect to x, "filter
# gradient" its gradient with respect to the filter w, plus 0.01 w (weight decay).
CASES = [
    ((2, 8, 8, 32), 32, "SAME", "forward"),
    ((3, 6, 10, 40), 48, "SAME", "forward"),  # 45 tiles: a partial last block; 40 channels in
    ((1, 10, 6, 32), 32, "VALID", "forward"),  # 8 x 4 outputs from 10 x 6
    ((2, 8, 6, 32), 64, "SAME", "input gradient"),
    ((1, 4, 12, 48), 32, "SAME", "input gradient"),
    ((2, 8, 8, 16), 16, "SAME", "filter gradient"),
    ((3, 6, 10, 40), 48, "SAME", "filter gradient"),  # 45 tiles: the threads' blocks differ
    ((1, 10, 6, 32), 16, "VALID", "filter gradient"),
]


def _graph(case, seed: int = 0):
    image, out_channels, padding, which = case
    rng = np.random.default_rng(seed)
    device = braze.LAZY_CPU
    x = braze.tensor(rng.standard_normal(image).astype(np.float32), device=device)
    filters = rng.standard_normal((3, 3, image[3], out_channels)) / np.sqrt(9 * image[3])
    w = braze.tensor(filters.astype(np.float32), device=device)
    if which == "forward":
        bias = braze.tensor(rng.standard_normal(out_channels).astype(np.float32), device=device)
        result = braze.relu(braze.conv2d(x, w, padding=padding) + bias)
    else:
        y = braze.conv2d(x, w, padding=padding)
        cotangent = braze.tensor(rng.standard_normal(y.shape).astype(np.float32), device=device)

        def loss(x, w):
            return (braze.conv2d(braze.relu(x), w, padding=padding) * cotangent).sum()

        dx, dw = braze.grad(loss, argnums=(0, 1))(x, w)
        result = dx if which == "input gradient" else dw + 0.01 * w
    traced = build_graph([result._value])
    EXECUTOR._live.clear()
    return cpu.optimize(traced.graph), traced.args


def _count_winograd_kernels(monkeypatch) -> dict[str, int]:
    """How many convolutions (forward or input gradient) and filter gradients the Winograd
    kernels computed, by ``emitted["conv"]``, ``emitted["filter"]``."""
    emitted = {"conv": 0, "filter": 0}

    def counting(kind: str, emit):
        def counted(p) -> None:
            emitted[kind] += 1
            emit(p)

        return counted

    monkeypatch.setattr(contractions, "emit_winograd_conv", counting("conv", contractions.emit_winograd_conv))
    filter_grad = counting("filter", contractions.emit_winograd_filter_grad)
    monkeypatch.setattr(contractions, "emit_winograd_filter_grad", filter_grad)
    return emitted


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case[3]}-{'x'.join(map(str, case[0]))}-{case[1]}")
@pytest.mark.parametrize("target", with_parallel())
def test_winograd_convolutions_agree_with_the_reference(case, target, tmp_path, monkeypatch):
    use_target(target, monkeypatch)
    graph, args = _graph(case)
    (want,) = evaluate(graph, args)
    emitted = _count_winograd_kernels(monkeypatch)
    (got,) = cpu.compile_graph(graph, cpu.DiskCache(tmp_path))(args)
    assert sum(emitted.values()), "the convolution should be computed by a Winograd kernel"
    # F(2x2, 3x3) rounds about as the direct sum does: float32's epsilon times the terms.
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale)


@pytest.mark.parametrize("case", [CASES[3], CASES[6]], ids=lambda case: case[3])
@pytest.mark.parametrize("target", with_parallel())
def test_the_autotuner_may_pick_the_direct_kernel_instead(case, target, tmp_path, monkeypatch):
    target = use_target(target, monkeypatch)
    graph, args = _graph(case, seed=1)
    (want,) = evaluate(graph, args)
    monkeypatch.setattr("braze.backends.cpu.elemental.AUTOTUNE_MIN_WORK", 0)
    found = autotune.menus(graph, find_compiler(target))
    assert any(name.startswith("winograd") for _, _, _, menu, _ in found for name in menu)
    for option in range(2):
        tunings = {t: {name: min(option, count - 1) for name, count in menu.items()} for t, _, _, menu, _ in found}
        monkeypatch.setattr(autotune, "tune", lambda *_, tunings=tunings: tunings)
        (got,) = cpu.compile_graph(graph, cpu.DiskCache(tmp_path / str(option)))(args)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()), err_msg=str(option))


@pytest.mark.parametrize(
    ("image", "filters", "options", "winograd"),
    [
        # 16 channels: too few to pay but for the filter gradient
        ((2, 8, 8, 16), (3, 3, 16, 16), {"padding": "SAME"}, {"conv": 0, "filter": 1}),
        ((2, 8, 8, 32), (3, 3, 32, 32), {"padding": "SAME", "stride": 2}, {"conv": 0, "filter": 0}),
        ((2, 8, 8, 32), (3, 3, 32, 32), {"padding": "SAME", "dilation": 2}, {"conv": 0, "filter": 0}),
        ((2, 7, 8, 32), (3, 3, 32, 32), {"padding": "SAME"}, {"conv": 0, "filter": 0}),  # no whole tiles
        ((2, 8, 8, 32), (5, 5, 32, 32), {"padding": "SAME"}, {"conv": 0, "filter": 0}),
        # 36 outputs, not whole vectors: the input gradient's 32 are
        ((2, 8, 8, 32), (3, 3, 32, 36), {"padding": "SAME"}, {"conv": 1, "filter": 0}),
        ((2, 8, 8, 8), (3, 3, 8, 16), {"padding": "SAME"}, {"conv": 0, "filter": 0}),
    ],
)
def test_which_convolutions_the_winograd_kernels_take(image, filters, options, winograd, tmp_path, monkeypatch):
    """A convolution and its two gradients: the kernels predicted for them (the autotuner,
    off, would emit its alternatives too), and their values."""
    monkeypatch.setenv("BRAZE_AUTOTUNE", "0")
    rng = np.random.default_rng(2)
    x = braze.tensor(rng.standard_normal(image).astype(np.float32), device=braze.LAZY_CPU)
    w = braze.tensor(rng.standard_normal(filters).astype(np.float32), device=braze.LAZY_CPU)
    gradients = braze.grad(lambda x, w: (braze.conv2d(x, w, **options) ** 2).sum(), argnums=(0, 1))(x, w)
    results = [braze.conv2d(x, w, **options), *gradients]
    traced = build_graph([r._value for r in results])
    EXECUTOR._live.clear()
    graph = cpu.optimize(traced.graph)
    emitted = _count_winograd_kernels(monkeypatch)
    results = cpu.compile_graph(graph, cpu.DiskCache(tmp_path))(traced.args)
    assert emitted == winograd
    for got, want in zip(results, evaluate(graph, traced.args), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


def _agrees_with_infinities_and_nans(traced, tmp_path, monkeypatch) -> None:
    """The traced graph, by a Winograd kernel, has the reference's infinities and NaNs where
    the reference has them, and its finite values elsewhere."""
    graph = cpu.optimize(traced.graph)
    emitted = _count_winograd_kernels(monkeypatch)
    with np.errstate(all="ignore"):
        (want,) = evaluate(graph, traced.args)
        (got,) = cpu.compile_graph(graph, cpu.DiskCache(tmp_path))(traced.args)
    assert sum(emitted.values())
    assert np.isinf(want).any() and np.isnan(want).any()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-5 * float(np.abs(want[finite]).max()))


@pytest.mark.parametrize("target", with_parallel())
def test_infinities_and_nans_reach_the_outputs_the_direct_sum_gives_them(target, tmp_path, monkeypatch):
    """The transforms subtract inputs the direct sum only adds (inf - inf is NaN): a block
    with outputs that are not finite is computed again directly, as eager mode computes it."""
    use_target(target, monkeypatch)
    rng = np.random.default_rng(3)
    image = rng.standard_normal((2, 6, 8, 32)).astype(np.float32)
    image[0, 2, 3, 5] = np.inf
    image[0, 4, 6, :] = -np.inf
    image[1, 1, 1, 7] = np.nan
    image[1, 5, 0, 0] = 3e38  # finite, but its transformed sums overflow
    x = braze.tensor(image, device=braze.LAZY_CPU)
    w = braze.tensor(rng.standard_normal((3, 3, 32, 32)).astype(np.float32), device=braze.LAZY_CPU)
    traced = build_graph([braze.conv2d(x, w, padding="SAME")._value])
    EXECUTOR._live.clear()
    _agrees_with_infinities_and_nans(traced, tmp_path, monkeypatch)


@pytest.mark.parametrize("target", with_parallel())
def test_a_filter_gradient_over_infinities_and_nans_is_the_direct_sums(target, tmp_path, monkeypatch):
    """An input channel whose filter gradient is not finite is computed again directly."""
    use_target(target, monkeypatch)
    rng = np.random.default_rng(4)
    image = rng.standard_normal((2, 6, 8, 16)).astype(np.float32)
    image[0, 2, 3, 5] = np.inf
    image[1, 1, 1, 7] = np.nan
    cotangent = rng.standard_normal((2, 6, 8, 16)).astype(np.float32)
    cotangent[:, :, :, 3] = np.abs(cotangent[:, :, :, 3])  # one sign: inf times it stays inf
    x = braze.tensor(image, device=braze.LAZY_CPU)
    w = braze.tensor(rng.standard_normal((3, 3, 16, 16)).astype(np.float32), device=braze.LAZY_CPU)
    g = braze.tensor(cotangent, device=braze.LAZY_CPU)
    gradient = braze.grad(lambda w: (braze.conv2d(x, w, padding="SAME") * g).sum())(w)
    traced = build_graph([gradient._value])
    EXECUTOR._live.clear()
    _agrees_with_infinities_and_nans(traced, tmp_path, monkeypatch)
