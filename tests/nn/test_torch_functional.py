"""PyTorch's torch.nn.functional names in braze.nn.functional (braze.nn.torch_functional)
against NumPy transcriptions of PyTorch's documented formulas, eagerly, on the lazy device
and under braze.jit; the derivatives PyTorch chooses at kinks; gradients against float64
central finite differences."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from gradcheck import assert_gradients_match
from torch_references import MODES, adaptive_avg_pool2d, assert_within_rounding, conv2d, pool2d

import braze
from braze.nn import functional as F

RNG = np.random.default_rng(1)


def run(mode: str, fn, *arrays: np.ndarray) -> np.ndarray:
    """``fn`` of the arrays as tensors: eagerly, on the lazy CPU, or compiled by braze.jit."""
    device = braze.LAZY_CPU if mode == "lazy" else braze.CPU
    tensors = [braze.tensor(a, device=device) for a in arrays]
    return (braze.jit(fn) if mode == "jit" else fn)(*tensors).numpy()


def floats(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


# Activations -------------------------------------------------------------------------------

ACTIVATIONS = {
    # name: (braze's call, PyTorch's documented formula)
    "relu": (F.relu, lambda x: np.maximum(x, 0)),
    "silu": (F.silu, lambda x: x / (1 + np.exp(-x))),
    "leaky_relu": (F.leaky_relu, lambda x: np.where(x > 0, x, 0.01 * x)),
    "leaky_relu_slope": (lambda x: F.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    "elu": (lambda x: F.elu(x, 0.5), lambda x: np.where(x > 0, x, 0.5 * np.expm1(x))),
    "softplus": (F.softplus, lambda x: np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20))))),
    "softplus_beta": (
        lambda x: F.softplus(x, beta=0.5, threshold=3),
        lambda x: np.where(0.5 * x > 3, x, np.log1p(np.exp(np.minimum(0.5 * x, 3))) / 0.5),
    ),
    "hardtanh": (lambda x: F.hardtanh(x, -2.0, 3.0), lambda x: np.clip(x, -2.0, 3.0)),
    "tanh": (F.tanh, np.tanh),
    "sigmoid": (F.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activations_follow_pytorchs_formulas(name, mode):
    fn, formula = ACTIVATIONS[name]
    x = floats(4, 50, scale=12)  # past softplus's threshold of 20 and far into the tails
    exact = formula(x.astype(np.float64))
    # A few elementary operations, each within a rounding or two of the argument's scale
    # (a softplus's beta * x is rounded first: u |beta x| on a slope below 1).
    assert_within_rounding(run(mode, fn, x), exact, 1 + abs(x), 8)


@pytest.mark.parametrize(
    ("fn", "slopes"),
    [
        # PyTorch's derivatives at -1, 0 and 1 (and at hardtanh's bounds -1 and 1: 0).
        (F.relu, [0.0, 0.0, 1.0]),
        (F.leaky_relu, [0.01, 0.01, 1.0]),
        (F.elu, [math.exp(-1), 1.0, 1.0]),
        (F.hardtanh, [0.0, 1.0, 0.0]),
        (F.softplus, [1 / (1 + math.e), 0.5, 1 / (1 + math.exp(-1))]),
        (
            F.silu,
            [1 / (1 + math.e) * (1 - 1 / (1 + math.exp(-1))), 0.5, 1 / (1 + math.exp(-1)) * (1 + 1 / (1 + math.e))],
        ),
    ],
)
def test_derivatives_at_the_kinks_are_pytorchs(fn, slopes):
    grad = braze.grad(lambda x: fn(x).sum())(braze.tensor(np.array([-1.0, 0.0, 1.0])))
    np.testing.assert_allclose(grad.numpy(), slopes, rtol=1e-15, atol=1e-15)


def test_softplus_past_the_threshold_has_a_finite_gradient():
    grad = braze.grad(lambda x: F.softplus(x, beta=10.0, threshold=5.0).sum())(braze.tensor(np.array([1e3, -1e3])))
    np.testing.assert_array_equal(grad.numpy(), [1.0, 0.0])


@pytest.mark.parametrize("mode", MODES)
def test_softmax_and_log_softmax_over_dim(mode):
    x = floats(3, 4, 5, scale=5).astype(np.float64)
    shifted = x - x.max(1, keepdims=True)
    total = np.exp(shifted).sum(1, keepdims=True)
    np.testing.assert_allclose(run(mode, lambda t: F.softmax(t, dim=1), x), np.exp(shifted) / total, rtol=1e-14)
    np.testing.assert_allclose(run(mode, lambda t: F.log_softmax(t, 1), x), shifted - np.log(total), atol=1e-14)


def test_softmax_takes_pytorchs_dtype_and_its_implicit_dim_with_a_warning():
    x = floats(2, 3, 4)
    assert F.softmax(braze.tensor(x), dim=-1, dtype=braze.float64).dtype == braze.float64
    with pytest.warns(UserWarning, match="Implicit dimension choice for log_softmax"):
        implicit = F.log_softmax(braze.tensor(x)).numpy()  # 3-D: PyTorch's legacy choice is dim 0
    np.testing.assert_array_equal(implicit, F.log_softmax(braze.tensor(x), 0).numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(F.softmax(braze.tensor(x[0])).numpy(), F.softmax(braze.tensor(x[0]), 1).numpy())


# Linear and dropout --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(5,), (3, 5), (2, 3, 5)])
def test_linear_multiplies_by_the_transposed_weight(shape):
    x, w, b = floats(*shape), floats(4, 5), floats(4)
    exact = x.astype(np.float64) @ w.T.astype(np.float64) + b
    magnitude = abs(x).astype(np.float64) @ abs(w).T + abs(b)
    got = F.linear(braze.tensor(x), braze.tensor(w), braze.tensor(b)).numpy()
    assert_within_rounding(got, exact, magnitude, 5 + 2)
    assert F.linear(braze.tensor(x), braze.tensor(w)).shape == (*shape[:-1], 4)
    with pytest.raises(ValueError, match="do not multiply"):
        F.linear(braze.tensor(x), braze.tensor(w.T))


def test_dropout_scales_the_kept_and_is_the_identity_outside_training():
    x = np.ones((100, 100), np.float32)
    t = braze.tensor(x)
    assert F.dropout(t, 0.3, training=False) is t and F.dropout(t, 0.0) is t
    dropped = F.dropout(t, 0.3, generator=braze.Generator(5)).numpy()
    assert set(np.unique(dropped)) == {0.0, np.float32(1 / 0.7)}
    # Kept with probability 0.7: the share within 5 standard deviations of it.
    assert abs((dropped != 0).mean() - 0.7) < 5 * math.sqrt(0.7 * 0.3 / x.size)
    again = F.dropout(t, 0.3, generator=braze.Generator(5)).numpy()
    np.testing.assert_array_equal(again, dropped)  # a generator's draws are reproducible
    np.testing.assert_array_equal(F.dropout(t, 1.0).numpy(), 0.0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(t, -0.1)


# Convolution and pooling, functionally ---------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_conv2d_and_pooling_functions_with_pytorchs_defaults(mode):
    x, w = floats(2, 3, 7, 6), floats(4, 3, 2, 2)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    got = run(mode, lambda a, b: F.conv2d(a, b, stride=2, padding=1), x, w)
    pads = ((1, 1), (1, 1))
    assert_within_rounding(
        got, conv2d(x64, w64, None, (2, 2), pads), conv2d(abs(x64), abs(w64), None, (2, 2), pads), 14
    )
    # stride defaults to the kernel size
    np.testing.assert_array_equal(
        run(mode, lambda a: F.max_pool2d(a, 2), x), pool2d(x64, "max", (2, 2), (2, 2), (0, 0))
    )
    got = run(mode, lambda a: F.avg_pool2d(a, (2, 3)), x)
    exact = pool2d(x64, "avg", (2, 3), (2, 3), (0, 0))
    assert_within_rounding(got, exact, pool2d(abs(x64), "avg", (2, 3), (2, 3), (0, 0)), 8)
    got = run(mode, lambda a: F.adaptive_avg_pool2d(a, (4, 4)), x)
    assert_within_rounding(got, adaptive_avg_pool2d(x64, 4, 4), adaptive_avg_pool2d(abs(x64), 4, 4), 7 + 6 + 4)


def test_unbatched_images_pool_as_a_batch_of_one():
    x = floats(3, 6, 6)
    for fn in (lambda t: F.max_pool2d(t, 3, 1, 1), lambda t: F.avg_pool2d(t, 2), lambda t: F.adaptive_avg_pool2d(t, 4)):
        np.testing.assert_array_equal(fn(braze.tensor(x)).numpy(), fn(braze.tensor(x[None])).numpy()[0])


# pad, one_hot, normalize, cosine_similarity -------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("torch_mode", "numpy_mode"), [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")]
)
def test_pad_modes_are_numpys(torch_mode, numpy_mode, mode):
    x = floats(2, 3, 5, 4)
    # (left, right) of the last axis, then (top, bottom), then the channels'
    got = run(mode, lambda t: F.pad(t, (1, 3, 2, 0, 1, 2), mode=torch_mode), x)
    np.testing.assert_array_equal(got, np.pad(x, ((0, 0), (1, 2), (2, 0), (1, 3)), mode=numpy_mode))


@pytest.mark.parametrize("mode", MODES)
def test_constant_pad_fills_with_value_and_crops_where_negative(mode):
    x = floats(2, 4, 5)
    np.testing.assert_array_equal(run(mode, lambda t: F.pad(t, (2, 1)), x), np.pad(x, ((0, 0), (0, 0), (2, 1))))
    got = run(mode, lambda t: F.pad(t, (-1, 2, 1, -2), value=0.5), x)
    expected = np.pad(x, ((0, 0), (1, 0), (0, 2)), constant_values=0.5)[:, :-2, 1:]
    np.testing.assert_array_equal(got, expected)


def test_pad_refuses_what_pytorch_refuses():
    x = braze.tensor(floats(2, 3))
    with pytest.raises(ValueError, match="pairs"):
        F.pad(x, (1, 2, 3))
    with pytest.raises(ValueError, match="pairs"):
        F.pad(x, (1, 1, 1, 1, 1, 1))
    with pytest.raises(ValueError, match="too large"):
        F.pad(x, (3, 0), mode="reflect")  # reflecting needs more elements than the padding
    with pytest.raises(ValueError, match="doesn't take in value"):
        F.pad(x, (1, 1), mode="replicate", value=2.0)
    with pytest.raises(ValueError, match="mode must be one of"):
        F.pad(x, (1, 1), mode="symmetric")


def test_one_hot_is_int64_with_pytorchs_class_count():
    labels = np.array([[0, 3], [2, 1]])
    got = F.one_hot(braze.tensor(labels))
    assert got.dtype == braze.int64 and got.shape == (2, 2, 4)  # num_classes=-1: the largest label plus one
    np.testing.assert_array_equal(got.numpy(), np.eye(4, dtype=np.int64)[labels])
    np.testing.assert_array_equal(F.one_hot(braze.tensor(labels), 6).numpy(), np.eye(6, dtype=np.int64)[labels])
    with pytest.raises(TypeError, match="index tensors"):
        F.one_hot(braze.tensor([0.0, 1.0]))


def numpy_normalize(x, p, dim, eps):
    """``x / max(||x||_p, eps)`` along ``dim``."""
    norm = np.abs(x).max(dim, keepdims=True) if p == math.inf else (np.abs(x) ** p).sum(dim, keepdims=True) ** (1 / p)
    return x / np.maximum(norm, eps)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("p", "dim"), [(2.0, 1), (1.0, 0), (math.inf, 1), (3.0, -1)])
def test_normalize_divides_by_the_p_norm(p, dim, mode):
    x = floats(4, 6).astype(np.float64)
    x[2] = 0.0  # a zero vector stays zero
    got = run(mode, lambda t: F.normalize(t, p=p, dim=dim), x)
    np.testing.assert_allclose(got, numpy_normalize(x, p, dim, 1e-12), rtol=1e-13, atol=1e-300)
    tiny = np.full((1, 3), 1e-14)
    np.testing.assert_allclose(F.normalize(braze.tensor(tiny)).numpy(), tiny / 1e-12, rtol=1e-15)  # norm below eps


def test_normalize_of_a_zero_vector_has_pytorchs_gradient_1_over_eps():
    # The norm's gradient at zero is 0, so only the division by eps remains (PyTorch's).
    cotangent = np.array([[1.0, -2.0, 3.0]])
    grad = braze.grad(lambda x: (F.normalize(x) * braze.tensor(cotangent)).sum())(braze.tensor(np.zeros((1, 3))))
    np.testing.assert_allclose(grad.numpy(), cotangent / 1e-12, rtol=1e-15)


def numpy_cosine_similarity(a, b, dim, eps):
    """PyTorch's: each vector divided by its norm, at least eps, then their dot product."""
    a, b = np.broadcast_arrays(a, b)
    a = a / np.maximum(np.sqrt((a * a).sum(dim, keepdims=True)), eps)
    b = b / np.maximum(np.sqrt((b * b).sum(dim, keepdims=True)), eps)
    return (a * b).sum(dim)


