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
    if _in_order(a, b):
        return None
    return Node.make(node.op, (b, a), node.attrs, node.aval)


def _local(node: Node) -> tuple:
    return (node.op.name, str(node.aval), tuple(i.op.name for i in node.inputs))


def _in_order(a: Node, b: Node) -> bool:
    """The canonical order of two operands: by what they are and read, then by their whole
    structure (a hash), so that each step of an unrolled loop orders its operands alike
    and its kernels are alike."""
    first, second = _local(a), _local(b)
    if first != second:
        return first < second
    return a.fingerprint <= b.fingerprint


def cse(graph: Graph) -> Graph:
    return rewrite(graph, _canonical)
