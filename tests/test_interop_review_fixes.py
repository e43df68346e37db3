"""NumPy interop at the edges a review found: boolean scalars as indices, bfloat16 values
made from NumPy data (initializers, ``strings.to_number``), DLPack export of bfloat16, and
unsigned integers past the dtype braze gives them. Each against NumPy, eagerly and lazily
(and compiled, for indexing)."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze.nn import initializers

DEVICES = [braze.CPU, braze.LAZY_CPU]
DEVICE_IDS = ["eager", "lazy"]


def _bf16_values(values: np.ndarray) -> np.ndarray:
    """``values`` rounded to bfloat16 (to nearest even), as float32."""
    return braze.tensor(np.asarray(values, np.float32)).astype("bfloat16").numpy()


# Boolean scalars as indices: NumPy's new axis of length 1 (True) or 0 (False) ------------

BOOL_INDICES = [
    True,
    False,
    np.bool_(True),
    np.bool_(False),
    np.array(True),
    (True, 0),
    (0, True),
    (1, True, 2),
    (0, False),
    (True, True),
    (True, None, False),
    (Ellipsis, True),
    (None, True, None),
    (False, Ellipsis, 2),
    (0, slice(None), True),  # the integer and True are array indices apart: their axis goes first
    (slice(1, None), True, slice(None, None, -1)),
    (True, [0, 1]),
    ([0, 1], True),
    (slice(None), True, [0, 2]),
    (True, [0, 1], [1, 2]),
    ([[0], [1]], True, [0, 1, 2]),
]


@pytest.mark.parametrize("index", BOOL_INDICES, ids=repr)
@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
def test_a_boolean_scalar_index_is_a_new_axis_of_length_one_or_zero_as_in_numpy(index, device):
    values = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    expected = values[index]
    got = braze.tensor(values, device=device)[index]
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got.numpy(), expected)


@pytest.mark.parametrize("index", [True, False, (True, 0), (0, slice(None), True), (True, [0, 1])], ids=repr)
def test_a_boolean_scalar_index_compiles_and_differentiates_as_numpy_reads_it(index):
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    expected = values[index]
    np.testing.assert_array_equal(braze.jit(lambda t: t[index])(braze.tensor(values)).numpy(), expected)
    grad = braze.grad(lambda t: (t[index] * 2.0).sum())(braze.tensor(values))
    selected = np.zeros_like(values)
    np.add.at(selected, index, 2.0)  # NumPy's own reading of the index, scattered
    np.testing.assert_array_equal(grad.numpy(), selected)


def test_a_boolean_scalar_index_keeps_numpys_errors():
    x = braze.tensor(np.zeros((3, 4), np.float32))
    with pytest.raises(IndexError, match="too many indices"):
        x[True, 0, 0, 0]  # True uses no axis, but three integers are one too many
    with pytest.raises(Exception, match=r"\(0,\) and \(2,\)"):
        x[False, [0, 1]]  # NumPy: the arrays (0,) and (2,) cannot broadcast


# bfloat16 from NumPy data: values, not their uint16 storage --------------------------------


def test_orthogonal_initializer_in_bfloat16_is_the_float32_matrix_rounded():
    half = initializers.Orthogonal(seed=0)((3, 3), dtype="bfloat16")
    full = initializers.Orthogonal(seed=0)((3, 3), dtype="float32")
    assert half.dtype == braze.bfloat16
    np.testing.assert_array_equal(half.numpy(), _bf16_values(full.numpy()))
    assert np.abs(half.numpy()).max() > 0.1  # was all zeros


@pytest.mark.parametrize("value", [0.5, np.full((2,), 0.3, np.float64), braze.tensor([0.5, 300.0])])
def test_a_function_initializer_in_bfloat16_keeps_its_values(value):
    init = initializers.get(lambda shape, dtype=None: value)
    got = init((2,), dtype="bfloat16")
    assert got.dtype == braze.bfloat16
    np.testing.assert_array_equal(got.numpy(), _bf16_values(np.broadcast_to(np.asarray(value), (2,))))


@pytest.mark.parametrize("name", ["ones", "glorot_uniform", "orthogonal"])
def test_make_weight_in_bfloat16_is_a_bfloat16_weight(name):
    weight = initializers.make_weight(name, (3, 3), dtype="bfloat16", generator=braze.Generator(0))
    values = initializers.get(name)((3, 3), "bfloat16", braze.Generator(0))
    assert weight.dtype == braze.bfloat16 and weight.requires_grad
    np.testing.assert_array_equal(weight.numpy(), values.numpy())


def test_strings_to_number_in_bfloat16_reads_the_values():
    strings = np.array([["1.5", "2.25"], ["300", "-0.0078125"]])
    got = braze.strings.to_number(strings, out_type="bfloat16")
    assert got.dtype == braze.bfloat16 and got.shape == (2, 2)
    np.testing.assert_array_equal(got.numpy(), _bf16_values(strings.astype(np.float64)))
    assert braze.strings.to_number(["7", "-3"], out_type="int64").tolist() == [7, -3]


# DLPack export of bfloat16 ---------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
def test_numpy_from_dlpack_of_bfloat16_raises_instead_of_giving_the_bit_patterns(device):
    t = braze.tensor([1.0, 2.5], dtype="bfloat16", device=device)
    # NumPy has no bfloat16: it refuses PyTorch's bfloat16 tensors with a BufferError too.
    with pytest.raises(BufferError, match=r"bfloat16.*t\.astype\('float32'\)"):
        np.from_dlpack(t)
    np.testing.assert_array_equal(np.from_dlpack(t.astype("float32")), [1.0, 2.5])  # the way the error names


def test_braze_from_dlpack_of_a_bfloat16_tensor_shares_it_as_bfloat16():
    t = braze.tensor([1.0, 2.5, -3.0], dtype="bfloat16")
    shared = braze.from_dlpack(t)
    assert shared.dtype == braze.bfloat16
    np.testing.assert_array_equal(shared.numpy(), [1.0, 2.5, -3.0])
    lazy = braze.tensor([1.5], dtype="bfloat16", device=braze.LAZY_CPU) * 2.0
    assert braze.from_dlpack(lazy).dtype == braze.bfloat16 and braze.from_dlpack(lazy).tolist() == [3.0]


# Unsigned integers past the dtype braze gives them ---------------------------------------


@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
@pytest.mark.parametrize(
    "value",
    [
        np.array([2**63 + 5], np.uint64),
        np.array([[1, 2**64 - 1]], np.uint64),
        np.array(2**63, np.uint64),
        np.uint64(2**63 + 5),  # a NumPy scalar gets int32, as a Python one does
        np.uint32(2**32 - 1),
        np.int64(2**40),
    ],
    ids=repr,
)
def test_an_integer_past_the_default_dtype_is_an_overflow_error_not_wrapped(value, device):
    with pytest.raises(OverflowError, match=rf"the integer {int(np.max(value))} is out of range for int(32|64)"):
        braze.tensor(value, device=device)


@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
def test_unsigned_integers_within_range_keep_their_values(device):
    for values in (
        np.array([0, 5, 2**63 - 1], np.uint64),
        np.array([0, 2**32 - 1], np.uint32),
        np.array([], np.uint64),
    ):
        t = braze.tensor(values, device=device)
        assert t.dtype == braze.int64  # braze has no unsigned dtypes: int64 holds every value here
        np.testing.assert_array_equal(t.numpy(), values.astype(np.int64))
    assert braze.tensor(np.uint32(7), device=device).tolist() == 7
    assert braze.tensor(np.array([2**63 + 5], np.uint64), dtype="float64").tolist() == [float(2**63 + 5)]


# NumPy's reductions called on a tensor (np.sum(t) calls t.sum(axis=..., dtype=..., out=...)).


@pytest.mark.parametrize("device", [braze.CPU, braze.LAZY_CPU], ids=["eager", "lazy"])
@pytest.mark.parametrize(
    "fn",
    [
        np.sum,
        np.mean,
        np.max,
        np.amax,
        np.min,
        np.amin,
        np.prod,
        np.var,
        lambda a: np.sum(a, axis=0),
        lambda a: np.sum(a, axis=1, keepdims=True),
        lambda a: np.max(a, axis=1),
        lambda a: np.mean(a, axis=0),
        lambda a: np.var(a, ddof=1),
        lambda a: np.sum(a, dtype=np.float64),
    ],
)
def test_numpy_reductions_of_a_tensor_match_numpy(fn, device):
    values = np.array([[1.0, -2.0], [3.5, 4.0]], np.float32)
    got = fn(braze.tensor(values, device=device))
    expected = fn(values)
    assert isinstance(got, braze.Tensor) and got.shape == np.shape(expected)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)


def test_numpy_reduction_keywords_braze_cannot_honour_are_refused():
    t = braze.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="out= is not supported"):
        np.sum(t, out=np.zeros(()))
    with pytest.raises(TypeError, match="where= is not supported"):
        np.sum(t, where=np.array([True, False]))
    with pytest.raises(TypeError, match="initial"):
        np.max(t, initial=0.0)
    assert np.sum(t, dtype=np.float64).dtype == braze.float64
    assert t.sum(0, True).shape == (1,)  # positional axis, keepdims unchanged


def test_asarray_rounds_values_into_bfloat16_not_their_bits():
    import braze.array_api as xp

    for data in ([1.5, 2.0, 300.0], np.array([1.5, 2.0, 301.0])):
        got = xp.asarray(data, dtype=braze.bfloat16)
        np.testing.assert_array_equal(np.asarray(got).astype(np.float32), [1.5, 2.0, 300.0])
