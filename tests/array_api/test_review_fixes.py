"""The Array API namespace and its interop at the edges a review found: NumPy scalars as
operands, variances without degrees of freedom, ``copy=``, the dtype of arrays of arrays,
exact logarithms, jitted results, indexing keys, integers beyond a dtype, and ``__array__``.
Each against NumPy (or the standard's text), eagerly and, where it matters, compiled."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import braze
import braze.array_api as xp
from braze.array_api import Array

DEVICES = [braze.CPU, braze.LAZY_CPU]
DEVICE_IDS = ["eager", "lazy"]
COMPARISONS = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]


# NumPy scalars --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "scalar"),
    [
        (np.array([0, 1, 2], np.int32), np.int64(1)),
        (np.array([0, 1, 2], np.int32), np.int32(2)),
        (np.array([0, 1, 2], np.int64), np.uint8(2)),
        (np.array([0.5, 1.5, 2.5], np.float32), np.float32(1.5)),
        (np.array([0.5, 1.5, 2.5], np.float64), np.float32(1.5)),
    ],
)
def test_a_numpy_scalar_is_an_operand_as_the_python_scalar_of_its_kind(values, scalar):
    """A NumPy scalar takes the array's dtype as a Python number does (braze's own rule for
    its tensors): NumPy 2 on the Python number is the reference, both sides of each operator."""
    y = xp.asarray(values)
    number = scalar.item()
    for op in [*COMPARISONS, operator.add, operator.sub, operator.mul]:
        for got, expected in ((op(y, scalar), op(values, number)), (op(scalar, y), op(number, values))):
            assert isinstance(got, Array), op
            assert got.dtype.name == expected.dtype.name, op
            np.testing.assert_array_equal(got.numpy(), expected)


def test_a_numpy_bool_is_an_operand_of_a_bool_array():
    mask = xp.asarray([True, False])
    for got in (mask & np.bool_(True), np.bool_(True) & mask, mask == np.bool_(False)):
        assert isinstance(got, Array) and got.dtype is xp.bool
    assert (mask & np.bool_(True)).tolist() == [True, False]
    assert (mask == np.bool_(False)).tolist() == [False, True]
    with pytest.raises(TypeError):
        xp.asarray([1, 2]) + np.bool_(True)  # the standard mixes no kinds, a NumPy bool included


# var and std ----------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
def test_var_and_std_are_nan_where_no_degrees_of_freedom_are_left(device):
    """The standard: 'If N - correction is less than or equal to 0, the variance is NaN'
    (NumPy divides by zero there: inf, with a warning). Below that, NumPy's ddof."""
    values = np.array([[1.0, 2.0, 4.0], [3.0, -1.0, 0.5]], np.float32)
    x = xp.asarray(values, device=device)
    for correction in (0, 1, 2.5, 3, 4):
        expected = np.var(values, axis=1, ddof=correction) if correction < 3 else np.full(2, np.nan)
        for f, reference in ((xp.var, expected), (xp.std, np.sqrt(expected))):
            eager = f(x, axis=1, correction=correction).numpy()
            jitted = braze.jit(lambda v, f=f, c=correction: f(v, axis=1, correction=c))(x).numpy()
            np.testing.assert_allclose(eager, reference, rtol=1e-6)
            np.testing.assert_allclose(jitted, reference, rtol=1e-6)
    # braze's own var (ddof) is the same reduction
    assert np.isnan(braze.ops.var(x, axis=1, ddof=3).numpy()).all()
    assert np.isnan(braze.ops.var(xp.asarray([1.0, 2.0], device=device), ddof=5).item())


# copy= ----------------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
def test_copy_true_gives_an_array_that_a_write_into_the_numpy_buffer_does_not_reach(device):
    buffer = np.zeros(4, np.float32)
    shared = xp.asarray(buffer, device=device)  # copy=None shares the buffer
    copies = [
        xp.asarray(shared, copy=True),
        xp.astype(shared, xp.float32, copy=True),
        xp.reshape(shared, (2, 2), copy=True),
        xp.from_dlpack(buffer, copy=True),
    ]
    buffer[0] = 42.0
    assert shared.tolist()[0] == 42.0  # the premise: the first array shares the buffer
    for c in copies:
        assert isinstance(c, Array)
        np.testing.assert_array_equal(c.numpy().reshape(-1), np.zeros(4, np.float32))


def test_copy_true_keeps_the_gradient_path_to_a_leaf():
    leaf = braze.tensor([1.0, 2.0], requires_grad=True)
    xp.sum(xp.asarray(leaf, copy=True) * 3.0).backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [3.0, 3.0])


