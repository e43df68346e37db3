"""Loop kernels joining a product's epilogue (passes/epilogue_loops.py): a cheap loop that
reads a matrix product several times at each element, or beside a parameter (an update), is
computed as the product is stored; one of transcendentals, one that reads it at other
elements, or also through another kernel, stays a kernel of its own. The fused graphs
compute what the unfused ones do (reference interpreter, and the CPU's compiled code)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from random_graphs import assert_matches_reference, make, random_args, splat

from braze.backends import cpu
from braze.backends.reference.interpreter import evaluate
from braze.ir.dtypes import float32, float64
from braze.ir.graph import Graph, Node, parameter
from braze.ir.primitive import Aval
from braze.ir.prims.fusion import fusion

TOLERANCE = {"float32": 1e-5, "float64": 1e-12}


def _product(dtype, m: int = 12, k: int = 16, n: int = 40) -> tuple[Node, Node, Node]:
    x = parameter(0, Aval((m, k), dtype))
    w = parameter(1, Aval((k, n), dtype))
    dims = {"lhs_contracting": (1,), "rhs_contracting": (0,), "lhs_batch": (), "rhs_batch": ()}
    return x, w, make("dot_general", (x, w), **dims)


def _update(dtype) -> Graph:
    """g = x @ w, then p - lr * g and g * g (an SGD step beside a squared gradient's
    accumulator): the product read twice and a parameter beside it."""
    x, w, g = _product(dtype)
    p = parameter(2, g.aval)
    step = make("sub", (p, make("mul", (g, splat(0.1, g.aval)))))
    return Graph((x, w, p), (step, make("add", (p, make("mul", (g, g))))))


def _gelu_backward(dtype) -> Graph:
    """g = x @ w, then g * (1 + erf(h)) + g * h * exp(-h^2): a GELU's derivative."""
    x, w, g = _product(dtype)
    h = parameter(2, g.aval)
    erf = make("erf", (h,))
    first = make("mul", (g, make("add", (erf, splat(1.0, g.aval)))))
    second = make("mul", (make("mul", (g, h)), make("exp", (make("neg", (make("mul", (h, h)),)),))))
    return Graph((x, w, h), (make("add", (first, second)),))


def _kernels(graph: Graph) -> list[Node]:
    return [n for n in graph.nodes() if n.op is fusion]


def _holding(graph: Graph, op: str) -> Node:
    (kernel,) = [k for k in _kernels(graph) if any(n.op.name == op for n in k.attr("computation").nodes())]
    return kernel


@pytest.mark.parametrize("dtype", [float32, float64], ids=["float32", "float64"])
def test_a_cheap_loop_reading_the_product_joins_its_epilogue(dtype, tmp_path):
    graph = _update(dtype)
    optimized = cpu.optimize(graph, verify=True)
    (kernel,) = _kernels(optimized)
    assert kernel.attr("kind") == "output" and len(kernel.attr("computation").outputs) == 2
    assert_matches_reference(graph, cpu.compile_graph(optimized, cpu.DiskCache(tmp_path)), TOLERANCE)


def test_the_product_is_still_written_where_another_kernel_reads_it(tmp_path):
    x, w, h = _product(float32)
    rectified = make("add", (make("mul", (h, splat(0.5, h.aval))), make("abs", (h,))))
    graph = Graph((x, w), (rectified, h))
    optimized = cpu.optimize(graph, verify=True)
    (kernel,) = _kernels(optimized)
    assert len(kernel.attr("computation").outputs) == 2
    assert_matches_reference(graph, cpu.compile_graph(optimized, cpu.DiskCache(tmp_path)), TOLERANCE)


def test_a_loop_reading_another_that_joined_joins_after_it(tmp_path):
    """-2g, a result of the graph, is a loop of its own that (-2g) * g reads beside g: the
    second joins once the first has (its producers are met first)."""
    x, w, g = _product(float64)
    doubled = make("mul", (make("neg", (g,)), splat(2.0, g.aval)))
    graph = Graph((x, w), (doubled, make("mul", (doubled, g))))
    optimized = cpu.optimize(graph, verify=True)
    (kernel,) = _kernels(optimized)
    assert len(kernel.attr("computation").outputs) == 2
    assert_matches_reference(graph, cpu.compile_graph(optimized, cpu.DiskCache(tmp_path)), TOLERANCE)


def test_a_loop_of_transcendentals_stays_a_kernel_of_its_own(tmp_path):
    graph = _gelu_backward(float32)
    optimized = cpu.optimize(graph, verify=True)
    assert _holding(optimized, "exp") is not _holding(optimized, "dot_general")
    assert any("faster in a loop of its own" in note for note in optimized.notes), optimized.notes
    assert_matches_reference(graph, cpu.compile_graph(optimized, cpu.DiskCache(tmp_path)), TOLERANCE)


def test_a_loop_joins_no_epilogue_past_the_kernel_size_bound(monkeypatch):
    monkeypatch.setattr(cpu.CPU_FUSION, "max_fused_ops", 6)
    optimized = cpu.optimize(_update(float64), verify=True)
    assert len(_kernels(optimized)) == 2
    assert any("would hold more than 6 ops" in note for note in optimized.notes), optimized.notes


