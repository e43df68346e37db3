"""Values at the edges of the number line and of shapes (signed zeros, infinities, NaN, the
most negative integer, empty dimensions): eager, jitted and lazy results agree with each
other and with an independent reference (NumPy, or a plain-Python statement of the rule)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import braze

INT_MIN, INT_MAX = np.iinfo(np.int32).min, np.iinfo(np.int32).max


def eager_and_jit(fn, *args):
    """``fn``'s results (a list of NumPy arrays) run eagerly, under ``braze.jit`` and on the
    lazy device."""
    results = []
    for run, device in ((fn, None), (braze.jit(fn), None), (fn, "lazy")):
        out = run(*(a.to(device) if device else a for a in args))
        results.append([t.numpy() for t in (out if isinstance(out, tuple) else (out,))])
    return results


def assert_same_bits(got, want):
    """Equal values, NaNs in the same places (of either sign) and zeros of the same sign."""
    np.testing.assert_array_equal(got, want)
    number = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(want[number]))


@pytest.mark.parametrize(
    "fn",
    [lambda a: a + 0.0, lambda a: 0.0 + a, lambda a: a + braze.zeros_like(a), lambda a: a - (-0.0)],
    ids=["x+0", "0+x", "x+zeros", "x-(-0)"],
)
def test_adding_positive_zero_turns_negative_zero_positive(fn):
    values = np.array([-0.0, 0.0, -1.5, np.inf], np.float32)
    expected = values + np.float32(0.0)  # IEEE: -0.0 + 0.0 = +0.0
    for got in eager_and_jit(fn, braze.tensor(values)):
        assert_same_bits(got[0], expected)


@pytest.mark.parametrize("fn", [lambda a: a + (-0.0), lambda a: a - 0.0], ids=["x+(-0)", "x-0"])
def test_adding_negative_zero_keeps_every_value(fn):
    values = np.array([-0.0, 0.0, -1.5, np.inf], np.float32)
    for got in eager_and_jit(fn, braze.tensor(values)):
        assert_same_bits(got[0], values)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_power_by_a_scalar_half_is_c_pow(dtype):
    values = np.array([-0.0, -np.inf, 4.0, 0.25, np.inf, -4.0], dtype)
    with np.errstate(invalid="ignore"):
        # An exponent per element: NumPy's elementwise pow, which is C's.
        expected = np.power(values, np.full(values.shape, 0.5, dtype))
    for got in eager_and_jit(lambda a: a**0.5, braze.tensor(values)):
        assert_same_bits(got[0], expected)


def test_clip_with_crossed_bounds_gives_the_upper_bound():
    values = np.array([0.0, 1.5, 3.0], np.float32)
    for got in eager_and_jit(lambda a: braze.clip(a, 2.0, 1.0), braze.tensor(values)):
        np.testing.assert_array_equal(got[0], np.clip(values, 2.0, 1.0))


def reference_topk(row, k: int, largest: bool) -> list[int]:
    """The indices of torch.topk's rule: NaN above every number, then by value, of equal
    values the first first."""

    def key(i):
        nan = isinstance(row[i], float) and math.isnan(row[i])
        value = 0 if nan else row[i]
        return (not nan, -value, i) if largest else (nan, value, i)

    return sorted(range(len(row)), key=key)[:k]


def assert_topk_matches(matrix: np.ndarray, k: int, largest: bool) -> None:
    expected_indices = np.array([reference_topk(row.tolist(), k, largest) for row in matrix], np.int32)
    expected_values = np.take_along_axis(matrix, expected_indices, axis=1)
    for values, indices in eager_and_jit(lambda a: braze.topk(a, k, largest=largest), braze.tensor(matrix)):
        np.testing.assert_array_equal(indices, expected_indices)
        np.testing.assert_array_equal(values, expected_values)


@pytest.mark.parametrize("largest", [True, False])
def test_topk_takes_nan_as_the_largest(largest):
    rng = np.random.default_rng(0)
    pool = np.array([np.nan, np.inf, -np.inf, 0.0, 1.0, -1.0, 2.5], np.float32)
    matrix = rng.choice(pool, size=(16, 9))
    matrix[0] = np.nan
    matrix[1] = [np.nan, 3.0, np.nan, 5.0, -1.0, np.inf, np.inf, -np.inf, 0.0]
    assert_topk_matches(matrix, 9, largest)
    assert_topk_matches(matrix, 3, largest)


@pytest.mark.parametrize("largest", [True, False])
def test_topk_of_integers_at_their_extremes(largest):
    rng = np.random.default_rng(1)
    pool = np.array([INT_MIN, INT_MIN + 1, -1, 0, 1, INT_MAX - 1, INT_MAX], np.int32)
    assert_topk_matches(rng.choice(pool, size=(16, 7)), 7, largest)


def test_logsumexp_of_rows_with_infinities():
    matrix = np.array(
        [[-np.inf, -np.inf, -np.inf], [np.inf, 0.0, 1.0], [-np.inf, 0.0, 1.0], [1.0, 2.0, 3.0], [np.nan, 0.0, 1.0]],
        np.float32,
    )
    with np.errstate(invalid="ignore"):
        expected = np.logaddexp.reduce(matrix.astype(np.float64), axis=1)
    for got in eager_and_jit(lambda a: braze.logsumexp(a, axis=1), braze.tensor(matrix)):
        np.testing.assert_allclose(got[0], expected, rtol=1e-6)


@pytest.mark.parametrize(
    "shapes", [((3, 0), (0, 4)), ((0, 3, 4), (0, 4, 5)), ((2, 0, 3), (2, 3, 4)), ((2, 3), (3, 0))], ids=str
)
def test_matmul_with_an_empty_dimension(shapes):
    a, b = (np.ones(shape, np.float32) for shape in shapes)
    expected = np.matmul(a, b)
    for got in eager_and_jit(lambda x, y: x @ y, braze.tensor(a), braze.tensor(b)):
        assert got[0].shape == expected.shape
        np.testing.assert_array_equal(got[0], expected)
    lazy = braze.tensor(a, device="lazy") @ braze.tensor(b, device="lazy")
    np.testing.assert_array_equal(lazy.numpy(), expected)
    x, y = braze.tensor(a, requires_grad=True), braze.tensor(b, requires_grad=True)
    (x @ y).sum().backward()
    # d(sum(a @ b))/da = ones @ b^T, and so on: sums over the empty dimension are 0.
    np.testing.assert_array_equal(x.grad.numpy(), np.matmul(np.ones_like(expected), np.swapaxes(b, -1, -2)))
    np.testing.assert_array_equal(y.grad.numpy(), np.matmul(np.swapaxes(a, -1, -2), np.ones_like(expected)))


@pytest.mark.parametrize(
    "shapes", [((2, 7, 7, 3), (3, 3, 3, 0)), ((2, 7, 7, 0), (3, 3, 0, 4)), ((0, 7, 7, 3), (3, 3, 3, 4))], ids=str
)
def test_convolution_with_no_channels_or_images(shapes):
    rng = np.random.default_rng(2)
    x, w = (rng.random(shape, dtype=np.float32) for shape in shapes)
    expected_shape = (shapes[0][0], 5, 5, shapes[1][3])

    def loss(a, b):
        return braze.conv2d(a, b).sum() + (a * a).sum() + (b * b).sum()

    for got in eager_and_jit(lambda a, b: braze.conv2d(a, b), braze.tensor(x), braze.tensor(w)):
        assert got[0].shape == expected_shape
        np.testing.assert_array_equal(got[0], np.zeros(expected_shape, np.float32))
    # With no products, the gradients are those of the squares alone.
    for gx, gw in eager_and_jit(braze.grad(loss, argnums=(0, 1)), braze.tensor(x), braze.tensor(w)):
        np.testing.assert_allclose(gx, 2 * x, rtol=1e-6)
        np.testing.assert_allclose(gw, 2 * w, rtol=1e-6)


def test_eager_sum_along_a_strided_axis_keeps_float32_precision():
    values = np.full((1 << 18, 2), 1.0001, np.float32)
    exact = values.astype(np.float64).sum(axis=0)
    x = braze.tensor(values)
    # Accumulated in float64, the sum is its float32 rounding: within one float32 ulp.
    np.testing.assert_allclose(x.sum(axis=0).numpy(), exact, rtol=2.0**-23)
    np.testing.assert_allclose(x.mean(axis=0).numpy(), exact / values.shape[0], rtol=2.0**-22)
