"""Constant folding, bounded so that a huge constant is never built at compile time.

Elementwise ops on scalar splats fold to a splat (any shape, no array is made). Other ops
whose operands are all constants fold when operands and result together hold at most
``LIMIT`` elements (the count of an average pool's padded windows, say); larger ones stay
computations.
"""

from __future__ import annotations

import numpy as np

from braze.ir.dtypes import readable
from braze.ir.graph import Graph, Node
from braze.ir.primitive import Aval, Category, Literal
from braze.ir.prims.sources import constant
from braze.passes.patterns import splat, splat_value
from braze.passes.rewrite import rewrite

LIMIT = 1 << 16
# A collective's value depends on the other replicas, which compile time knows nothing of.
_NOT_FOLDABLE = frozenset({Category.SOURCE, Category.COLLECTIVE, Category.PARAMETER, Category.FUSION})


def _is_constant(node: Node) -> bool:
    return node.op is constant or splat_value(node) is not None


def _value(node: Node) -> np.ndarray:
    if node.op is constant:
        return readable(node.attr("value").array, node.dtype)
    return np.broadcast_to(np.asarray(splat_value(node), dtype=node.dtype.compute.numpy), node.shape)


def _evaluate(node: Node, arrays: list[np.ndarray], aval: Aval) -> np.ndarray:
    with np.errstate(all="ignore"):
        result = np.asarray(node.op.impl(*arrays, **node.attr_dict))
    return result.astype(aval.dtype.compute.numpy, copy=False)  # a bfloat16 Literal rounds it


def _fold(node: Node) -> Node | None:
    if node.op.category in _NOT_FOLDABLE or not node.inputs or not all(_is_constant(i) for i in node.inputs):
        return None
    if splat_value(node) is not None:
        return None  # a broadcast scalar is already the cheapest form of a constant
    if node.multi_output:
        return None
    if node.op.elementwise and all(splat_value(i) is not None for i in node.inputs):
        scalars = [np.asarray(splat_value(i), dtype=i.dtype.compute.numpy) for i in node.inputs]
        return splat(_evaluate(node, scalars, Aval((), node.dtype)).item(), node.aval)
    size = node.aval.size + sum(i.aval.size for i in node.inputs)
    if size > LIMIT:
        return None
    array = _evaluate(node, [_value(i) for i in node.inputs], node.aval)
    return Node.make(constant, (), {"value": Literal(array, node.dtype)}, node.aval)


def fold(graph: Graph) -> Graph:
    return rewrite(graph, _fold)
