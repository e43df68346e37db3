"""Products reading their operands through slices, reshapes and transposes
(passes/operand_views.py): chains of movement ops resolved to strided views as NumPy lays
out the same chain (or found not to be views where NumPy copies), and attention's head
split read in place by the CPU's products, against the reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from random_graphs import assert_matches_reference, compiled_batches, make

from braze.backends import cpu
from braze.ir.dtypes import float32, float64
from braze.ir.graph import Graph, parameter
from braze.ir.primitive import Aval
from braze.passes.operand_views import VIEW_OPS, strided_view
from braze.testing.generate import _factors


def _factorizations(draw, size: int) -> tuple[int, ...]:
    """A random shape of ``size`` elements (its prime factors grouped, ones inserted)."""
    factors = list(draw(st.permutations(_factors(size))))
    shape, k = [], 0
    while k < len(factors):
        take = draw(st.integers(1, len(factors) - k))
        shape.append(int(np.prod(factors[k : k + take])))
        k += take
    for _ in range(draw(st.integers(0, 1))):
        shape.insert(draw(st.integers(0, len(shape))), 1)
    return tuple(shape) or (1,)


@st.composite
def chains(draw):
    """A parameter of a random shape and a chain of up to five slices, reshapes and
    transposes above it, with the NumPy array each step gives."""
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=4)))
    node = parameter(0, Aval(shape, float32))
    array = np.arange(int(np.prod(shape))).reshape(shape)
    base = array
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["slice", "reshape", "transpose"]))
        if kind == "transpose":
            permutation = tuple(draw(st.permutations(range(array.ndim))))
            node, array = make("transpose", (node,), permutation=permutation), array.transpose(permutation)
        elif kind == "slice":
            starts = tuple(draw(st.integers(0, max(0, s - 1))) for s in array.shape)
            limits = tuple(draw(st.integers(a, s)) for a, s in zip(starts, array.shape, strict=True))
            steps = tuple(draw(st.integers(1, 3)) for _ in array.shape)
            node = make("slice", (node,), start_indices=starts, limit_indices=limits, strides=steps)
            array = array[tuple(slice(a, b, c) for a, b, c in zip(starts, limits, steps, strict=True))]
        else:
            new = _factorizations(draw, array.size) if array.size else (0,)
            node, array = make("reshape", (node,), new_sizes=new), array.reshape(new)
    return node, array, base


@given(chains())
def test_a_chain_is_the_strided_view_numpy_makes_or_none_where_numpy_copies(chain):
    node, array, base = chain
    view = strided_view(node, lambda n: n.op in VIEW_OPS)
    if view is None:
        # a reshape merged dimensions that do not nest: NumPy's result is a copy
        assert not np.shares_memory(array, base)
        return
    assert view.source.op.name == "parameter" and len(view.strides) == array.ndim
    if array.size:
        flat = base.reshape(-1)
        indices = np.indices(array.shape).reshape(array.ndim, -1)
        positions = view.offset + np.tensordot(np.array(view.strides), indices, axes=1)
        np.testing.assert_array_equal(flat[positions].reshape(array.shape), array)


def _split_heads(x, start: int, heads: int, width: int, order: tuple[int, ...]):
    """Rows of x (batch, time, channels) from channel ``start``: ``heads`` heads of ``width``
    channels each, as (batch, heads, time, width) or another ``order`` of those axes."""
    b, t, _ = x.aval.shape
    cut = make(
        "slice", (x,), start_indices=(0, 0, start), limit_indices=(b, t, start + heads * width), strides=(1, 1, 1)
    )
    return make("transpose", (make("reshape", (cut,), new_sizes=(b, t, heads, width)),), permutation=order)


@st.composite
def attention_graphs(draw) -> Graph:
    """Queries, keys and values sliced from one computed value (a product's result in a
    transformer), split into heads, and the two attention products over them."""
    dtype = draw(st.sampled_from([float32, float64]))
    batch, time, heads = draw(st.integers(1, 3)), draw(st.integers(8, 20)), draw(st.sampled_from([1, 2, 4]))
    width = draw(st.sampled_from([4, 8, 12]))
    x = parameter(0, Aval((batch, time, 3 * heads * width + 2), dtype))
    qkv = make("tanh", (x,))  # computed: a kernel's result, as the product's in a transformer
    q = _split_heads(qkv, 1, heads, width, (0, 2, 1, 3))
    keys_transposed = draw(st.booleans())  # k^T laid out by the transpose itself, or contracted as it lies
    k = _split_heads(qkv, 1 + heads * width, heads, width, (0, 2, 3, 1) if keys_transposed else (0, 2, 1, 3))
    v = _split_heads(qkv, 1 + 2 * heads * width, heads, width, (0, 2, 1, 3))
    batched = {"lhs_batch": (0, 1), "rhs_batch": (0, 1)}
    scores = make(
        "dot_general", (q, k), lhs_contracting=(3,), rhs_contracting=(2 if keys_transposed else 3,), **batched
    )
    weights = make("exp", (make("mul", (scores, make("tanh", (scores,)))),))
    out = make("dot_general", (weights, v), lhs_contracting=(3,), rhs_contracting=(2,), **batched)
    return Graph((x,), (out,))


needs_compiler = pytest.mark.skipif(not cpu.available(), reason="no C compiler")


@needs_compiler
@compiled_batches(25)
@given(attention_graphs())
def test_attention_products_read_the_heads_where_they_lie(tmp_path_factory, graph):
    optimized = cpu.optimize(graph, verify=True)
    loops = [k for k in optimized.nodes() if k.op.name == "fusion" and k.attr("kind") != "output"]
    split = [n for k in loops for n in k.attr("computation").nodes() if n.op.name == "slice"]
    # The scores' product (as many columns as keys, at least 8) reads the queries and keys in
    # place; the values' is a tiled GEMM where a head is 8 wide or more, else plain loops
    # reading the values split out by a kernel.
    assert len(split) == (0 if graph.outputs[0].aval.shape[-1] >= 8 else 1)
    run = cpu.compile_graph(optimized, cpu.DiskCache(tmp_path_factory.mktemp("cache")))
    assert_matches_reference(graph, run, {"float32": 2e-5, "float64": 1e-12})


@needs_compiler
def test_a_reshape_that_is_no_view_is_written_out_and_the_product_reads_it(tmp_path):
    """Heads merged back after a transpose (attention's output, (batch, heads, time, width)
    to (batch, time, heads * width)): the merged dimensions do not nest, so the transpose is
    a kernel's result, the product reads it as it lies, and says why."""
    x = parameter(0, Aval((2, 3, 16, 8), float32))
    w = parameter(1, Aval((24, 16), float32))
    merged = make(
        "reshape", (make("transpose", (make("exp", (x,)),), permutation=(0, 2, 1, 3)),), new_sizes=(2, 16, 24)
    )
    product = make("dot_general", (merged, w), lhs_contracting=(2,), rhs_contracting=(0,), lhs_batch=(), rhs_batch=())
    graph = Graph((x, w), (product,))
    optimized = cpu.optimize(graph, verify=True)
    assert any("merges dimensions that do not nest" in note for note in optimized.notes)
    loops = [k for k in optimized.nodes() if k.op.name == "fusion" and k.attr("kind") == "loop"]
    assert any(n.op.name == "transpose" for k in loops for n in k.attr("computation").nodes())
    run = cpu.compile_graph(optimized, cpu.DiskCache(tmp_path))
    assert_matches_reference(graph, run, {"float32": 1e-5})


@needs_compiler
def test_a_broadcast_below_a_product_operand_is_computed_by_the_movement_kernel(tmp_path):
    """A transpose of a broadcast: the product does not read through it, since the
    broadcast, recomputed wherever it is read, would then be written out alone."""
    x = parameter(0, Aval((8,), float32))
    w = parameter(1, Aval((16, 12), float32))
    spread = make("broadcast_in_dim", (x,), shape=(16, 8), broadcast_dimensions=(1,))
    product = make(
        "dot_general",
        (make("transpose", (spread,), permutation=(1, 0)), w),
        lhs_contracting=(1,),
        rhs_contracting=(0,),
        lhs_batch=(),
        rhs_batch=(),
    )
    graph = Graph((x, w), (product,))
    optimized = cpu.optimize(graph, verify=True)
    kernels = [{n.op.name for n in k.attr("computation").nodes()} for k in optimized.nodes() if k.op.name == "fusion"]
    assert {"broadcast_in_dim", "transpose"} <= set().union(*kernels)
    assert not [ops for ops in kernels if ops <= {"parameter", "broadcast_in_dim"}]
    run = cpu.compile_graph(optimized, cpu.DiskCache(tmp_path))
    assert_matches_reference(graph, run, {"float32": 1e-5})