def test_a_loop_reading_the_product_at_another_element_stays_out(tmp_path):
    x, w, g = _product(float64, m=8, k=4, n=8)
    moved = make("transpose", (g,), permutation=(1, 0))
    graph = Graph((x, w), (make("mul", (make("add", (g, moved)), g)),))
    optimized = cpu.optimize(graph, verify=True)
    assert _holding(optimized, "transpose").attr("kind") == "loop"
    assert any("reads the product at another element" in note for note in optimized.notes), optimized.notes
    assert_matches_reference(graph, cpu.compile_graph(optimized, cpu.DiskCache(tmp_path)), TOLERANCE)


def test_a_loop_reading_the_product_also_through_another_kernel_stays_out(tmp_path):
    """Its other operand, a sum of the product, comes from a kernel after the product's:
    joined, the product's kernel would read that kernel's result and be read by it."""
    x, w, g = _product(float64)
    summed = make("reduce_sum", (make("exp", (g,)),), axes=(1,))
    total = make("broadcast_in_dim", (summed,), shape=g.shape, broadcast_dimensions=(0,))
    graph = Graph((x, w), (make("mul", (make("mul", (g, g)), total)),))
    optimized = cpu.optimize(graph, verify=True)
    assert "mul" not in {n.op.name for n in _holding(optimized, "dot_general").attr("computation").nodes()}
    assert any("also through another kernel" in note for note in optimized.notes), optimized.notes
    assert_matches_reference(graph, cpu.compile_graph(optimized, cpu.DiskCache(tmp_path)), TOLERANCE)


def _random_epilogue(rng: random.Random, dtype) -> Graph:
    """A product (plain, or batched with a transposed right operand as attention's q @ k^T)
    read by elementwise ops, the product several times; other operands of its shape, a
    bias broadcast along its rows, now and then a transpose or a sum of a value computed
    from it; a few of the values as results, the product among them at times."""
    m, k, n = rng.choice([1, 3, 8, 13]), rng.choice([1, 5, 16, 33]), rng.choice([8, 17, 40, 64])
    if rng.random() < 0.5:
        x, w = parameter(0, Aval((m, k), dtype)), parameter(1, Aval((k, n), dtype))
        dims = {"lhs_contracting": (1,), "rhs_contracting": (0,), "lhs_batch": (), "rhs_batch": ()}
    else:
        x, w = parameter(0, Aval((3, m, k), dtype)), parameter(1, Aval((3, n, k), dtype))
        dims = {"lhs_contracting": (2,), "rhs_contracting": (2,), "lhs_batch": (0,), "rhs_batch": (0,)}
    product = make("dot_general", (x, w), **dims)
    other = parameter(2, product.aval)
    bias = parameter(3, Aval((product.shape[-1],), dtype))
    row = make("broadcast_in_dim", (bias,), shape=product.shape, broadcast_dimensions=(len(product.shape) - 1,))
    nodes = [product, product, other, row]
    for _ in range(rng.randint(2, 10)):
        a = rng.choice(nodes[-4:] + [product])
        kind = rng.random()
        if kind < 0.25:  # cheap ones mostly, a transcendental now and then (it keeps its loop)
            node = make(rng.choice(["abs", "neg", "sign", "abs", "neg", "tanh"]), (a,))
        elif kind < 0.85:  # the other operand bounded, so that the chains stay within float32's range
            node = make(rng.choice(["add", "mul", "sub", "max"]), (a, make("sign", (rng.choice(nodes),))))
        elif kind < 0.93 and product.shape[-1] == product.shape[-2]:
            node = make("transpose", (a,), permutation=(*range(len(a.shape) - 2), len(a.shape) - 1, len(a.shape) - 2))
        else:
            summed = make("reduce_sum", (a,), axes=(len(a.shape) - 1,))
            node = make(
                "broadcast_in_dim", (summed,), shape=a.shape, broadcast_dimensions=tuple(range(len(a.shape) - 1))
            )
        nodes.append(node)
    outputs = [nodes[-1], *rng.sample(nodes[4:], min(2, len(nodes) - 4))]
    if rng.random() < 0.3:
        outputs.append(product)
    return Graph((x, w, other, bias), tuple(dict.fromkeys(outputs)))


@pytest.mark.parametrize("dtype", [float32, float64], ids=["float32", "float64"])
def test_random_epilogues_compute_what_the_graph_does(dtype, tmp_path, monkeypatch):
    graphs = [_random_epilogue(random.Random(seed), dtype) for seed in range(80)]
    optimized = [cpu.optimize(g, verify=True) for g in graphs]
    with monkeypatch.context() as without:
        without.setattr(cpu.CPU_FUSION, "epilogue_takes_loops", lambda root: False)
        apart = [len(_kernels(cpu.optimize(g))) for g in graphs]
    joined = sum(len(_kernels(fused)) < count for fused, count in zip(optimized, apart, strict=True))
    assert joined >= 10, f"only {joined} random graphs had a loop join a product's epilogue"
    for graph, fused in zip(graphs, optimized, strict=True):
        args = random_args(graph, seed=1)
        with np.errstate(all="ignore"):
            for got, want in zip(evaluate(fused, args), evaluate(graph, args), strict=True):
                np.testing.assert_allclose(got, want, rtol=TOLERANCE[dtype.name], atol=0, equal_nan=True)
    executables = cpu.compile_graphs(optimized, cpu.DiskCache(tmp_path))
    for graph, native in zip(graphs, executables, strict=True):
        assert_matches_reference(graph, native, TOLERANCE)
