"""Common-subexpression elimination.

Hash-consing already shares structurally identical nodes as they are built; this pass adds
what structure alone misses: commutative operations get a canonical operand order, so
``a + b`` and ``b + a`` become one node; and a scan whose results another scan of the same
operands computes too (its body's outputs the first of the other's) is read from that one.
A scan's gradient records the carry each step starts from with a scan of the forward body
and more outputs: the forward scan itself is then no longer run.
"""

from __future__ import annotations

from braze.ir.graph import Graph, Node
from braze.ir.prims.fusion import get_element
from braze.ir.prims.loops import scan
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


def _wider_scans(graph: Graph) -> dict[int, Node]:
    """For each scan (by id) whose results a scan of the same operands and steps also
    computes, the one of those computing the most."""
    alike: dict[tuple, list[Node]] = {}
    for node in graph.nodes():
        if node.op is scan:
            steps = tuple((k, v) for k, v in node.attrs if k != "body")
            alike.setdefault((tuple(id(i) for i in node.inputs), steps), []).append(node)
    wider: dict[int, Node] = {}
    for scans in alike.values():
        for narrow in scans:
            body = narrow.attr("body")
            covering = [
                s
                for s in scans
                if s.attr("body").params == body.params
                and len(s.attr("body").outputs) > len(body.outputs)
                and s.attr("body").outputs[: len(body.outputs)] == body.outputs
            ]
            if covering:
                wider[id(narrow)] = max(covering, key=lambda s: len(s.attr("body").outputs))
    return wider


def cse(graph: Graph) -> Graph:
    wider = _wider_scans(graph)

    def rule(node: Node) -> Node | None:
        if node.op is get_element and id(node.inputs[0]) in wider:
            return Node.make(get_element, (wider[id(node.inputs[0])],), node.attrs, node.aval)
        return _canonical(node)

    return rewrite(graph, rule)
