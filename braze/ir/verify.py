"""The graph verifier: the invariants every pass must preserve.

Parameters are numbered 0..n-1 in order; every node's op is a known primitive with the
right number of operands; and re-running its shape rule gives back the node's aval.
"""

from __future__ import annotations

from braze.ir.graph import Graph
from braze.ir.primitive import PRIMITIVES, Category


class VerificationError(ValueError):
    """A graph that breaks an IR invariant (a compiler bug, never a user error)."""


def verify(graph: Graph) -> Graph:
    """Check ``graph`` and return it; raise VerificationError naming the first broken node."""
    for position, p in enumerate(graph.params):
        if p.op.category is not Category.PARAMETER or p.attr("index") != position:
            raise VerificationError(f"parameter {position} is {p!r} with index {p.attr_dict.get('index')}")
    declared = {id(p) for p in graph.params}
    for node in graph.nodes():
        primitive = node.op
        if primitive.category is Category.PARAMETER:
            if id(node) not in declared:
                raise VerificationError(f"parameter {node.attr('index')} is used but not declared")
            continue
        if PRIMITIVES.get(primitive.name) is not primitive:
            raise VerificationError(f"unknown primitive {primitive.name!r}")
        if set(node.attr_dict) != set(primitive.attr_names):
            raise VerificationError(
                f"{node.op}: attributes {sorted(node.attr_dict)} differ from the declared "
                f"{sorted(primitive.attr_names)}"
            )
        try:
            aval = primitive.shape_rule(*(i.aval for i in node.inputs), **node.attr_dict)
        except (TypeError, ValueError) as error:
            raise VerificationError(f"{node.op}: {error}") from None
        if aval != node.aval:
            raise VerificationError(f"{node.op}: its shape rule gives {aval}, the node says {node.aval}")
    for position, target in graph.donated.items():
        if not (0 <= position < len(graph.outputs) and 0 <= target < len(graph.params)):
            raise VerificationError(f"donation {position} -> {target} is out of range")
        if graph.outputs[position].aval != graph.params[target].aval:
            raise VerificationError(f"output {position} cannot reuse parameter {target}: types differ")
    return graph
