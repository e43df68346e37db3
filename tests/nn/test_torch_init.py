"""PyTorch's ``torch.nn.init`` (``braze.nn.init``): each random initializer's distribution
against the one PyTorch documents (its bounds exactly; its mean, variance and tail share
within 6 standard errors of the sample size, never tuned), seeded reproducibility, and the
filled tensor keeping its identity, dtype, device and requires_grad with no gradient
recorded."""

from __future__ import annotations

import math

import numpy as np
import pytest

import braze
from braze.ir.errors import DTypeError
from braze.nn import init

SHAPE = (128, 64, 3, 3)  # a conv weight (out, in, kh, kw): PyTorch's fan_in 576, fan_out 1152
FAN_IN, FAN_OUT = 64 * 9, 128 * 9
N = math.prod(SHAPE)
SIGMAS = 6.0


def _filled(fn, *args, **kwargs) -> np.ndarray:
    w = braze.zeros(SHAPE).requires_grad_()
    assert fn(w, *args, **kwargs) is w
    return w.numpy().astype(np.float64).ravel()


def _check_moments(values: np.ndarray, mean: float, var: float, fourth: float) -> None:
    """The sample mean and variance within 6 standard errors: sqrt(var / n) for the mean,
    sqrt((mu4 - var**2) / n) for the variance (mu4 the fourth central moment)."""
    n = values.size
    assert abs(values.mean() - mean) <= SIGMAS * math.sqrt(var / n)
    assert abs(values.var() - var) <= SIGMAS * math.sqrt((fourth - var**2) / n)


def _check_uniform(values: np.ndarray, low: float, high: float) -> None:
    """Within [low, high] as float32 rounds them, reaching both ends (the chance that no
    sample of n falls within 20/n of the width from an end is e^-20), uniform's moments."""
    assert values.min() >= np.float32(low) and values.max() <= np.float32(high)
    margin = 20.0 / values.size * (high - low)
    assert values.min() < low + margin and values.max() > high - margin
    width = high - low
    _check_moments(values, (low + high) / 2, width**2 / 12, width**4 / 80)


def _check_normal(values: np.ndarray, mean: float, std: float) -> None:
    """Normal moments (mu4 = 3 sigma^4), and the share beyond 2 sigma, 4.55%, within 6
    binomial standard errors: a uniform of the same variance has none there."""
    _check_moments(values, mean, std**2, 3 * std**4)
    tail = math.erfc(2 / math.sqrt(2))
    share = np.mean(np.abs(values - mean) > 2 * std)
    assert abs(share - tail) <= SIGMAS * math.sqrt(tail * (1 - tail) / values.size)


def test_uniform_and_normal():
    braze.manual_seed(0)
    _check_uniform(_filled(init.uniform_), 0.0, 1.0)
    _check_uniform(_filled(init.uniform_, -3.0, 0.5), -3.0, 0.5)
    _check_normal(_filled(init.normal_), 0.0, 1.0)
    _check_normal(_filled(init.normal_, mean=2.0, std=0.1), 2.0, 0.1)


def test_xavier_uses_pytorchs_fans():
    braze.manual_seed(1)
    bound = math.sqrt(6.0 / (FAN_IN + FAN_OUT))
    _check_uniform(_filled(init.xavier_uniform_), -bound, bound)
    _check_uniform(_filled(init.xavier_uniform_, gain=2.0), -2 * bound, 2 * bound)
    _check_normal(_filled(init.xavier_normal_, gain=0.5), 0.0, 0.5 * math.sqrt(2.0 / (FAN_IN + FAN_OUT)))


