"""A graph of many kernels: its entry function calls them through parts of a few calls each
(one long C function cost the compiler time growing faster than its length), kernels of one
structure share one C function, and the results and profiled times are those of every call."""

from __future__ import annotations

import re

import numpy as np
import pytest
from random_graphs import assert_matches_reference, splat

from braze.backends import cpu
from braze.backends.cpu.emit import CALLS_PER_FUNCTION
from braze.ir.dtypes import float32
from braze.ir.graph import Graph, Node, parameter
from braze.ir.primitive import PRIMITIVES, Aval

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")

LAYERS = 2 * CALLS_PER_FUNCTION + 5  # three parts, the last one short


def make(op: str, *inputs: Node, **attrs) -> Node:
    primitive = PRIMITIVES[op]
    return Node.make(primitive, inputs, attrs, primitive.shape_rule(*(i.aval for i in inputs), **attrs))


def deep_graph() -> Graph:
    """``LAYERS`` layers of tanh(0.05 * h @ w + x), one dot kernel with its epilogue each
    (contracting for weights in [-2, 2): rounding errors die out instead of growing)."""
    x, w = parameter(0, Aval((4, 8), float32)), parameter(1, Aval((8, 8), float32))
    h = x
    for _ in range(LAYERS):
        dot = make("dot_general", h, w, lhs_batch=(), lhs_contracting=(1,), rhs_batch=(), rhs_contracting=(0,))
        h = make("tanh", make("add", make("mul", dot, splat(0.05, dot.aval)), x))
    return Graph((x, w), (h,))


def test_many_kernels_run_in_order_through_the_entry_parts(tmp_path):
    optimized = cpu.optimize(deep_graph())
    executable = cpu.compile_graph(optimized, cpu.DiskCache(tmp_path))
    assert executable.plan.kernels == LAYERS
    assert_matches_reference(deep_graph(), executable, {"float32": 1e-5})
    parts = -(-LAYERS // CALLS_PER_FUNCTION)
    names = [re.search(r" void (\w+)\(", s).group(1) for s in executable.plan.kernel_sources]
    assert sum("_part" in name for name in names) == parts
    assert sum("_kernel" in name for name in names) <= 2  # the first layer reads x twice; then all alike
    assert executable.plan.entry_source.count("_part") == parts


def test_profiled_times_cover_every_kernel_call(tmp_path, monkeypatch):
    monkeypatch.setenv("BRAZE_PROFILE", "1")
    executable = cpu.compile_graph(cpu.optimize(deep_graph()), cpu.DiskCache(tmp_path))
    executable([np.ones((4, 8), np.float32), np.full((8, 8), 0.1, np.float32)])
    times = executable.kernel_seconds()
    assert len(times) == LAYERS and all(seconds > 0 for _, seconds in times)
