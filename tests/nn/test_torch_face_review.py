"""Review of braze's PyTorch CNN face against PyTorch 2.13: the discrepancies found, each
against an independent reference (a NumPy transcription of PyTorch's rule, float64 finite
differences, or values PyTorch 2.13 printed, noted where used), eagerly, on the lazy CPU
and under braze.jit. Each test failed before its fix."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_gradients_match
from torch_references import MODES, assert_within_rounding, pool2d, run_layer

import braze
from braze.nn import functional as F
from braze.nn.torch_layers import AvgPool2d

RNG = np.random.default_rng(11)


def run(mode: str, fn, *arrays: np.ndarray) -> np.ndarray:
    """``fn`` of the arrays as tensors: eagerly, on the lazy CPU, or compiled by braze.jit."""
    device = braze.LAZY_CPU if mode == "lazy" else braze.CPU
    tensors = [braze.tensor(a, device=device) for a in arrays]
    return (braze.jit(fn) if mode == "jit" else fn)(*tensors).numpy()


def floats(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# avg_pool2d(ceil_mode=True) ----------------------------------------------------------------

CEIL_WINDOWS = {
    # name: (input shape, kernel, stride, padding)
    # 5 + 2 - 2 = 5 over stride 2: a third window past the padding, dropped (it would start there)
    "last window dropped": ((1, 2, 5, 5), (2, 2), (2, 2), (1, 1)),
    "overhang past the padding": ((2, 1, 6, 7), (3, 3), (2, 2), (1, 1)),
    "stride beyond the kernel": ((1, 2, 2, 3), (2, 2), (4, 4), (1, 1)),
    "rectangular": ((1, 1, 7, 8), (3, 2), (2, 3), (1, 1)),
    "no padding": ((1, 3, 7, 8), (3, 3), (4, 4), (0, 0)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("divisor", [None, 3])
@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("window", CEIL_WINDOWS.values(), ids=CEIL_WINDOWS.keys())
def test_avg_pool2d_ceil_mode_divides_as_pytorch(window, count_include_pad, divisor, mode):
    # PyTorch divides a window hanging over the padding by its cells within the padded image
    # (or within the image without count_include_pad), every other one by kH * kW.
    shape, kernel, stride, padding = window
    x = floats(*shape)
    got = run(mode, lambda t: F.avg_pool2d(t, kernel, stride, padding, True, count_include_pad, divisor), x)
    exact = pool2d(x.astype(np.float64), "avg", kernel, stride, padding, True, count_include_pad, divisor)
    assert got.shape == exact.shape
    magnitude = pool2d(abs(x).astype(np.float64), "avg", kernel, stride, padding, True, count_include_pad, divisor)
    # a window's sum (at most 9 terms), then a division or two
    assert_within_rounding(got, exact, magnitude, kernel[0] * kernel[1] + 3)


@pytest.mark.parametrize("mode", MODES)
def test_avg_pool2d_layer_takes_ceil_mode(mode):
    x = floats(2, 3, 5, 7)
    got = run_layer(mode, AvgPool2d(2, ceil_mode=True, count_include_pad=False), x)
    exact, magnitude = (pool2d(a.astype(np.float64), "avg", (2, 2), (2, 2), (0, 0), True, False) for a in (x, abs(x)))
    assert got.shape == exact.shape == (2, 3, 3, 4)  # 5 x 7 pooled by 2, the last row and column hanging over
    assert_within_rounding(got, exact, magnitude, 6)


def test_avg_pool2d_ceil_mode_gradient_is_finite_differences():
    x = RNG.standard_normal((1, 2, 5, 6))
    assert_gradients_match(lambda t: F.avg_pool2d(t, 3, 2, 1, True), [x], [0])
    assert_gradients_match(lambda t: F.avg_pool2d(t, 3, 2, 1, True, count_include_pad=False), [x], [0])


# pad: negative amounts in reflect, replicate and circular mode ------------------------------


def torch_pad_indices(size: int, before: int, after: int, mode: str) -> np.ndarray:
    """The input index of each output element along one axis, as PyTorch's kernels compute
    it. Reflection and replication (aten's ReflectionPad / ReplicationPad): output j reads
    ``ip`` of the padded layout, shifted by the crop, ``ip - max(0, before) + max(0, -before)``.
    Circular (aten's _pad_circular): the crop is taken first, then wrapped around."""
    out = size + before + after
    if mode == "circular":
        kept = np.arange(max(-before, 0), size - max(-after, 0))
        return kept[(np.arange(out) - max(before, 0)) % len(kept)]
    indices = []
    for j in range(out):
        if j < before:
            ip = 2 * before - j if mode == "reflect" else before
        elif j < size + before:
            ip = j
        else:
            ip = 2 * (size + before - 1) - j if mode == "reflect" else size + before - 1
        indices.append(ip - max(before, 0) + max(-before, 0))
    return np.array(indices)


NEGATIVE_PADS = [(-1, 2, 1, -2), (1, -3, -2, 3), (-2, -1, -1, -1), (3, -2, -1, 1)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pads", NEGATIVE_PADS, ids=str)
@pytest.mark.parametrize("pad_mode", ["reflect", "replicate", "circular"])
def test_pad_crops_where_negative_in_every_mode(pad_mode, pads, mode):
    x = floats(2, 3, 5, 6)
    got = run(mode, lambda t: F.pad(t, pads, mode=pad_mode), x)
    left, right, top, bottom = pads
    rows, cols = torch_pad_indices(5, top, bottom, pad_mode), torch_pad_indices(6, left, right, pad_mode)
    np.testing.assert_array_equal(got, x[:, :, rows][:, :, :, cols])


@pytest.mark.parametrize(
    ("pad_mode", "pads", "expected"),
    [
        # Printed by PyTorch 2.13 for F.pad(torch.arange(6.).reshape(1, 1, 6), pads, mode=...)
        ("reflect", (-3, 4), [3, 4, 5, 4, 3, 2, 1]),  # the reflection reads the cropped part
        ("reflect", (3, -5), [3, 2, 1, 0]),
        ("replicate", (-4, 5), [4, 5, 5, 5, 5, 5, 5]),
        ("replicate", (3, -5), [0, 0, 0, 0]),
        ("circular", (-1, 2), [1, 2, 3, 4, 5, 1, 2]),  # the wrap is of what the crop leaves
        ("circular", (2, -1), [3, 4, 0, 1, 2, 3, 4]),
        ("circular", (-3, -3), []),
    ],
)
def test_pad_with_negative_amounts_gives_pytorchs_values(pad_mode, pads, expected):
    got = F.pad(braze.tensor(np.arange(6.0, dtype=np.float32).reshape(1, 1, 6)), pads, mode=pad_mode)
    np.testing.assert_array_equal(got.numpy().reshape(-1), np.array(expected, np.float32))


@pytest.mark.parametrize("pad_mode", ["reflect", "replicate", "circular"])
def test_pad_with_negative_amounts_gradient_is_the_adjoint(pad_mode):
    # Each output element reads one input element: the gradient adds the cotangents of the
    # elements that read it (NumPy's add.at over PyTorch's index map).
    x, pads = floats(2, 5, 6), (-2, 3, 1, -3)
    rows, cols = torch_pad_indices(5, 1, -3, pad_mode), torch_pad_indices(6, -2, 3, pad_mode)
    cotangent = floats(2, len(rows), len(cols))
    grad = braze.grad(lambda t: (F.pad(t, pads, mode=pad_mode) * braze.tensor(cotangent)).sum())(braze.tensor(x))
    expected, magnitude = np.zeros(x.shape), np.zeros(x.shape)
    np.add.at(expected, (slice(None), rows[:, None], cols[None, :]), cotangent.astype(np.float64))
    np.add.at(magnitude, (slice(None), rows[:, None], cols[None, :]), abs(cotangent).astype(np.float64))
    assert_within_rounding(grad.numpy(), expected, magnitude, 4)  # at most 4 cotangents summed


def test_pad_refuses_crops_and_wraps_pytorch_refuses():
    x = braze.tensor(floats(1, 2, 6))
    with pytest.raises(ValueError, match="too large"):
        F.pad(x, (-3, 4), mode="circular")  # wraps around the 3 elements the crop leaves more than once
    with pytest.raises(ValueError, match="crops too much"):
        F.pad(x, (-3, -3), mode="reflect")  # PyTorch: "input (W: 6) is too small. Calculated output W: 0"
    with pytest.raises(ValueError, match="negative size"):
        F.pad(x, (-4, -3))  # PyTorch: "narrow(): length must be non-negative."; braze gave an empty axis


# Softmax of a 0-d tensor ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_softmax_of_a_scalar_is_over_its_one_element(mode):
    # PyTorch takes dim 0 (or -1) of a 0-d tensor as of one element: softmax 1, log_softmax 0.
    x = np.array(1.5, np.float32)
    for dim in (0, -1):
        got = run(mode, lambda t, dim=dim: F.softmax(t, dim), x)
        assert got.shape == () and got == 1.0
        got = run(mode, lambda t, dim=dim: F.log_softmax(t, dim), x)
        assert got.shape == () and got == 0.0


def test_softmax_implicit_dim_of_a_scalar_is_zero_and_constant():
    x = braze.tensor(np.array(-2.0, np.float32))
    with pytest.warns(UserWarning, match="Implicit dimension choice for log_softmax"):
        assert F.log_softmax(x).numpy() == 0.0
    assert braze.grad(lambda t: F.softmax(t, 0))(x).numpy() == 0.0


# Class losses: a -inf score on an ignored target's row ----------------------------------------


def masked_scores() -> tuple[np.ndarray, np.ndarray]:
    """Scores with -inf for masked classes: row 0's target is ignored and its classes 0 to 2
    are masked; row 2 keeps its target 2 with class 4 masked."""
    scores = floats(4, 5)
    scores[0, :3] = -np.inf
    scores[2, 4] = -np.inf
    return scores, np.array([-100, 1, 2, 3])


def class_losses_reference(scores: np.ndarray, labels: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """-w_y log softmax(x)_y per kept example; an ignored one's loss is 0 (PyTorch's)."""
    losses = np.zeros(len(labels))
    for n, y in enumerate(labels):
        if y != -100:
            row = scores[n].astype(np.float64)
            top = row.max()
            losses[n] = -weight[y] * (row[y] - top - np.log(np.exp(row - top).sum()))
    return losses


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("weighted", [False, True])
def test_masked_scores_of_an_ignored_target_are_left_out(weighted, loss, reduction, mode):
    scores, labels = masked_scores()
    weight = np.array([1.0, 2.0, 0.5, 3.0, 1.5], np.float32) if weighted else np.ones(5, np.float32)
    if loss == "nll_loss":  # log-probabilities, -inf where masked
        scores = scores - np.log(np.exp(scores.astype(np.float64)).sum(1, keepdims=True)).astype(np.float32)
    fn = getattr(F, loss)
    got = run(mode, lambda s, y, w: fn(s, y, w if weighted else None, reduction=reduction), scores, labels, weight)
    losses = class_losses_reference(scores, labels, weight)
    exact = {"none": losses, "sum": losses.sum(), "mean": losses.sum() / weight[labels[1:]].sum()}[reduction]
    assert np.all(np.isfinite(got))
    # a logsumexp of 5 terms and a difference per loss, then a sum of 4 and a division
    np.testing.assert_allclose(got, exact, rtol=1e-5, atol=1e-6)


def test_cross_entropy_mean_over_no_examples_is_nan():
    # PyTorch's mean over 0 examples is NaN, for probability targets as for class indices.
    empty = braze.tensor(np.zeros((0, 5), np.float32))
    assert np.isnan(F.cross_entropy(empty, braze.tensor(np.zeros((0, 5), np.float32))).numpy())
    assert np.isnan(F.cross_entropy(empty, braze.tensor(np.zeros((0,), np.int64))).numpy())
    assert F.cross_entropy(empty, braze.tensor(np.zeros((0, 5), np.float32)), reduction="sum").numpy() == 0.0


# Clear errors where PyTorch gives one ---------------------------------------------------------


def test_adaptive_avg_pool2d_refuses_an_output_size_not_a_pair():
    # PyTorch: "adaptive_avg_pool2d: output_size must be 2"; braze's was zip()'s message
    with pytest.raises(ValueError, match="output_size must be an int or a pair"):
        F.adaptive_avg_pool2d(braze.tensor(floats(1, 2, 6, 6)), (3, 5, 2))


def test_one_hot_of_nothing_needs_num_classes():
    # PyTorch: "Can not infer total number of classes from empty tensor."; braze gave (0, 0)
    with pytest.raises(ValueError, match="num_classes"):
        F.one_hot(braze.tensor(np.zeros((0,), np.int64)))
    assert F.one_hot(braze.tensor(np.zeros((0, 2), np.int64)), 3).shape == (0, 2, 3)


def test_batch_norm_function_refuses_momentum_none():
    # PyTorch: "batch_norm(): argument 'momentum' (position 7) must be float, not NoneType";
    # braze's was Python's "unsupported operand type(s) for -: 'int' and 'NoneType'"
    x, stats = braze.tensor(floats(4, 3)), braze.tensor(np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="momentum"):
        F.batch_norm(x, stats, braze.tensor(np.ones(3, np.float32)), training=True, momentum=None)