def test_kaiming_uses_the_gain_and_the_fan_of_its_mode():
    braze.manual_seed(2)
    # nn.Linear's and nn.Conv2d's default: a = sqrt(5), leaky_relu gives bound 1 / sqrt(fan_in)
    bound = 1 / math.sqrt(FAN_IN)
    _check_uniform(_filled(init.kaiming_uniform_, a=math.sqrt(5)), -bound, bound)
    bound = math.sqrt(2.0) * math.sqrt(3.0 / FAN_OUT)
    _check_uniform(_filled(init.kaiming_uniform_, mode="fan_out", nonlinearity="relu"), -bound, bound)
    std = math.sqrt(2.0 / (1 + 0.01**2)) / math.sqrt(FAN_IN)  # leaky_relu of slope 0.01 (a = 0)
    _check_normal(_filled(init.kaiming_normal_), 0.0, std)
    _check_normal(_filled(init.kaiming_normal_, mode="fan_out", nonlinearity="relu"), 0.0, math.sqrt(2 / FAN_OUT))


def _truncated_moments(mean: float, std: float, a: float, b: float) -> tuple[float, float, float]:
    """Mean, variance and fourth central moment of N(mean, std^2) truncated to [a, b], by
    the trapezoid rule on 200,001 points (relative error far below the test's 1e-3)."""
    x = np.linspace(a, b, 200_001)
    density = np.exp(-0.5 * ((x - mean) / std) ** 2)
    density /= np.trapezoid(density, x)
    m = np.trapezoid(x * density, x)
    return m, np.trapezoid((x - m) ** 2 * density, x), np.trapezoid((x - m) ** 4 * density, x)


@pytest.mark.parametrize("mean, std, a, b", [(0.0, 1.0, -2.0, 2.0), (1.0, 2.0, -1.0, 4.0), (0.0, 0.02, -0.03, 0.01)])
def test_trunc_normal_is_the_truncated_distribution(mean, std, a, b):
    braze.manual_seed(3)
    values = _filled(init.trunc_normal_, mean, std, a, b)
    assert values.min() >= np.float32(a) and values.max() <= np.float32(b)
    m, var, fourth = _truncated_moments(mean, std, a, b)
    _check_moments(values, m, var, fourth)


@pytest.mark.parametrize("shape", [(6, 10), (10, 6), (8, 4, 3)])
def test_orthogonal_rows_or_columns_are_orthonormal_times_the_gain(shape):
    w = braze.zeros(shape)
    init.orthogonal_(w, gain=2.0, generator=braze.Generator(4))
    matrix = w.numpy().astype(np.float64).reshape(shape[0], -1)  # PyTorch's: axis 0 against the rest
    gram = matrix @ matrix.T if matrix.shape[0] <= matrix.shape[1] else matrix.T @ matrix
    # float32 entries: each product to an ulp, a dot of a dozen of them to some ulp of 4
    np.testing.assert_allclose(gram, 4.0 * np.eye(len(gram)), atol=4e-6)


def test_calculate_gain_is_pytorchs_table():
    for name in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose2d", "sigmoid"):
        assert init.calculate_gain(name) == 1
    assert init.calculate_gain("tanh") == 5.0 / 3
    assert init.calculate_gain("relu") == math.sqrt(2.0)
    assert init.calculate_gain("leaky_relu") == math.sqrt(2.0 / (1 + 0.01**2))
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2.0 / 1.04)
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="unsupported nonlinearity"):
        init.calculate_gain("swish")
    with pytest.raises(ValueError, match="negative_slope"):
        init.calculate_gain("leaky_relu", True)


def test_deterministic_fills():
    w = braze.zeros((3, 5), dtype=braze.float64)
    np.testing.assert_array_equal(init.eye_(w).numpy(), np.eye(3, 5))
    np.testing.assert_array_equal(init.constant_(w, 0.25).numpy(), np.full((3, 5), 0.25))
    np.testing.assert_array_equal(init.ones_(w).numpy(), np.ones((3, 5)))
    np.testing.assert_array_equal(init.zeros_(w).numpy(), np.zeros((3, 5)))
    counts = braze.zeros((2, 2), dtype=braze.int32)
    assert init.constant_(counts, 7).dtype == braze.int32 and (counts.numpy() == 7).all()


# Seeds, dtypes, devices, gradients ----------------------------------------------------------------

