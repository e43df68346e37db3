"""braze.array_api against NumPy: the standard's promotion beside braze's own, in-place
operators and assignment, data-dependent functions, and the same program eagerly, on the
lazy CPU and under @jit."""

from __future__ import annotations

import numpy as np
import pytest

import braze
import braze.array_api as xp
from braze.array_api import Array


def test_a_tensor_names_the_namespace_and_its_results_are_arrays():
    t = braze.tensor([1.0, 2.0])
    assert t.__array_namespace__() is xp
    assert t.__array_namespace__(api_version="2023.12") is xp
    with pytest.raises(ValueError, match="2024.12"):
        t.__array_namespace__(api_version="2099.12")
    out = xp.exp(t)
    assert isinstance(out, Array) and isinstance(out, braze.Tensor)
    np.testing.assert_allclose(out.numpy(), np.exp([1.0, 2.0]), rtol=1e-6)


@pytest.mark.parametrize(
    ("left", "right", "promoted"),
    [
        ("int32", "int64", "int64"),
        ("float32", "float64", "float64"),
        ("float64", "float32", "float64"),
        ("bool", "bool", "bool"),
    ],
)
def test_arrays_of_one_kind_promote_as_the_standard_says(left, right, promoted):
    a = xp.asarray(np.array([1, 0, 1]).astype(left))
    b = xp.asarray(np.array([1, 1, 0]).astype(right))
    assert xp.result_type(a, b) is getattr(xp, promoted if promoted != "bool" else "bool")
    out = a == b
    assert out.dtype is xp.bool
    if promoted != "bool":
        total = a + b
        assert total.dtype.name == promoted
        np.testing.assert_array_equal(total.numpy(), np.array([2, 1, 1]).astype(promoted))


def test_kinds_do_not_mix_and_braze_tensors_keep_their_narrow_rule():
    with pytest.raises(TypeError, match="do not promote"):
        xp.add(xp.asarray([1, 2]), xp.asarray([1.0, 2.0]))
    with pytest.raises(TypeError):
        xp.asarray([True]) + 1
    f32, f64 = braze.tensor([1.0]), braze.tensor(np.array([1.0]))
    with pytest.raises(braze.DTypeError, match="dtypes differ"):
        f32 + f64  # braze's own operators: two dtypes never mix
    assert (xp.asarray(f32) + f64).dtype is xp.float64  # an Array on either side promotes
    assert (f32 + xp.asarray(f64)).dtype is xp.float64


def test_python_scalars_take_the_arrays_dtype():
    x = xp.asarray([1.5, 2.5], dtype=xp.float64)
    assert (x * 2).dtype is xp.float64 and (2 * x).dtype is xp.float64
    i = xp.asarray([3, 4], dtype=xp.int64)
    assert (i + 1).dtype is xp.int64
    assert (i // 2).tolist() == [1, 2]


def test_in_place_operators_keep_the_arrays_dtype_and_refuse_a_wider_result():
    x = xp.asarray([1.0, 2.0])
    alias = xp.positive(x)
    x += 1
    x *= xp.asarray([2.0, 3.0])
    assert x.tolist() == [4.0, 9.0] and alias.tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="in-place"):
        x += xp.asarray([1.0, 1.0], dtype=xp.float64)


@pytest.mark.parametrize(
    "key",
    [(slice(1, None), 2), (slice(None, None, -2), slice(None)), (Ellipsis, slice(3, 0, -1)), (1, None, 0), ()],
    ids=["row-slice", "reversed-stride", "ellipsis-reversed", "newaxis", "everything"],
)
def test_assignment_through_a_basic_key_matches_numpy(key):
    expected = np.arange(20, dtype=np.float32).reshape(4, 5)
    x = xp.asarray(expected.copy())
    value = np.float32(-1.0) * (1 + np.arange(expected[key].size, dtype=np.float32).reshape(expected[key].shape))
    x[key] = xp.asarray(value)
    expected[key] = value
    np.testing.assert_array_equal(x.numpy(), expected)


