"""Bad input raises an error that names the op, the offending shapes/dtypes and the user's line."""

from __future__ import annotations

import re

import numpy as np
import pytest

import braze

HERE = re.escape(__file__)


def test_shape_mismatch_names_op_shapes_and_line():
    a, b = braze.ones((3, 4)), braze.ones((5,))
    with pytest.raises(braze.ShapeError, match=rf"add: shapes \(3, 4\) and \(5,\) cannot be broadcast.*{HERE}:\d+"):
        a + b


def test_matmul_mismatch_names_both_shapes():
    with pytest.raises(braze.ShapeError, match=r"matmul: contracting dimensions differ: \(2, 3\) @ \(4, 5\)"):
        braze.ones((2, 3)) @ braze.ones((4, 5))


def test_conv2d_channel_mismatch():
    with pytest.raises(
        braze.ShapeError, match=r"conv2d: input \(1, 8, 8, 3\) has 3 channels but filter \(3, 3, 2, 4\)"
    ):
        braze.conv2d(braze.ones((1, 8, 8, 3)), braze.ones((3, 3, 2, 4)))


def test_bad_axis():
    with pytest.raises(braze.ShapeError, match=r"sum: axis 2 is out of range for a tensor of rank 2"):
        braze.ones((2, 3)).sum(axis=2)
    with pytest.raises(braze.ShapeError, match=r"softmax|max: axis -3 is out of range"):
        braze.softmax(braze.ones((2, 3)), axis=-3)


def test_dtype_mix_is_an_error_that_says_so():
    a = braze.ones((2,), dtype=braze.float32)
    b = braze.ones((2,), dtype=braze.float64)
    with pytest.raises(braze.DTypeError, match=r"multiply: dtypes differ: float32\(2,\) and float64\(2,\)"):
        a * b


def test_host_data_beside_a_float_tensor_takes_its_dtype_as_a_python_number_does():
    kernel = braze.ones((2, 3), dtype=braze.float32)
    mask = np.tril(np.ones((2, 3)))  # float64, as NumPy makes it
    product = kernel * mask
    assert product.dtype == braze.float32
    np.testing.assert_array_equal(product.numpy(), mask.astype(np.float32))
    np.testing.assert_allclose(([4, 9] ** braze.tensor(0.5)).numpy(), [2.0, 3.0])  # TensorFlow's list and variable
    with pytest.raises(braze.DTypeError, match="dtypes differ"):
        braze.ones((2,), dtype=braze.int32) * np.array([0.5, 1.5])  # an integer tensor takes no fractions
    kernel.assign(np.full((2, 3), 0.25))  # Keras's assign converts to the variable's dtype
    assert kernel.dtype == braze.float32 and kernel.numpy().tolist() == [[0.25] * 3] * 2


def test_unsupported_dtype():
    with pytest.raises(braze.DTypeError, match=r"tensor: unsupported dtype 'complex128'; braze supports bool, int32"):
        braze.tensor(np.array([1 + 2j]))
    with pytest.raises(braze.DTypeError, match=r"zeros: unsupported dtype 'float16'"):
        braze.zeros((2,), dtype="float16")


def test_float_op_on_integers():
    with pytest.raises(braze.DTypeError, match=r"exp: expected a float tensor, got int32\(3,\)"):
        braze.exp(braze.tensor([1, 2, 3]))


def test_reshape_error_names_shapes():
    with pytest.raises(braze.ShapeError, match=r"reshape: cannot reshape \(2, 3\) into \(4, -1\)|\(4, 2\)"):
        braze.ones((2, 3)).reshape(4, -1)


def test_index_out_of_range():
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 of size 3"):
        braze.ones((3,))[5]


def test_python_scalars_adopt_the_tensor_dtype():
    x = braze.ones((2,), dtype=braze.float64)
    assert (x * 2.5).dtype == braze.float64
    assert (braze.ones((2,), dtype=braze.int32) + 1).dtype == braze.int32
    assert (braze.ones((2,), dtype=braze.int32) * 0.5).dtype == braze.float32