def test_copy_false_raises_where_a_copy_is_needed_and_shares_where_none_is():
    """The standard: copy=False 'must never copy', and raises a ValueError where it would have to."""
    buffer = np.ones(2, np.float32)
    with pytest.raises(ValueError, match="copy=False"):
        xp.from_dlpack(buffer, device=braze.LAZY_CPU, copy=False)  # another device is a copy
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray(xp.asarray(buffer), dtype=xp.float64, copy=False)
    shared = xp.from_dlpack(buffer, copy=False)
    same = xp.reshape(shared, (2, 1), copy=False)  # braze's reshapes never need a copy
    buffer[1] = 7.0
    assert shared.tolist() == [1.0, 7.0] and same.tolist() == [[1.0], [7.0]]


# asarray of arrays ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "items",
    [
        [np.asarray(2**40 + 1, np.int64)],
        [np.asarray(0.1, np.float64), np.asarray(0.2, np.float64)],
        [np.asarray(True), np.asarray(False)],
        [np.asarray([1, 2], np.int64), np.asarray([3, 4], np.int64)],
        [np.asarray(1, np.int32), np.asarray(2, np.int64)],
    ],
    ids=["int64", "float64", "bool", "rows", "promoted"],
)
def test_asarray_of_arrays_takes_their_promoted_dtype_as_numpy_does(items):
    got = xp.asarray([xp.asarray(i) for i in items])
    expected = np.asarray(items)
    assert got.dtype.name == expected.dtype.name
    np.testing.assert_array_equal(got.numpy(), expected)


# log2 and log10 -------------------------------------------------------------------------


def _powers(base: int, dtype: type) -> np.ndarray:
    """The powers of ``base`` a float of ``dtype`` holds exactly (and the floats nearest
    the negative powers of ten)."""
    if base == 2:
        info = np.finfo(dtype)
        return np.array([2.0**k for k in range(info.minexp - info.nmant, info.maxexp)], dtype)
    largest = 22 if dtype == np.float64 else 10
    return np.array([10.0**k for k in range(-largest, largest + 1)], dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("function", "base"), [(xp.log2, 2), (xp.log10, 10)], ids=["log2", "log10"])