def test_assignment_and_selection_through_a_boolean_mask_match_numpy():
    values = np.array([[3.0, -1.0, 2.0], [0.5, -4.0, 7.0]], np.float32)
    mask = values > 1.0
    x = xp.asarray(values.copy())
    np.testing.assert_array_equal(x[xp.asarray(mask)].numpy(), values[mask])
    x[xp.asarray(mask)] = 0.0
    expected = values.copy()
    expected[mask] = 0.0
    np.testing.assert_array_equal(x.numpy(), expected)
    x[xp.asarray(~mask)] = xp.asarray([10.0, 20.0, 30.0])
    expected[~mask] = [10.0, 20.0, 30.0]
    np.testing.assert_array_equal(x.numpy(), expected)


def test_set_and_searching_functions_match_numpy():
    values = np.array([3.0, 1.0, np.nan, 3.0, -0.0, 0.0, np.nan], np.float64)
    x = xp.asarray(values)
    found = xp.unique_all(x)
    unique, first, inverse, counts = np.unique(
        values, return_index=True, return_inverse=True, return_counts=True, equal_nan=False
    )
    np.testing.assert_array_equal(found.values.numpy(), unique)
    np.testing.assert_array_equal(found.indices.numpy(), first)
    np.testing.assert_array_equal(found.inverse_indices.numpy(), inverse)
    np.testing.assert_array_equal(found.counts.numpy(), counts)
    assert [p.tolist() for p in xp.nonzero(xp.asarray([[0, 2], [3, 0]]))] == [[0, 1], [1, 0]]
    line = np.array([1.0, 2.0, 2.0, 5.0, np.nan])
    queries = np.array([[2.0, 0.0], [6.0, np.nan]])
    for side in ("left", "right"):
        got = xp.searchsorted(xp.asarray(line), xp.asarray(queries), side=side)
        np.testing.assert_array_equal(got.numpy(), np.searchsorted(line, queries, side=side))


def _program(x, y):
    """A mix of the standard's functions, the same eagerly and compiled."""
    z = xp.concat([xp.sin(x) * y, xp.cumulative_sum(x, axis=1)], axis=0)
    z = xp.where(z > 0.25, xp.log1p(xp.abs(z)), xp.expm1(z))
    ordered = xp.sort(z, axis=1, descending=True)
    return xp.sum(ordered * xp.tril(xp.ones_like(ordered)), axis=0) + xp.max(z) - xp.std(z, correction=1)


def test_the_same_program_on_the_lazy_cpu_and_under_jit_matches_eager():
    rng = np.random.default_rng(3)
    a, b = rng.uniform(-2, 2, (3, 4)).astype(np.float32), rng.uniform(-2, 2, (3, 4)).astype(np.float32)
    eager = _program(xp.asarray(a), xp.asarray(b)).numpy()
    lazy = _program(xp.asarray(a, device=braze.LAZY_CPU), xp.asarray(b, device=braze.LAZY_CPU)).numpy()
    jitted = braze.jit(_program)(xp.asarray(a), xp.asarray(b)).numpy()
    np.testing.assert_allclose(lazy, eager, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jitted, eager, rtol=1e-5, atol=1e-6)


def test_a_data_dependent_function_is_a_barrier_on_a_lazy_device_and_an_error_under_jit():
    x = xp.asarray([0.0, 1.5, 0.0, 2.0], device=braze.LAZY_CPU)
    before = braze.metrics.counter("DataDependentShape")
    (found,) = xp.nonzero(x * 2.0)
    assert found.device == braze.LAZY_CPU and found.tolist() == [1, 3]
    assert braze.metrics.counter("DataDependentShape") == before + 1
    with pytest.raises(braze.TraceError, match="nonzero: the shape of its result depends on the values"):
        braze.jit(lambda v: xp.nonzero(v)[0])(xp.asarray([1.0, 0.0]))
    with pytest.raises(braze.TraceError, match="boolean indexing"):
        braze.jit(lambda v: v[v > 0])(xp.asarray([1.0, -1.0]))


