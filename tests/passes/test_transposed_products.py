"""Products read only through a transpose, at random sizes and layouts (each operand's
contracting dimension first or last, two contracting dimensions): folded into the product
(no transpose left), and the compiled kernels compute what the reference interpreter
computes from the graph as written."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from random_graphs import assert_matches_reference, compiled_batches, make

from braze.backends import cpu
from braze.ir.dtypes import float32, float64
from braze.ir.graph import Graph, parameter
from braze.ir.primitive import Aval
from braze.ir.prims.structural import transpose

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")


@st.composite
def transposed_products(draw) -> Graph:
    dtype = draw(st.sampled_from([float32, float64]))
    m, n, k, j = (draw(st.integers(1, 40)) for _ in range(4))
    depth = draw(st.sampled_from([(k,), (k, j)]))
    x_first, y_first = draw(st.booleans()), draw(st.booleans())
    x = parameter(0, Aval((*depth, m) if x_first else (m, *depth), dtype))
    y = parameter(1, Aval((*depth, n) if y_first else (n, *depth), dtype))
    lhs = tuple(range(len(depth))) if x_first else tuple(range(1, len(depth) + 1))
    rhs = tuple(range(len(depth))) if y_first else tuple(range(1, len(depth) + 1))
    product = make("dot_general", (x, y), lhs_contracting=lhs, rhs_contracting=rhs, lhs_batch=(), rhs_batch=())
    return Graph((x, y), (make("exp", (make("transpose", (product,), permutation=(1, 0)),)),))


@compiled_batches(30)
@given(transposed_products())
def test_transposed_products_fold_and_match_the_reference(tmp_path_factory, graph):
    optimized = cpu.optimize(graph, verify=True)
    inner = [n for k in optimized.nodes() if k.op.name == "fusion" for n in k.attr("computation").nodes()]
    assert not [n for n in inner if n.op is transpose]
    run = cpu.compile_graph(optimized, cpu.DiskCache(tmp_path_factory.mktemp("cache")))
    assert_matches_reference(graph, run, {"float32": 1e-5, "float64": 1e-12})
