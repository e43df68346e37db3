"""Common-subexpression elimination.

Hash-consing already shares structurally identical nodes as they are built; this pass adds
what structure alone misses: commutative operations get a canonical operand order, so
``a + b`` and ``b + a`` become one node.
"""

from __future__ import annotations

from braze.ir.graph import Graph, Node
from braze.passes.rewrite import rewrite


def _canonical(node: Node) -> Node | None:
    if not node.op.commutative:
        return None
    a, b = node.inputs
    if a.fingerprint <= b.fingerprint:
        return None
    return Node.make(node.op, (b, a), node.attrs, node.aval)


def cse(graph: Graph) -> Graph:
    return rewrite(graph, _canonical)
