"""All-reduce combining (XLA's AllReduceCombiner, Horovod's tensor fusion, DDP's buckets).

A data-parallel step all-reduces every parameter's gradient: a few dozen small messages,
each paying the network's latency (and here a call back into Python). Independent
all-reduces of one op and dtype are combined into one, up to ``THRESHOLD_BYTES``:

    all_reduce(concatenate(reshape(g1, [n1]), reshape(g2, [n2]), ...))

and each original result is a reshaped slice of it. Fusion then writes the concatenation
straight from the gradients' kernels and reads the slices in the update's, so combining
costs one pass over the gradients. All-reduces that depend on one another (the gradient of
an all-reduced maximum) are never combined, and every rank combines the same graph the
same way, so the ranks' messages still match one for one.
"""

from __future__ import annotations

from typing import Any

from braze.ir.graph import Graph, Node
from braze.ir.primitive import Primitive
from braze.ir.prims.collectives import all_reduce
from braze.ir.prims.structural import concatenate, reshape, slice_
from braze.passes.rewrite import rewrite

THRESHOLD_BYTES = 32 << 20  # XLA's default combine threshold is 30 MiB


def _make(primitive: Primitive, inputs: tuple[Node, ...], **attrs: Any) -> Node:
    aval = primitive.shape_rule(*(i.aval for i in inputs), **attrs)
    return Node.make(primitive, inputs, attrs, aval)


def _reshaped(node: Node, shape: tuple[int, ...]) -> Node:
    return node if node.shape == shape else _make(reshape, (node,), new_sizes=shape)


def _upstream_reduces(graph: Graph) -> dict[int, frozenset[int]]:
    """For every node (by id), the all-reduces it depends on."""
    upstream: dict[int, frozenset[int]] = {}
    for node in graph.nodes():
        found: set[int] = set()
        for i in node.inputs:
            found |= upstream[id(i)]
            if i.op is all_reduce:
                found.add(id(i))
        upstream[id(node)] = frozenset(found)
    return upstream


def buckets(graph: Graph, combined: set[int], threshold: int = THRESHOLD_BYTES) -> list[list[Node]]:
    """Groups of independent all-reduces (not in ``combined``) to combine, in graph order."""
    upstream = _upstream_reduces(graph)
    open_buckets: dict[tuple, list[Node]] = {}
    result: list[list[Node]] = []
    for node in graph.nodes():
        if node.op is not all_reduce or id(node) in combined:
            continue
        key = (node.attr("op"), node.dtype)
        bucket = open_buckets.get(key)
        fits = bucket is not None and sum(m.aval.nbytes for m in bucket) + node.aval.nbytes <= threshold
        if not fits or any(id(m) in upstream[id(node)] for m in bucket):
            bucket = open_buckets[key] = []
            result.append(bucket)
        bucket.append(node)
    return [b for b in result if len(b) > 1]


def _combine(bucket: list[Node]) -> tuple[Node, dict[int, Node]]:
    """The combined all-reduce and, for each member (by id), the slice replacing it."""
    flat = tuple(_reshaped(m.inputs[0], (m.aval.size,)) for m in bucket)
    joined = _make(concatenate, flat, dimension=0)
    reduced = _make(all_reduce, (joined,), op=bucket[0].attr("op"))
    replacements, start = {}, 0
    for member in bucket:
        end = start + member.aval.size
        piece = _make(slice_, (reduced,), start_indices=(start,), limit_indices=(end,), strides=(1,))
        replacements[id(member)] = _reshaped(piece, member.shape)
        start = end
    return reduced, replacements


def combine_all_reduce(graph: Graph, threshold: int = THRESHOLD_BYTES) -> Graph:
    """Combine independent all-reduces of one op and dtype, up to ``threshold`` bytes each."""
    combined: set[int] = set()
    notes = []
    # One bucket per round: combining a bucket rebuilds the nodes that read its members.
    while found := buckets(graph, combined, threshold):
        bucket = found[0]
        reduced, replacements = _combine(bucket)
        combined.add(id(reduced))
        graph = rewrite(graph, lambda node, replacements=replacements: replacements.get(id(node)))
        notes.append(f"combined {len(bucket)} all-reduces into one of {reduced.aval.nbytes} bytes")
    graph.notes.extend(notes)
    return graph