RANDOM = [
    (init.uniform_, {}),
    (init.normal_, {}),
    (init.trunc_normal_, {}),
    (init.xavier_uniform_, {}),
    (init.xavier_normal_, {}),
    (init.kaiming_uniform_, {"a": math.sqrt(5)}),
    (init.kaiming_normal_, {}),
    (init.orthogonal_, {}),
]


@pytest.mark.parametrize("fn, kwargs", RANDOM, ids=[fn.__name__ for fn, _ in RANDOM])
def test_seeded_fills_repeat_and_unseeded_ones_advance(fn, kwargs):
    def fill(**extra):
        return fn(braze.zeros((5, 4)), **kwargs, **extra).numpy()

    np.testing.assert_array_equal(fill(generator=braze.Generator(7)), fill(generator=braze.Generator(7)))
    assert not np.array_equal(fill(generator=braze.Generator(7)), fill(generator=braze.Generator(8)))
    braze.manual_seed(11)
    first, second = fill(), fill()
    assert not np.array_equal(first, second)  # the default generator moved on
    braze.manual_seed(11)
    np.testing.assert_array_equal(fill(), first)


@pytest.mark.parametrize("fn, kwargs", RANDOM, ids=[fn.__name__ for fn, _ in RANDOM])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("device", ["cpu", "lazy"])
def test_a_fill_keeps_the_tensor_and_records_no_gradient(fn, kwargs, dtype, device):
    place = braze.LAZY_CPU if device == "lazy" else braze.CPU
    w = braze.zeros((5, 4), dtype=dtype, device=place).requires_grad_()
    assert fn(w, **kwargs, generator=braze.Generator(5)) is w
    assert w.dtype.name == dtype and w.device == place and w.shape == (5, 4)
    assert w.requires_grad and w.is_leaf and w.grad is None
    # the values of the eager CPU (they are drawn there); bfloat16's are float32's rounded
    reference = fn(braze.zeros((5, 4), dtype=dtype), **kwargs, generator=braze.Generator(5))
    np.testing.assert_array_equal(w.numpy(), reference.numpy())
    if dtype == "bfloat16":
        wide = fn(braze.zeros((5, 4)), **kwargs, generator=braze.Generator(5)).numpy()
        np.testing.assert_allclose(w.numpy(), wide, rtol=2**-8, atol=0)
    # nothing of the fill is on the gradient's path: d(sum(3 w))/dw is 3 exactly
    (w * 3.0).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((5, 4), 3.0))


def test_initializing_a_models_parameters_in_place():
    layer = braze.nn.Linear(4, 3)
    for p in layer.parameters():
        init.constant_(p, 0.5)
    assert all((p.numpy() == 0.5).all() for p in layer.parameters())
    np.testing.assert_allclose(layer(braze.ones((2, 4))).numpy(), np.full((2, 3), 2.5))


@pytest.mark.parametrize(
    "call,error,message",
    [
        (lambda: init.xavier_uniform_(braze.zeros(5)), ValueError, "at least 2 dimensions"),
        (lambda: init.kaiming_normal_(braze.zeros((3, 4)), mode="fan_avg"), ValueError, "fan_avg"),
        (lambda: init.eye_(braze.zeros((2, 2, 2))), ValueError, "2 dimensions"),
        (lambda: init.orthogonal_(braze.zeros(3)), ValueError, "2 or more"),
        (lambda: init.normal_(braze.zeros(3, dtype="int32")), DTypeError, "floating"),
        (lambda: init.uniform_(np.zeros(3)), TypeError, "braze Tensor"),
    ],
)
def test_bad_calls_name_the_problem(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_initializing_under_jit_is_an_error_not_a_constant_of_the_compiled_function():
    w = braze.tensor(np.zeros((3, 4), np.float32), requires_grad=True)

    def reset():
        init.normal_(w, 0.0, 0.02)

    with pytest.raises(braze.TraceError, match="initialize outside @jit"):
        braze.jit(reset)()
