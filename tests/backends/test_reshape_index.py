"""A reshape inside a fused loop maps the element's dimensions group by group
(braze/backends/cstyle/emitter.py): splitting, merging and regrouping dimensions, with
dimensions of size 1 on either side, read where NumPy reads, on the CPU backend and the
reference interpreter alike; and the grouping itself."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze.backends import cpu
from braze.backends.cpu import loops
from braze.backends.cstyle.emitter import reshape_groups
from braze.backends.reference.interpreter import evaluate
from braze.lazy import EXECUTOR, build_graph

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")

# (operand shape, reshaped shape, permutation after the reshape): the transpose gives the
# loop the element's dimensions, so the reshape maps dimensions rather than a flat offset.
CASES = [
    ((2, 5, 12), (2, 5, 3, 4), (0, 2, 1, 3)),  # heads out of channels
    ((2, 3, 4, 5), (6, 20), (1, 0)),  # merging on both sides
    ((2, 6), (3, 4), (1, 0)),  # a regrouping: no dimension maps alone
    ((1, 6, 1, 4), (6, 4, 1), (1, 0, 2)),  # size-one dimensions dropped
    ((6, 4), (1, 2, 3, 1, 4), (4, 1, 2, 0, 3)),  # size-one dimensions added
    ((3, 1, 8), (3, 2, 4), (2, 1, 0)),
    ((7,), (7, 1), (1, 0)),
    ((), (1, 1), (1, 0)),
]


@pytest.mark.parametrize("source, shape, permutation", CASES)
def test_a_reshaped_then_transposed_operand_reads_where_numpy_does(source, shape, permutation, tmp_path):
    rng = np.random.default_rng(len(source) * 7 + len(shape))
    value = rng.standard_normal(source).astype(np.float32)
    x = braze.tensor(value, device=braze.LAZY_CPU)
    result = braze.transpose(x.reshape(shape), permutation) * 2.0 + 1.0
    traced = build_graph([result._value])
    EXECUTOR._live.clear()
    graph = cpu.optimize(traced.graph)
    (got,) = cpu.compile_graph(graph, cpu.DiskCache(tmp_path))(traced.args)
    (reference,) = evaluate(graph, traced.args)
    want = np.transpose(value.reshape(shape), permutation) * np.float32(2.0) + np.float32(1.0)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(reference, want)


def test_a_parallel_loop_maps_the_same_positions(tmp_path, monkeypatch):
    monkeypatch.setattr(loops, "PARALLEL_MIN_ELEMENTS", 0)
    test_a_reshaped_then_transposed_operand_reads_where_numpy_does(*CASES[0], tmp_path)


def test_groups_pair_runs_of_equal_products():
    assert reshape_groups((12, 64, 128), (12, 64, 4, 32)) == [([0], [0]), ([1], [1]), ([2], [2, 3])]
    assert reshape_groups((2, 3, 4), (6, 4)) == [([0, 1], [0]), ([2], [1])]
    assert reshape_groups((2, 6), (3, 4)) == [([0, 1], [0, 1])]
    assert reshape_groups((1, 6, 1), (6,)) == [([1], [0])]
    assert reshape_groups((1, 1), ()) == []
    assert reshape_groups((0, 3), (3, 0)) is None  # empty: nothing to map


@pytest.mark.parametrize(
    "shape, positions, reshaped",
    [
        ((2, 3, 4, 1), (4,), (8, 2, 6, 1)),  # the last axis: l % 4
        ((2, 1), (1, 48), (96,)),  # l % 48
        ((1, 48), (2, 1), (96,)),  # l / 48
        ((2, 3, 1, 4), (4, 1), (8, 12)),  # l / 4 % 4 of the flat position
    ],
)
def test_a_float_iota_read_through_a_reshape_is_its_whole_position(shape, positions, reshaped, tmp_path):
    """An iota's position under a merging reshape may be an expression (``(l2) % 4``),
    cast to float as a whole: a cast binding tighter than the remainder was C that did
    not compile (a float remainder; a division would have been a fractional one)."""
    value = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    x = braze.tensor(value, device=braze.LAZY_CPU)
    count = int(np.prod(positions))
    iota = braze.arange(count, dtype=braze.float32, device=braze.LAZY_CPU).reshape(positions)
    result = (x + iota * 0.25).reshape(reshaped) * 2.0
    traced = build_graph([result._value])
    EXECUTOR._live.clear()
    graph = cpu.optimize(traced.graph)
    (got,) = cpu.compile_graph(graph, cpu.DiskCache(tmp_path))(traced.args)
    index = np.arange(count, dtype=np.float32).reshape(positions)
    want = ((value + index * np.float32(0.25)).reshape(reshaped) * np.float32(2.0)).astype(np.float32)
    np.testing.assert_array_equal(got, want)
