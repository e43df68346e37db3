"""bfloat16 is a storage type: every computation on it happens in float32 (XLA's float
normalization). Each node that computes with a bfloat16 operand or result is rewritten to
read its operands converted to float32 and, where its result was bfloat16, to round that
result back; nodes that only move or pick values (parameters, movement, select, constants)
and the conversions themselves stay on bfloat16, so a code generator needs no more of
bfloat16 than its storage type and the two conversions. The conversions are elementwise,
so fusion puts them inside the kernels of their producers and consumers.

A backend whose kernels multiply bfloat16 directly (``vdpbf16ps``) says which contractions
with its fusion policy's ``contracts_bfloat16``: those keep their bfloat16 operands, and a
float32 contraction of operands that are bfloat16 values read back as float32 (what
``autocast`` records) reads the bfloat16 values themselves, half the bytes.
"""

from __future__ import annotations

from collections.abc import Callable

from braze.ir.dtypes import DType, bfloat16, float32
from braze.ir.graph import Graph, Node
from braze.ir.primitive import Aval, Category
from braze.ir.prims.elementwise import convert
from braze.ir.prims.sources import constant
from braze.passes.rewrite import rewrite

# Nodes that only move, choose or pick bit patterns, and loops (whose body graphs go
# through the pipeline as graphs of their own).
_MOVES = frozenset(
    {Category.PARAMETER, Category.MOVEMENT, Category.SELECT, Category.CONVERT, Category.FUSION, Category.LOOP}
)


def _converted(node: Node, dtype: DType) -> Node:
    return Node.make(convert, (node,), {"dtype": dtype}, Aval(node.shape, dtype))


def _bf16(node: Node) -> bool:
    return not node.multi_output and node.dtype is bfloat16


def _widened(node: Node) -> Node | None:
    """The bfloat16 value that ``node`` reads back as float32, if it is one."""
    if node.op is convert and node.dtype is float32 and _bf16(node.inputs[0]):
        return node.inputs[0]
    return None


def _in_float32(node: Node, contracts: Callable[[Node], bool]) -> Node | None:
    if node.op.category in _MOVES or node.op is constant:
        return None
    if node.op.category is Category.CONTRACTION and node.dtype is float32:
        narrow = tuple(_widened(i) for i in node.inputs)
        if all(n is not None for n in narrow):
            candidate = Node.make(node.op, narrow, node.attrs, node.aval)
            if contracts(candidate):
                return candidate
        if all(_bf16(i) for i in node.inputs) and contracts(node):
            return None
    if node.dtype is not bfloat16 and not any(_bf16(i) for i in node.inputs):
        return None
    inputs = tuple(_converted(i, float32) if _bf16(i) else i for i in node.inputs)
    attrs = {k: (float32 if v is bfloat16 else v) for k, v in node.attr_dict.items()}
    if node.dtype is not bfloat16:
        return Node.make(node.op, inputs, attrs, node.aval)
    return _converted(Node.make(node.op, inputs, attrs, Aval(node.shape, float32)), bfloat16)


def _never(node: Node) -> bool:
    return False


def normalize_bfloat16(graph: Graph, contracts: Callable[[Node], bool] = _never) -> Graph:
    """``graph`` with every computation on bfloat16 done in float32 and rounded, but the
    contractions that ``contracts`` says a backend computes from bfloat16 operands."""
    return rewrite(graph, lambda node: _in_float32(node, contracts))