@pytest.mark.parametrize("mode", MODES)
def test_cosine_similarity_broadcasts_and_clamps_each_norm(mode):
    a, b = floats(3, 5, 2).astype(np.float64), floats(1, 5, 2).astype(np.float64)
    got = run(mode, F.cosine_similarity, a, b)
    np.testing.assert_allclose(got, numpy_cosine_similarity(a, b, 1, 1e-8), rtol=1e-13)
    got = run(mode, lambda s, t: F.cosine_similarity(s, t, dim=-1, eps=1e-3), a, b)
    np.testing.assert_allclose(got, numpy_cosine_similarity(a, b, -1, 1e-3), rtol=1e-13)
    # Each norm is clamped on its own: two vectors of norm 1e-5 are still parallel (1, not
    # 1e-10 / 1e-8), and a vector of norm 1e-9 against a unit one gives 1e-9 / 1e-8.
    small = np.array([[1e-5, 0.0], [1e-9, 0.0]])
    other = np.array([[1e-5, 0.0], [1.0, 0.0]])
    np.testing.assert_allclose(run(mode, F.cosine_similarity, small, other), [1.0, 0.1], rtol=1e-12)


# Gradients against float64 finite differences ---------------------------------------------------


def _f64(*shape, scale=1.0):
    return RNG.standard_normal(shape) * scale


