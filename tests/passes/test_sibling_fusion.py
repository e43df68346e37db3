"""Sibling fusion's two ways of answering dependence between the readers of one input (a
walk of the kernel graph per pair for a few readers, bit sets of ancestors and descendants
kept exact under merges for many) make the same kernels, on random graphs where many
kernels read the same inputs; the fused graphs compute what the unfused ones do."""

from __future__ import annotations

import random

import numpy as np
import pytest
from random_graphs import make, random_args, splat

from braze.backends.reference.interpreter import evaluate
from braze.ir.dtypes import float64
from braze.ir.graph import Graph, parameter
from braze.ir.primitive import Aval
from braze.ir.text import print_graph
from braze.passes import pipeline, sibling_fusion
from braze.passes.fuse import fuse

SHAPES = [(3, 4), (4,), (3,)]


def wide_graph(rng: random.Random, size: int) -> Graph:
    """Elementwise ops, sums and broadcasts, most reading one of the last few nodes: inputs
    with many readers, some depending on each other; some scaled by a scalar parameter (which
    makes siblings of the results it scales)."""
    params = [parameter(k, Aval(rng.choice(SHAPES), float64)) for k in range(4)]
    rate = parameter(4, Aval((), float64))
    nodes = list(params)
    for _ in range(size):
        x = rng.choice(nodes[-12:] if rng.random() < 0.7 else nodes)
        shape = x.aval.shape
        kind = rng.random()
        if kind < 0.35:
            node = make(rng.choice(["neg", "exp", "tanh", "abs"]), (x,))
        elif kind < 0.7:
            y = rng.choice([n for n in nodes if n.aval.shape == shape])
            node = make(rng.choice(["add", "mul", "sub", "max"]), (x, y))
        elif kind < 0.8 and shape:
            node = make("reduce_sum", (x,), axes=(len(shape) - 1,))
        elif shape == (3,):
            node = make("broadcast_in_dim", (x,), shape=(3, 4), broadcast_dimensions=(0,))
        elif shape == (4,):
            node = make("broadcast_in_dim", (x,), shape=(3, 4), broadcast_dimensions=(1,))
        elif rng.random() < 0.5:
            node = make("mul", (x, splat(0.5, x.aval)))
        else:
            node = make("mul", (x, make("broadcast_in_dim", (rate,), shape=shape, broadcast_dimensions=())))
        nodes.append(node)
    outputs = (*rng.sample(nodes[4:], min(8, len(nodes) - 4)), nodes[-1])
    return Graph((*params, rate), outputs)


def prepared(graph: Graph) -> Graph:
    """``graph`` after the passes that run before fusion."""
    for _, apply in pipeline.passes()[:6]:
        graph = apply(graph)
    return graph


@pytest.mark.parametrize("seed", range(30))
def test_bit_sets_and_pairwise_walks_make_the_same_kernels(seed, monkeypatch):
    rng = random.Random(seed)
    graph = prepared(wide_graph(rng, rng.randint(30, 250)))
    monkeypatch.setattr(sibling_fusion, "_PAIRWISE", 10**9)
    walked = fuse(graph)
    monkeypatch.setattr(sibling_fusion, "_PAIRWISE", 0)
    summarized = fuse(graph)
    assert print_graph(summarized) == print_graph(walked)
    args = random_args(graph, seed=1)
    with np.errstate(all="ignore"):
        for got, want in zip(evaluate(summarized, args), evaluate(graph, args), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, equal_nan=True)


def test_siblings_merge_only_up_to_the_kernel_size_bound():
    """A fan of sums of one input (each of its own function of it) shares loops on the CPU,
    but no merged kernel holds more than the policy's bound of ops."""
    from braze.backends.cpu.fusion import CPU_FUSION
    from braze.ir.prims.fusion import fusion
    from braze.passes.fusion_policy import per_element_ops

    x = parameter(0, Aval((64,), float64))
    sums = [
        make("reduce_sum", (make("tanh", (make("mul", (x, splat(1 + k / 80, x.aval))),)),), axes=(0,))
        for k in range(80)
    ]
    graph = Graph((x,), tuple(sums))
    fused = fuse(graph, policy=CPU_FUSION)
    sizes = [per_element_ops(k.attr("computation").nodes()) for k in fused.nodes() if k.op is fusion]
    assert len(sizes) < 80, "sibling sums share loops"
    assert max(sizes) <= CPU_FUSION.max_fused_ops + 1, sizes  # (+ the input's parameter)
    assert any("would hold more than" in note for note in fused.notes)
    args = random_args(graph)
    for want, got in zip(evaluate(graph, args), evaluate(fused, args), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)
