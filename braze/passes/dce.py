"""Dead-code elimination.

A graph holds only what its outputs reach, so unused top-level nodes vanish when a graph
is rebuilt; this pass also drops the results of multi-output fusions that nobody reads,
and the then-unused work inside their computations.
"""

from __future__ import annotations

from braze.ir.graph import Graph, Node
from braze.ir.prims.fusion import fusion, get_element
from braze.passes.rewrite import rewrite


def _read_elements(graph: Graph) -> dict[int, set[int]]:
    """For each multi-output fusion, the indices its get_element users read."""
    read: dict[int, set[int]] = {}
    for node in graph.nodes():
        if node.op is get_element:
            read.setdefault(id(node.inputs[0]), set()).add(node.attr("index"))
    return read


def dce(graph: Graph) -> Graph:
    read = _read_elements(graph)
    renumbered: dict[int, tuple[Node, dict[int, int]]] = {}

    def prune(node: Node) -> Node | None:
        if node.op is get_element:
            fused = node.inputs[0]
            if id(fused) in renumbered:
                new_fusion, positions = renumbered[id(fused)]
                if new_fusion.multi_output:
                    return Node.make(get_element, (new_fusion,), {"index": positions[node.attr("index")]}, node.aval)
                return new_fusion
            return None
        if node.op is not fusion or not node.multi_output or id(node) not in read:
            return None
        kept = sorted(read[id(node)])
        if len(kept) == len(node.aval):
            return None
        computation: Graph = node.attr("computation")
        inner = Graph(computation.params, tuple(computation.outputs[i] for i in kept))
        aval = tuple(node.aval[i] for i in kept)
        new_fusion = Node.make(
            fusion, node.inputs, {"kind": node.attr("kind"), "computation": inner}, aval if len(aval) > 1 else aval[0]
        )
        renumbered[id(new_fusion)] = (new_fusion, {old: new for new, old in enumerate(kept)})
        return new_fusion

    return rewrite(graph, prune)
