"""Every public op against NumPy, and every differentiable op against finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_gradients_match
from op_cases import CASES

import braze
from braze.ops import tensorflow

GRAD_CASES = [c for c in CASES if c.grad]


def run_case(case, arrays, device=None):
    tensors = [braze.tensor(a, device=device) for a in arrays]
    return case.fn(*tensors)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_op_matches_numpy(case):
    arrays = case.inputs()
    out = run_case(case, arrays)
    expected = np.asarray(case.ref(*arrays))
    assert out.shape == expected.shape
    assert out.dtype.numpy == expected.dtype, f"{case.name}: {out.dtype} vs {expected.dtype}"
    # Sums of float32 products lose absolute precision with the size of their terms.
    scale = float(np.max(np.abs(expected), initial=1.0)) if expected.dtype.kind == "f" else 0.0
    np.testing.assert_allclose(out.numpy(), expected, rtol=case.rtol, atol=max(case.atol, case.rtol * scale))


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_op_gradient_matches_finite_differences(case):
    arrays = case.inputs(dtype_override="float64")
    wrt = [i for i, a in enumerate(arrays) if a.dtype == np.float64]
    assert_gradients_match(case.fn, arrays, wrt, rtol=1e-5, atol=1e-6)


def test_op_table_covers_the_public_ops():
    """A public op with no case in the table is untested: name it here or add a case."""
    tested_elsewhere = {
        "Generator",
        "manual_seed",
        "rand",
        "randn",
        "uniform",
        "normal_quantile",  # test_random
        "multinomial",  # test_torch_idioms
        "tensor",
        "as_tensor",
        "zeros",
        "ones",
        "full",
        "zeros_like",
        "empty",
        "ones_like",
        "full_like",
        "arange",  # test_creation
        "getitem",  # indexing cases
        "autocast",
        "is_autocast_enabled",
        "set_autocast",  # test_bfloat16
        "cat",  # test_torch_methods: PyTorch's name of concatenate
        *tensorflow.__all__,  # test_tf_api: TensorFlow's names for the ops above
    }
    names = {c.name.split("_")[0] for c in CASES} | {c.name for c in CASES}
    missing = [n for n in braze.ops.__all__ if n not in names and n not in tested_elsewhere]
    assert not missing, f"public ops without an op-table case: {missing}"


@pytest.mark.parametrize("device", ["cpu", "lazy"])
def test_take_from_an_empty_axis_is_empty_as_in_numpy(device):
    """No element to gather and no slice that fits: NumPy's empty result, not a gather error."""
    source = np.zeros((3, 0, 2), np.float32)
    index = np.zeros((0, 4), np.int64)
    got = braze.take(braze.tensor(source, device=device), braze.tensor(index, device=device), axis=1)
    assert got.shape == np.take(source, index, axis=1).shape
    along = braze.take_along_axis(braze.tensor(source, device=device), braze.tensor(np.zeros((3, 0, 2), np.int64)), 1)
    assert along.numpy().shape == np.take_along_axis(source, np.zeros((3, 0, 2), np.int64), 1).shape


@pytest.mark.parametrize("device", ["cpu", "lazy"])
def test_take_at_a_scalar_index_is_the_element_as_in_numpy(device):
    """A 0-d index gathers one element of no batch axes (its NumPy twin once failed to shape it)."""
    source = np.arange(12, dtype=np.float32).reshape(3, 4)
    for axis in (None, 0, 1):
        got = braze.take(braze.tensor(source, device=device), braze.tensor(np.array(2), device=device), axis=axis)
        np.testing.assert_array_equal(got.numpy(), np.take(source, np.array(2), axis=axis))


@pytest.mark.parametrize(
    ("subscripts", "shapes"),
    [
        ("bqd,bkd->bqk", [(2, 3, 4), (2, 5, 4)]),
        ("ae,pe->ap", [(3, 4), (5, 4)]),
        ("i,j->ij", [(3,), (4,)]),
        ("i,i->", [(4,), (4,)]),
        ("ab,cd->", [(2, 3), (4, 2)]),
        ("...ij,...jk->...ik", [(2, 3, 4, 5), (5, 2)]),
        ("ij,jk", [(2, 3), (3, 4)]),
        ("ijk", [(2, 3, 4)]),
        ("ij->ji", [(2, 3)]),
    ],
)
def test_einsum_matches_numpy(subscripts, shapes):
    rng = np.random.default_rng(len(subscripts))
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    np.testing.assert_allclose(
        braze.einsum(subscripts, *arrays).numpy(), np.einsum(subscripts, *arrays), rtol=1e-5, atol=1e-5
    )


def test_einsum_refuses_what_it_cannot_read():
    with pytest.raises(NotImplementedError, match="diagonal"):
        braze.einsum("ii->i", np.ones((2, 2)))
    with pytest.raises(ValueError, match="names 2 operands"):
        braze.einsum("ab,bc->ac", np.ones((2, 2)))
    with pytest.raises(braze.ShapeError, match="index 'b' is 3 in one operand, 4 in another"):
        braze.einsum("ab,bc->ac", np.ones((2, 3)), np.ones((4, 2)))


@pytest.mark.parametrize(("left", "right"), [((5, 3), (4, 3)), ((2, 1, 5, 3), (3, 4, 3)), ((5, 3), (2, 4, 3))])
def test_matmul_transposed_is_a_product_with_the_last_axes_swapped(left, right):
    """Attention's ``q @ k^T`` as one contraction of both last axes: NumPy's values with
    batch axes broadcast, eager and compiled, and float64 finite-difference gradients."""
    from braze.ops.linalg import matmul_transposed

    rng = np.random.default_rng(7)
    x, y = rng.standard_normal(left), rng.standard_normal(right)
    want = x @ np.swapaxes(y, -1, -2)
    np.testing.assert_allclose(matmul_transposed(braze.tensor(x), braze.tensor(y)).numpy(), want, rtol=1e-12)
    compiled = braze.jit(matmul_transposed)(braze.tensor(x), braze.tensor(y)).numpy()
    np.testing.assert_allclose(compiled, want, rtol=1e-12, atol=1e-12)
    assert_gradients_match(matmul_transposed, [x, y], wrt=(0, 1))


def test_matmul_transposed_names_what_does_not_fit():
    from braze.ops.linalg import matmul_transposed

    with pytest.raises(braze.ShapeError, match=r"contracting dimensions differ: \(5, 3\) @ \(3, 4\)\^T \(3 != 4\)"):
        matmul_transposed(braze.ones((5, 3)), braze.ones((3, 4)))
    with pytest.raises(braze.ShapeError, match=r"rank >= 2, got \(5, 3\) @ \(3,\)\^T"):
        matmul_transposed(braze.ones((5, 3)), braze.ones(3))
