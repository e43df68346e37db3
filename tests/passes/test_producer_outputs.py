"""Producer multi-output fusion into a loop kernel: a value too expensive to recompute
(an erf, an exp) that several kernels read is computed by the loop kernel that reads it at
the element it computes, which also writes it out for the others. The kernels compute what
the unfused graph does (reference interpreter, and the CPU's compiled code), and a value
read only at other positions stays a kernel of its own."""

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
from braze.passes import pipeline

TOLERANCE = {"float32": 1e-5, "float64": 1e-12}


def _gelu_graph(dtype) -> Graph:
    """A GELU whose erf is kept for later (as its backward pass keeps it): read by the
    product, and by a kernel after a sum of that product (which the product's kernel
    cannot run after, so the two are no siblings)."""
    x = parameter(0, Aval((8, 16), dtype))
    e = make("erf", (make("mul", (x, splat(0.7071067811865476, x.aval))),))
    gelu = make("mul", (make("mul", (x, splat(0.5, x.aval))), make("add", (e, splat(1.0, x.aval)))))
    summed = make("reduce_sum", (gelu,), axes=(1,))
    total = make("broadcast_in_dim", (summed,), shape=(8, 16), broadcast_dimensions=(0,))
    return Graph((x,), (gelu, make("mul", (e, total))))


def _kernels(graph: Graph) -> list[Node]:
    return [n for n in graph.nodes() if n.op is fusion]


def _writer_of(graph: Graph, op: str) -> Node:
    """The one kernel computing ``op``."""
    (kernel,) = [k for k in _kernels(graph) if any(n.op.name == op for n in k.attr("computation").nodes())]
    return kernel


@pytest.mark.parametrize("dtype", [float32, float64], ids=["float32", "float64"])
def test_the_sum_of_a_gelu_writes_it_and_its_erf_is_computed_once(dtype, tmp_path):
    """The GELU, a result of the graph, is computed by the kernel of its sum, which writes it
    out; the erf, read there and after the sum, is computed in that one row kernel."""
    graph = _gelu_graph(dtype)
    optimized = cpu.optimize(graph, verify=True)
    writer = _writer_of(optimized, "erf")
    inner = writer.attr("computation")
    assert len(_kernels(optimized)) == 1 and writer.attr("kind") == "row"
    assert [n.op.name for n in inner.nodes()].count("erf") == 1
    assert_matches_reference(graph, cpu.compile_graph(optimized, cpu.DiskCache(tmp_path)), TOLERANCE)


@pytest.mark.parametrize("dtype", [float32, float64], ids=["float32", "float64"])
def test_results_of_the_graph_join_the_loop_that_reads_them(dtype, tmp_path):
    """An optimizer's step: the new moment (a result of the graph: the optimizer keeps it)
    is computed by the loop kernel of the parameter's update that reads it, which writes
    both, instead of by a kernel of its own whose result the update reads back."""
    g, m, p = (parameter(k, Aval((8, 16), dtype)) for k in range(3))
    moment = make("add", (make("mul", (m, splat(0.9, m.aval))), make("mul", (g, splat(0.1, g.aval)))))
    update = make("sub", (p, make("mul", (moment, splat(0.01, p.aval)))))
    graph = Graph((g, m, p), (moment, update))
    optimized = cpu.optimize(graph, verify=True)
    (kernel,) = _kernels(optimized)
    assert kernel.attr("kind") == "loop" and len(kernel.attr("computation").outputs) == 2
    assert_matches_reference(graph, cpu.compile_graph(optimized, cpu.DiskCache(tmp_path)), TOLERANCE)


def test_a_value_read_only_at_other_positions_stays_a_kernel_of_its_own():
    x = parameter(0, Aval((6, 6), float64))
    e = make("exp", (x,))
    graph = Graph((x,), (make("transpose", (e,), permutation=(1, 0)), make("rev", (e,), dimensions=(0,))))
    optimized, _ = pipeline.run(graph, verify=True)
    writer = _writer_of(optimized, "exp")
    assert len(writer.attr("computation").outputs) == 1
    assert any("exp f64[6,6] is read by 2 kernels" in note for note in optimized.notes), optimized.notes


def _shared_producers(rng: random.Random) -> Graph:
    """Transcendentals of a few inputs read by elementwise ops, by movements (other
    positions), by sums and by ops of values computed from them."""
    params = [parameter(k, Aval((4, 4), float64)) for k in range(2)]
    nodes: list[Node] = list(params)
    for _ in range(rng.randint(6, 24)):
        x = rng.choice(nodes[-6:])
        kind = rng.random()
        if kind < 0.3:
            node = make(rng.choice(["exp", "tanh", "erf"]), (x,))
        elif kind < 0.6:
            node = make(rng.choice(["add", "mul", "sub"]), (x, rng.choice(nodes)))
        elif kind < 0.75:
            node = make("transpose", (x,), permutation=(1, 0))
        elif kind < 0.85:
            node = make("rev", (x,), dimensions=(rng.randint(0, 1),))
        else:
            summed = make("reduce_sum", (x,), axes=(1,))
            node = make("broadcast_in_dim", (summed,), shape=(4, 4), broadcast_dimensions=(0,))
        nodes.append(node)
    outputs = (*rng.sample(nodes[2:], min(4, len(nodes) - 2)), nodes[-1])
    return Graph(tuple(params), outputs)


def test_random_shared_producers_compute_what_the_graph_does(tmp_path):
    graphs = [_shared_producers(random.Random(seed)) for seed in range(120)]
    optimized = [cpu.optimize(g, verify=True) for g in graphs]
    written = 0
    for graph, fused in zip(graphs, optimized, strict=True):
        args = random_args(graph, seed=1)
        with np.errstate(all="ignore"):
            for got, want in zip(evaluate(fused, args), evaluate(graph, args), strict=True):
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, equal_nan=True)
        for kernel in _kernels(fused):
            inner = kernel.attr("computation")
            roots = {id(n) for n in inner.nodes() if not any(o is n for u in inner.nodes() for o in u.inputs)}
            written += kernel.attr("kind") == "loop" and any(id(o) not in roots for o in inner.outputs)
    assert written, "no random graph had a loop kernel write out a value it also reads"
    executables = cpu.compile_graphs(optimized, cpu.DiskCache(tmp_path))
    for graph, native in zip(graphs, executables, strict=True):
        assert_matches_reference(graph, native, TOLERANCE)