def test_log2_and_log10_are_exact_at_powers_of_their_base(function, base, dtype):
    """At a power of the base the result is the integer (C's log2 and log10 give it; NumPy's
    float32 log10 misses 2.0 at 100), the same eagerly, on the lazy CPU and under @jit."""
    x = _powers(base, dtype)
    exponents = np.round(np.log(x.astype(np.float64)) / np.log(base)).astype(dtype)
    for got in (
        function(xp.asarray(x)),
        function(xp.asarray(x, device=braze.LAZY_CPU)),
        braze.jit(function)(xp.asarray(x)),
    ):
        np.testing.assert_array_equal(got.numpy(), exponents)
    assert xp.floor(function(xp.asarray(np.array([base**3], dtype)))).item() == 3


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("function", "reference"), [(xp.log2, np.log2), (xp.log10, np.log10)], ids=["log2", "log10"])
def test_log2_and_log10_are_accurate_off_the_powers_and_at_the_edges(function, reference, dtype):
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(1e-3, 1e3, 500), [0.0, -0.0, -1.0, np.inf, np.nan]]).astype(dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = reference(x.astype(np.float64))
    got = function(xp.asarray(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=4 * np.finfo(dtype).eps, atol=4 * np.finfo(dtype).eps)
    assert got.dtype == dtype


def test_the_derivative_of_log2_and_log10_is_the_quotients_at_and_off_the_powers():
    points = np.array([8.0, 7.3, 0.125, 1000.0, 1.0, 3e-5])
    h = 1e-6
    for function, reference in ((xp.log2, np.log2), (xp.log10, np.log10)):
        leaf = braze.tensor(points, requires_grad=True)
        xp.sum(function(leaf)).backward()
        numeric = (reference(points + h * points) - reference(points - h * points)) / (2 * h * points)
        np.testing.assert_allclose(leaf.grad.numpy(), numeric, rtol=1e-7)


# jit ------------------------------------------------------------------------------------


def test_a_jitted_function_returns_arrays_where_the_function_does():
    def f(x):
        return xp.sum(x * 2.0), (x + 1.0, braze.ops.exp(braze.tensor([0.0])))

    x = xp.asarray([1.0, 2.0])
    eager = f(x)
    jitted = braze.jit(f)
    for _ in range(2):  # the trace, then a cached call
        total, (shifted, plain) = jitted(x)
        assert type(total) is type(eager[0]) is Array and type(shifted) is Array
        assert type(plain) is type(eager[1][1]) is braze.Tensor
        assert total.item() == 6.0 and shifted.tolist() == [2.0, 3.0]
        assert (total + np.int64(1)).item() == 7.0  # the Array's own operators


# indexing -------------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
def test_integer_arrays_beside_slices_ellipsis_and_none_index_as_numpy_does(device):
    values = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = xp.asarray(values, device=device)
    plain = braze.tensor(values, device=device)
    i, j = np.array([2, 0]), np.array([[1], [-1]])
    keys = [
        (slice(None), i),
        (np.array([1, -2, 1]), Ellipsis),
        (Ellipsis, np.array([3, 1])),
        (None, 1, slice(None), np.array([3, 1])),
        (0, slice(None, None, -1), j),
        (slice(None), i, np.array([3, 0])),
    ]
    for key in keys:
        braze_key = tuple(xp.asarray(k, device=device) if isinstance(k, np.ndarray) else k for k in key)
        got = x[braze_key]
        assert isinstance(got, Array)
        np.testing.assert_array_equal(got.numpy(), values[key])
        np.testing.assert_array_equal(plain[braze_key].numpy(), values[key])  # as a plain Tensor does


@pytest.mark.parametrize("mask", [np.zeros(0, bool), np.zeros((3, 0), bool), np.zeros((0, 2), bool)])
def test_a_boolean_mask_axis_of_size_zero_selects_nothing_as_the_standard_and_numpy_say(mask):
    """The standard: 'The size of each dimension in B must equal the size of the
    corresponding dimension in A or be 0'; NumPy 2 agrees."""
    values = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    got = xp.asarray(values)[xp.asarray(mask)]
    assert got.shape == values[mask].shape
    np.testing.assert_array_equal(got.numpy(), values[mask])


@pytest.mark.parametrize("mask", [np.array([True, False]), np.ones((3, 1), bool), np.ones((3, 2, 1), bool)])
def test_a_boolean_mask_of_another_nonzero_size_is_an_index_error(mask):
    values = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    with pytest.raises(IndexError):
        values[mask]  # the premise: NumPy refuses it
    with pytest.raises(IndexError, match="does not fit"):
        xp.asarray(values)[xp.asarray(mask)]


# integers beyond a dtype ----------------------------------------------------------------


def test_arange_past_int32_is_int64_as_numpy_gives():
    for args in ((2**31, 2**31 + 2), (-(2**31) - 3, -(2**31)), (0, 2**40, 2**39)):
        got, expected = xp.arange(*args), np.arange(*args)
        assert got.dtype is xp.int64 and expected.dtype == np.int64
        np.testing.assert_array_equal(got.numpy(), expected)
    assert xp.arange(5).dtype is xp.int32


@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
@pytest.mark.parametrize("number", [2**40, -(2**40), 2**63, np.int64(2**32)], ids=str)
def test_an_integer_beyond_the_dtype_compares_exactly_as_in_numpy(number, device):
    values = np.array([-5, 0, 7], np.int32)
    exact = int(number)  # NumPy 2 compares a Python int exactly
    for make in (braze.tensor, xp.asarray):
        t = make(values, device=device)
        for op in COMPARISONS:
            for got, expected in ((op(t, number), op(values, exact)), (op(number, t), op(exact, values))):
                assert got.dtype.name == "bool"
                np.testing.assert_array_equal(got.numpy(), expected)
    jitted = braze.jit(lambda v: (v > number, number >= v))(xp.asarray(values))
    np.testing.assert_array_equal(jitted[0].numpy(), values > exact)
    np.testing.assert_array_equal(jitted[1].numpy(), exact >= values)


def test_arithmetic_with_an_integer_beyond_the_dtype_is_an_overflow_error_naming_it():
    for t in (braze.tensor([1, 2]), xp.asarray([1, 2])):
        for number in (2**40, np.int64(2**32)):  # NumPy would wrap the NumPy one around in silence
            with pytest.raises(OverflowError, match=r"out of range for int32 \(-2147483648 to 2147483647\)"):
                t + number
    assert (xp.asarray([1], dtype=xp.int64) + 2**40).tolist() == [2**40 + 1]


def test_equality_with_none_is_pythons_answer_not_an_error():
    for t in (braze.tensor([1.0, 2.0]), xp.asarray([1.0, 2.0])):
        assert (t == None) is False  # noqa: E711 - the operator itself is under test
        assert (t != None) is True  # noqa: E711
        assert t not in [None]


# __array__ ------------------------------------------------------------------------------


def test_numpy_asarray_with_copy_false_refuses_a_conversion_and_shares_otherwise():
    a = xp.asarray([1.0, 2.0])
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(a, dtype=np.float64, copy=False)
    assert np.shares_memory(np.asarray(a, copy=False), a.numpy())
    assert not np.shares_memory(np.asarray(a, copy=True), a.numpy())
    converted = np.asarray(a, dtype=np.float64)
    assert converted.dtype == np.float64 and converted.tolist() == [1.0, 2.0]
