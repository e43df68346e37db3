"""gather and scatter_add's NumPy twins against XLA's definition, written out element by
element (the operational semantics of XLA's Gather and Scatter), clamping included; and
their shape rules' errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from braze.ir.dtypes import as_dtype, int32
from braze.ir.errors import DTypeError, ShapeError
from braze.ir.primitive import Aval
from braze.ir.prims.indexing import gather, scatter_add

RNG = np.random.default_rng(0)


def _start(indices, batch, index_map, operand_shape, sizes):
    start = [0] * len(operand_shape)
    for k, d in enumerate(index_map):
        start[d] = min(max(int(indices[(*batch, k)]), 0), operand_shape[d] - sizes[d])
    return start


def xla_gather(operand, indices, offset_dims, collapsed_slice_dims, start_index_map, slice_sizes):
    batch_shape = indices.shape[:-1]
    windows = [d for d in range(operand.ndim) if d not in collapsed_slice_dims]
    rank = len(batch_shape) + len(windows)
    shape, b, w = [], iter(batch_shape), iter(slice_sizes[d] for d in windows)
    for position in range(rank):
        shape.append(next(w) if position in offset_dims else next(b))
    out = np.zeros(shape, operand.dtype)
    for index in itertools.product(*(range(s) for s in shape)):
        batch = tuple(i for p, i in enumerate(index) if p not in offset_dims)
        offsets = dict(zip(windows, (index[p] for p in offset_dims), strict=True))
        start = _start(indices, batch, start_index_map, operand.shape, slice_sizes)
        out[index] = operand[tuple(start[d] + offsets.get(d, 0) for d in range(operand.ndim))]
    return out


def xla_scatter_add(updates, indices, shape, update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims):
    windows = [d for d in range(len(shape)) if d not in inserted_window_dims]
    sizes = [1] * len(shape)
    for d, p in zip(windows, update_window_dims, strict=True):
        sizes[d] = updates.shape[p]
    out = np.zeros(shape, updates.dtype)
    for index in itertools.product(*(range(s) for s in updates.shape)):
        batch = tuple(i for p, i in enumerate(index) if p not in update_window_dims)
        offsets = dict(zip(windows, (index[p] for p in update_window_dims), strict=True))
        start = _start(indices, batch, scatter_dims_to_operand_dims, shape, sizes)
        out[tuple(start[d] + offsets.get(d, 0) for d in range(len(shape)))] += updates[index]
    return out


CASES = [
    # rows of a table (an embedding lookup)
    ((6, 3), (2, 4, 1), {"offset_dims": (2,), "collapsed_slice_dims": (0,), "start_index_map": (0,)}, (1, 3)),
    # take_along_axis's form: every axis indexed, windows of one element
    ((3, 5), (3, 2, 2), {"offset_dims": (), "collapsed_slice_dims": (0, 1), "start_index_map": (0, 1)}, (1, 1)),
    # windows wider than one element, in two axes, placed between the batch axes
    ((5, 4, 3), (2, 3, 2), {"offset_dims": (1, 3), "collapsed_slice_dims": (0,), "start_index_map": (2, 0)}, (1, 4, 2)),
    # an index vector that skips an axis, which is taken whole
    ((4, 3, 5), (7, 1), {"offset_dims": (0, 1), "collapsed_slice_dims": (2,), "start_index_map": (2,)}, (4, 3, 1)),
]


@pytest.mark.parametrize("operand_shape, index_shape, dims, sizes", CASES)
def test_gather_and_scatter_add_follow_xla(operand_shape, index_shape, dims, sizes):
    operand = RNG.standard_normal(operand_shape)
    bound = max(operand_shape) + 2
    indices = RNG.integers(-2, bound, index_shape)  # repeats, and past both ends: clamped
    got = gather.impl(operand, indices, slice_sizes=sizes, **dims)
    want = xla_gather(operand, indices, slice_sizes=sizes, **dims)
    assert gather.shape_rule(
        Aval(operand.shape, None), Aval(indices.shape, int32), slice_sizes=sizes, **dims
    ).shape == (want.shape)
    np.testing.assert_array_equal(got, want)
    scatter = {
        "shape": operand_shape,
        "update_window_dims": dims["offset_dims"],
        "inserted_window_dims": dims["collapsed_slice_dims"],
        "scatter_dims_to_operand_dims": dims["start_index_map"],
    }
    updates = RNG.standard_normal(want.shape)
    np.testing.assert_allclose(
        scatter_add.impl(updates, indices, **scatter), xla_scatter_add(updates, indices, **scatter)
    )


ROWS = {"offset_dims": (1,), "collapsed_slice_dims": (0,), "start_index_map": (0,), "slice_sizes": (1, 3)}


@pytest.mark.parametrize(
    "index_aval, attrs, error, message",
    [
        (((4, 1), "float32"), ROWS, DTypeError, "indices must be integers"),
        (((4, 2), "int32"), ROWS, ShapeError, "needs 1 components"),
        (((4, 1), "int32"), {**ROWS, "slice_sizes": (2, 3)}, ShapeError, "collapsed axis 0 needs a window of size 1"),
        (((4, 1), "int32"), {**ROWS, "slice_sizes": (1, 9)}, ShapeError, "does not fit"),
        (((4, 1), "int32"), {**ROWS, "offset_dims": (0, 1)}, ShapeError, "1 window axes need 1 positions"),
    ],
)
def test_gather_shape_errors_name_the_problem(index_aval, attrs, error, message):
    shape, dtype = index_aval
    with pytest.raises(error, match=message):
        gather.shape_rule(Aval((6, 3), as_dtype("float32")), Aval(shape, as_dtype(dtype)), **attrs)
