"""A matrix product whose only reader transposes it computes the transpose itself:
``transpose(dot(x, y))`` is ``dot(y, x)`` with the operands' roles swapped, where each
operand keeps one free dimension and no dimension is batched. The product's terms are the
same and are summed in the same order, so the values are too; the transpose's pass over
memory is gone, and the product is laid out as its reader wants it. The gradient of a
weight tied to an embedding (nanoGPT's vocabulary projection) is such a product: ``(128,
65)`` then transposed, 65 columns to a row, where ``(65, 128)`` rows fill whole vectors."""

from __future__ import annotations

from collections import Counter

from braze.ir.graph import Graph, Node
from braze.ir.prims.linalg import dot_general
from braze.ir.prims.structural import transpose
from braze.passes.rewrite import rewrite


def _swapped(product: Node, result: Node) -> Node | None:
    """``product`` with its operands exchanged, giving ``result``'s (its transpose's) shape,
    or None where it has batch dimensions or an operand has other than one free dimension."""
    x, y = product.inputs
    lhs, rhs = product.attr("lhs_contracting"), product.attr("rhs_contracting")
    if product.attr("lhs_batch") or len(x.shape) - len(lhs) != 1 or len(y.shape) - len(rhs) != 1:
        return None
    attrs = {**product.attr_dict, "lhs_contracting": rhs, "rhs_contracting": lhs}
    return Node.make(dot_general, (y, x), attrs, result.aval)


def transposed_products(graph: Graph) -> Graph:
    """Fold every transpose that is a product's only reader into the product."""
    readers = Counter(id(i) for node in graph.nodes() for i in dict.fromkeys(node.inputs))
    readers.update(id(o) for o in graph.outputs)

    def rule(node: Node) -> Node | None:
        if node.op is not transpose or tuple(node.attr("permutation")) != (1, 0):
            return None
        product = node.inputs[0]
        # Only an untouched product is counted (rewriting left it the same node): a rewritten
        # one would be computed twice if another node read it.
        if product.op is not dot_general or readers[id(product)] != 1:
            return None
        return _swapped(product, node)

    return rewrite(graph, rule)