def test_gradients_flow_through_the_namespace_to_a_leaf_tensor():
    leaf = braze.tensor([0.5, -1.0, 2.0], requires_grad=True)
    loss = xp.sum(xp.sin(leaf) * xp.sort(leaf))
    loss.backward()
    x = np.array([0.5, -1.0, 2.0])
    order = np.argsort(x)
    sorted_x = x[order]
    expected = np.cos(x) * sorted_x
    expected[order] += np.sin(x)  # sorted_k is x[order[k]]: its factor sin(x_k) reaches x[order[k]]
    np.testing.assert_allclose(leaf.grad.numpy(), expected, rtol=1e-6)


def test_inspection_reports_braze_dtypes_and_devices():
    info = xp.__array_namespace_info__()
    assert info.default_dtypes()["real floating"] is xp.float32
    assert info.default_dtypes()["indexing"] is xp.int32
    assert set(info.dtypes(kind="numeric").values()) == {xp.int32, xp.int64, xp.float32, xp.float64}
    assert info.dtypes(kind="unsigned integer") == {}
    assert braze.LAZY_CPU in info.devices() and info.capabilities()["boolean indexing"]
    assert xp.finfo(xp.float32).eps == np.finfo(np.float32).eps and xp.iinfo(xp.int64).max == 2**63 - 1


@pytest.mark.parametrize("device", [braze.CPU, braze.LAZY_CPU], ids=["eager", "lazy"])
def test_take_and_take_along_axis_match_numpy_at_the_edges_of_each_dtype(device):
    floats = np.array([[np.nan, -0.0, np.inf], [-np.inf, 2.5, -1.0]], np.float32)
    ints = np.array([[np.iinfo(np.int64).min, 7, -3], [0, np.iinfo(np.int64).max, 1]], np.int64)
    flags = np.array([[True, False, False], [False, True, True]])
    indices = np.array([[2, 0], [-1, 1]], np.int64)
    along = np.array([[1, 1, 0], [0, 2, -3]])
    for values in (floats, ints, flags):
        x = xp.asarray(values, device=device)
        got = xp.take(x, xp.asarray(indices, device=device), axis=1).numpy()
        np.testing.assert_array_equal(got, np.take(values, indices, axis=1))
        assert np.signbit(got).tolist() == np.signbit(np.take(values, indices, axis=1)).tolist()
        got = xp.take_along_axis(x, xp.asarray(along, device=device), axis=1).numpy()
        np.testing.assert_array_equal(got, np.take_along_axis(values, along, axis=1))
        down = np.array([[1, 0, -1]])  # broadcasts along the other axis
        got = xp.take_along_axis(x, xp.asarray(down, device=device), axis=0).numpy()
        np.testing.assert_array_equal(got, np.take_along_axis(values, down, axis=0))


def test_integer_arrays_and_integers_index_as_numpy_does():
    values = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    x = xp.asarray(values)
    rows, cols = np.array([[1, 0], [-1, 1]]), np.array([2, -3])
    np.testing.assert_array_equal(x[xp.asarray(rows), xp.asarray(cols)].numpy(), values[rows, cols])
    np.testing.assert_array_equal(x[1, xp.asarray(cols), 3].numpy(), values[1, cols, 3])
    np.testing.assert_array_equal(x[xp.asarray([1, 0])].numpy(), values[[1, 0]])
    np.testing.assert_array_equal(x[:, xp.asarray([0])].numpy(), values[:, [0]])  # beside a slice: NumPy's rules
    with pytest.raises(IndexError, match="out of bounds"):
        x[xp.asarray([0]), 3]


def test_gradients_of_a_selection_add_up_at_the_positions_selected():
    leaf = braze.tensor([[0.5, -1.0, 2.0], [1.5, 3.0, -2.0]], requires_grad=True)
    weights = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
    picked = xp.take(leaf, xp.asarray([2, 0, 2]), axis=1)  # column 2 twice
    xp.sum(picked * xp.asarray(weights)).backward()
    expected = np.zeros((2, 3), np.float32)
    np.add.at(expected, (slice(None), [2, 0, 2]), weights)
    np.testing.assert_array_equal(leaf.grad.numpy(), expected)