def _batch_norm(x, w, b):
    return F.batch_norm(x, None, None, w, b, training=True)


GRADIENTS = {
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, (2, 1), 1, (1, 2)), [_f64(2, 3, 6, 7), _f64(4, 3, 3, 2), _f64(4)]),
    "conv2d_same": (lambda x, w: F.conv2d(x, w, padding="same"), [_f64(1, 2, 5, 4), _f64(3, 2, 2, 3)]),
    "conv2d_groups": (lambda x, w: F.conv2d(x, w, groups=2, padding=1), [_f64(2, 4, 5, 5), _f64(6, 2, 3, 3)]),
    "conv2d_depthwise": (lambda x, w: F.conv2d(x, w, stride=2, groups=3), [_f64(2, 3, 6, 5), _f64(6, 1, 2, 2)]),
    "max_pool2d": (lambda x: F.max_pool2d(x, 3, 2, 1), [_f64(2, 2, 7, 6)]),
    "max_pool2d_ceil": (lambda x: F.max_pool2d(x, 2, ceil_mode=True), [_f64(1, 2, 5, 5)]),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, 2, 1), [_f64(2, 2, 7, 6)]),
    "avg_pool2d_excluding_padding": (lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), [_f64(1, 2, 6, 6)]),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, (3, 4)), [_f64(2, 2, 7, 6)]),
    "adaptive_avg_pool2d_tiles": (lambda x: F.adaptive_avg_pool2d(x, (2, 3)), [_f64(2, 2, 6, 6)]),
    "batch_norm": (_batch_norm, [_f64(4, 3, 2, 2, scale=2), _f64(3), _f64(3)]),
    "pad_reflect": (lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"), [_f64(1, 2, 4, 5)]),
    "pad_replicate": (lambda x: F.pad(x, (0, 2, 3, 1), mode="replicate"), [_f64(1, 2, 4, 5)]),
    "pad_circular": (lambda x: F.pad(x, (1, 2, 2, 0), mode="circular"), [_f64(1, 2, 4, 5)]),
    "pad_constant_crop": (lambda x: F.pad(x, (-1, 2, 1, -1), value=1.5), [_f64(2, 4, 5)]),
    "linear": (F.linear, [_f64(3, 5), _f64(4, 5), _f64(4)]),
    "log_softmax": (lambda x: F.log_softmax(x, 1), [_f64(3, 5, 2, scale=3)]),
    "softplus": (lambda x: F.softplus(x, 2.0, 4.0), [_f64(4, 5, scale=3)]),
    "silu": (F.silu, [_f64(4, 5, scale=3)]),
    "elu": (F.elu, [_f64(4, 5, scale=3)]),
    "normalize": (lambda x: F.normalize(x, dim=0), [_f64(4, 5)]),
    "normalize_p3": (lambda x: F.normalize(x, p=3), [_f64(4, 5)]),
    "cosine_similarity": (F.cosine_similarity, [_f64(3, 5), _f64(3, 5)]),
}


@pytest.mark.parametrize("name", GRADIENTS)
def test_gradients_match_finite_differences(name):
    fn, arrays = GRADIENTS[name]
    assert_gradients_match(fn, arrays, list(range(len(arrays))), rtol=1e-5, atol=1e-7)
