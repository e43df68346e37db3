"""PyTorch's tensor methods (braze.torch_methods) where a review against PyTorch found them
to differ: each against a NumPy transcription of PyTorch's documented rule, eagerly, on the
lazy device and compiled where that can differ."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze.ir.errors import DTypeError, ShapeError

A = (np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 11.5) * np.float32(0.75)
DEVICES = [braze.CPU, braze.LAZY_CPU]
DEVICE_IDS = ["eager", "lazy"]
EPS = float(np.finfo(np.float32).eps)


@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
def test_roll_adds_up_the_shifts_of_a_dim_given_twice(device):
    x = braze.tensor(A, device=device)
    # PyTorch and NumPy both shift a repeated dim by each of its shifts in turn.
    np.testing.assert_array_equal(x.roll((1, 2), (2, 2)).numpy(), np.roll(A, (1, 2), (2, 2)))
    np.testing.assert_array_equal(x.roll((1, -5, 7), (-1, 0, 2)).numpy(), np.roll(A, (1, -5, 7), (-1, 0, 2)))
    # A shift may be a 0-d tensor, as PyTorch's may.
    np.testing.assert_array_equal(x.roll(braze.tensor(1), 1).numpy(), np.roll(A, 1, 1))


@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
def test_flip_takes_its_dims_as_several_ints(device):
    x = braze.tensor(A, device=device)
    np.testing.assert_array_equal(x.flip(0, 2).numpy(), np.flip(A, (0, 2)))
    np.testing.assert_array_equal(x.flip(dims=[-1]).numpy(), np.flip(A, -1))
    np.testing.assert_array_equal(x.flip(()).numpy(), A)
    with pytest.raises(TypeError, match="flip\\(\\) missing dims"):
        x.flip()


@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
def test_index_select_reads_a_0d_index_as_a_vector_of_one(device):
    x = braze.tensor(A, device=device)
    got = x.index_select(1, braze.tensor(np.array(2, np.int64), device=device))
    assert got.shape == (2, 1, 4)  # PyTorch keeps the axis, of length 1
    np.testing.assert_array_equal(got.numpy(), A[:, [2]])


def test_gather_and_index_select_refuse_negative_indices_as_pytorch_does():
    # PyTorch's gather and index_select take indices in [0, size) only: -1 is an error
    # there, not the last element (NumPy's take_along_axis and take count from the end).
    x = braze.tensor(A)
    with pytest.raises(IndexError, match="gather: index -1 is out of bounds for axis 2 of size 4"):
        x.gather(2, np.full((2, 3, 1), -1, np.int64))
    with pytest.raises(IndexError, match="index_select: index -1 is out of bounds for axis 1 of size 3"):
        x.index_select(1, np.array([0, -1], np.int64))
    with pytest.raises(IndexError, match="index_select: index 3 is out of bounds"):
        x.index_select(-2, np.array([3], np.int64))
    np.testing.assert_array_equal(x.index_select(-1, np.array([3, 0])).numpy(), A[:, :, [3, 0]])


@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
def test_masked_select_needs_a_bool_mask(device):
    x = braze.tensor(A, device=device)
    # PyTorch refuses an integer mask; indexing by it would select rows by its values.
    for mask in ((A > 0).astype(np.int64), braze.tensor((A[0] > 0).astype(np.int32), device=device)):
        with pytest.raises(DTypeError, match="masked_select: the mask must be bool"):
            x.masked_select(mask)


def test_masked_select_by_a_constant_mask_compiles_as_indexing_by_it_does():
    mask = A[0] > 0
    got = braze.jit(lambda t: t.masked_select(mask))(braze.tensor(A))
    np.testing.assert_array_equal(got.numpy(), A[np.broadcast_to(mask, A.shape)])


@pytest.mark.parametrize("value", [2.5, 0.0])
@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
def test_nonzero_of_a_0d_tensor_is_pytorchs(value, device):
    a = np.array(value, np.float32)
    x = braze.tensor(a, device=device)
    # PyTorch's (count, rank) tensor is NumPy's argwhere, which takes a 0-d array: (1, 0) or (0, 0).
    found = x.nonzero(as_tuple=False)
    assert found.shape == np.argwhere(a).shape
    # Its tuple reads a 0-d tensor as a vector of one element (PyTorch's documented special case).
    (positions,) = x.nonzero(as_tuple=True)
    np.testing.assert_array_equal(positions.numpy(), np.nonzero(np.atleast_1d(a))[0])


@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
def test_logical_methods_read_any_dtype_as_true_where_nonzero(device):
    # PyTorch's logical ops take tensors of any dtype, as NumPy's do: nonzero (NaN too) is True.
    a = np.array([1.0, np.nan, -np.inf, 0.0, -0.0, 2.5], np.float32)
    b = np.array([0, 3, -1, 0, 7, 0], np.int64)
    x, y = braze.tensor(a, device=device), braze.tensor(b, device=device)
    np.testing.assert_array_equal(x.logical_and(y).numpy(), np.logical_and(a, b))
    np.testing.assert_array_equal(x.logical_or(y).numpy(), np.logical_or(a, b))
    np.testing.assert_array_equal(x.logical_xor(y).numpy(), np.logical_xor(a, b))
    np.testing.assert_array_equal(x.logical_not().numpy(), np.logical_not(a))
    np.testing.assert_array_equal(y.logical_not().numpy(), np.logical_not(b))
    masks = x > 0
    np.testing.assert_array_equal(masks.logical_xor(a < 2).numpy(), np.logical_xor(a > 0, a < 2))


def test_bmm_does_not_broadcast_its_batches():
    x = braze.tensor(A)
    # PyTorch's bmm needs batches of the same length (matmul broadcasts them).
    with pytest.raises(ShapeError, match="bmm: batches of 2 and 1 matrices"):
        x.bmm(braze.tensor(np.swapaxes(A[:1], 1, 2)))
    np.testing.assert_allclose(x.matmul(np.swapaxes(A[:1], 1, 2)).numpy(), A @ np.swapaxes(A[:1], 1, 2))


def _norm_gradient(a: np.ndarray, axis: int) -> np.ndarray:
    """d sum(norm(a, axis)) / d a: a / norm, and 0 where the norm is 0 (PyTorch's subgradient
    there; its backward masks the zero norms)."""
    norm = np.sqrt((a.astype(np.float64) ** 2).sum(axis, keepdims=True))
    return np.where(norm == 0, 0.0, a / np.where(norm == 0, 1.0, norm))


def _std_gradient(a: np.ndarray, axis: int) -> np.ndarray:
    """d sum(std(a, axis, ddof=1)) / d a: (a - mean) / ((n - 1) std), and 0 where the std is 0
    (PyTorch's std_backward masks a zero result)."""
    wide = a.astype(np.float64)
    centered = wide - wide.mean(axis, keepdims=True)
    std = np.sqrt((centered**2).sum(axis, keepdims=True) / (a.shape[axis] - 1))
    return np.where(std == 0, 0.0, centered / ((a.shape[axis] - 1) * np.where(std == 0, 1.0, std)))


ROWS = np.array(
    [[3.0, -4.0, 0.0, 12.0], [0.0, 0.0, 0.0, 0.0], [-0.0, 0.0, -0.0, 0.0], [2.5, 2.5, 2.5, 2.5]], np.float32
)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
def test_norm_and_std_differentiate_to_zero_where_they_are_zero(device, compiled):
    cases = [
        (lambda t: t.norm(dim=1).sum(), _norm_gradient(ROWS, 1)),
        (lambda t: t.norm(p="fro", dim=1).sum(), _norm_gradient(ROWS, 1)),
        (lambda t: t.std(dim=1).sum(), _std_gradient(ROWS, 1)),
        (lambda t: t[1:3].norm(), np.zeros(ROWS.shape)),  # the norm of zeros alone
    ]
    for loss, expected in cases:
        grad = braze.grad(loss)
        got = (braze.jit(grad) if compiled else grad)(braze.tensor(ROWS, device=device)).numpy()
        # The square root's inf times the sum's 0 would make the zero rows NaN.
        assert np.isfinite(got).all()
        # A sum of four squares, a square root and a division, each rounding once in float32.
        np.testing.assert_allclose(got, expected, rtol=8 * EPS, atol=8 * EPS)


@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
def test_new_tensors_take_pytorchs_dtype_and_device_keywords(device):
    x = braze.tensor(A)
    zeros = x.new_zeros(2, 3, dtype=braze.int64)
    assert zeros.dtype == braze.int64 and zeros.device == braze.CPU
    np.testing.assert_array_equal(zeros.numpy(), np.zeros((2, 3), np.int64))
    ones = x.new_ones((2,), device=device)
    assert ones.dtype == braze.float32 and ones.device == device
    full = x.new_full((3,), 1, dtype=braze.bool_, device=device)
    assert full.dtype == braze.bool_ and full.device == device and full.numpy().all()
    made = x.new_tensor([1, 2], dtype=braze.int32)
    assert made.dtype == braze.int32 and made.numpy().tolist() == [1, 2]
    assert x.new_zeros(()).dtype == braze.float32  # without them, this tensor's dtype


def test_narrow_and_mt_errors_name_what_was_asked():
    x = braze.tensor(A)
    with pytest.raises(IndexError, match="narrow: 1 elements from -4 do not fit in axis 1 of size 3"):
        x.narrow(1, -4, 1)  # the start as given, not as counted from the end
    with pytest.raises(IndexError, match="narrow: the length must not be negative, got -1"):
        x.narrow(1, 0, -1)
    with pytest.raises(ShapeError, match="mT: expects a matrix or a batch of them, got a tensor of rank 1"):
        _ = x[0, 0].mT
    np.testing.assert_array_equal(x.narrow(-1, -4, 4).numpy(), A)


def test_a_tie_in_max_along_a_dim_sends_the_gradient_to_the_returned_index():
    a = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], np.float32)
    for name, arg in (("max", np.argmax), ("min", np.argmin)):
        grad = braze.grad(lambda t, name=name: getattr(t, name)(dim=1).values.sum())(braze.tensor(a))
        expected = np.zeros_like(a)
        expected[np.arange(2), arg(a, axis=1)] = 1.0  # PyTorch's rule: all of it to the index returned
        np.testing.assert_array_equal(grad.numpy(), expected)
    kept = braze.tensor(a).max(dim=0, keepdim=True)
    assert kept.values.shape == kept.indices.shape == (1, 3)
    np.testing.assert_array_equal(kept.values.numpy(), a.max(0, keepdims=True))


def test_misread_calls_of_max_and_var_are_errors_naming_the_other_reading():
    x = braze.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(TypeError, match="braze.maximum"):
        x.max(x)
    with pytest.raises(TypeError, match="amax"):
        x.max(dim=(0, 1))
    with pytest.raises(TypeError):
        x.var(1, True)  # PyTorch's unbiased, NumPy's dtype: keepdims is a keyword
    with pytest.raises(TypeError, match="both ddof and correction"):
        x.var(ddof=1, correction=1)


def test_an_explicit_ddof_of_zero_is_kept_along_a_dim():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = braze.tensor(a)
    np.testing.assert_allclose(x.var(dim=1, ddof=0).numpy(), a.var(1), rtol=1e-6)
    np.testing.assert_allclose(x.std(dim=1).numpy(), a.std(1, ddof=1), rtol=1e-6)


def test_to_another_tensor_takes_its_dtype_and_device():
    x = braze.tensor(np.arange(3, dtype=np.float32))
    other = braze.tensor(np.zeros(1, np.int64), device=braze.LAZY_CPU)
    moved = x.to(other)
    assert moved.dtype == other.dtype and moved.device == other.device
    np.testing.assert_array_equal(moved.numpy(), [0, 1, 2])
