"""The one traversal every rewriting pass uses: rebuild a graph bottom-up, letting a rule
replace each node (repeatedly, until it declines) once its inputs are rewritten."""

from __future__ import annotations

from collections.abc import Callable

from braze.ir.graph import Graph, Node
from braze.ir.primitive import Category

Rule = Callable[[Node], "Node | None"]


def rebuild(node: Node, inputs: tuple[Node, ...]) -> Node:
    """``node`` with new inputs (the same object when nothing changed)."""
    if all(a is b for a, b in zip(inputs, node.inputs, strict=True)):
        return node
    return Node.make(node.op, inputs, node.attrs, node.aval)


def rewrite(graph: Graph, rule: Rule, max_rounds: int = 32) -> Graph:
    """Apply ``rule`` to every node of ``graph`` after its inputs; keep parameters and donations."""
    mapping: dict[int, Node] = {id(p): p for p in graph.params}
    for node in graph.nodes():
        if node.op.category is Category.PARAMETER:
            continue
        current = rebuild(node, tuple(mapping[id(i)] for i in node.inputs))
        for _ in range(max_rounds):
            replacement = rule(current)
            if replacement is None or replacement is current:
                break
            current = replacement
        mapping[id(node)] = current
    outputs = tuple(mapping[id(o)] for o in graph.outputs)
    if all(a is b for a, b in zip(outputs, graph.outputs, strict=True)):
        return graph
    return Graph(graph.params, outputs, graph.donated)
