"""Algebraic simplification: a table of small rewrite rules, each exact in IEEE arithmetic
(``x * 0`` is not rewritten: it is NaN for infinite x; nor is a float ``x + 0.0``: it is
0.0 for x = -0.0, where ``x + -0.0`` and ``x - 0.0`` are x for every x)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from braze.ir.graph import Graph, Node
from braze.ir.primitive import Aval, Primitive
from braze.ir.prims import elementwise as ew
from braze.ir.prims.structural import broadcast_in_dim, reshape, transpose
from braze.passes.patterns import splat, splat_value
from braze.passes.rewrite import rewrite


@dataclass(frozen=True)
class Rule:
    """``apply`` rewrites a node of ``op`` (of every elementwise primitive when None)."""

    name: str
    op: Primitive | None
    apply: Callable[[Node], Node | None]


def _other_if_splat(
    node: Node, value: float, positions: tuple[int, ...] = (0, 1), zero_sign: float | None = None
) -> Node | None:
    """The other operand where the one at a position is a splat of ``value``; a float zero
    must also have ``zero_sign``'s sign where one is given (x + -0.0 is x for every x, but
    x + 0.0 is 0.0 for x = -0.0)."""
    for position in positions:
        found = splat_value(node.inputs[position])
        if found != value or isinstance(found, bool):
            continue
        if zero_sign is None or not isinstance(found, float) or math.copysign(1.0, found) == zero_sign:
            return node.inputs[1 - position]
    return None


def _sub_self(node: Node) -> Node | None:
    a, b = node.inputs
    if a is b and not node.dtype.is_float:
        return splat(0, node.aval)
    return None


def _same_input(node: Node) -> Node | None:
    a, b = node.inputs[-2:]
    return a if a is b else None


def _double(op: Primitive) -> Callable[[Node], Node | None]:
    return lambda node: node.inputs[0].inputs[0] if node.inputs[0].op is op else None


def _reshape(node: Node) -> Node | None:
    source = node.inputs[0]
    if node.shape == source.shape:
        return source
    if source.op is reshape:
        return Node.make(reshape, source.inputs, node.attrs, node.aval)
    if splat_value(source) is not None:
        return splat(splat_value(source), node.aval)
    return None


def _transpose(node: Node) -> Node | None:
    perm = node.attr("permutation")
    source = node.inputs[0]
    if list(perm) == sorted(perm):
        return source
    if source.op is transpose:
        inner = source.attr("permutation")
        composed = tuple(inner[p] for p in perm)
        return Node.make(transpose, source.inputs, {"permutation": composed}, node.aval)
    if splat_value(source) is not None:
        return splat(splat_value(source), node.aval)
    return None


def _broadcast(node: Node) -> Node | None:
    source = node.inputs[0]
    dims = node.attr("broadcast_dimensions")
    if source.shape == node.shape and list(dims) == list(range(len(dims))):
        return source
    if source.op is broadcast_in_dim:
        inner = source.attr("broadcast_dimensions")
        composed = tuple(dims[d] for d in inner)
        return Node.make(
            broadcast_in_dim, source.inputs, {"shape": node.shape, "broadcast_dimensions": composed}, node.aval
        )
    return None


def _convert(node: Node) -> Node | None:
    source = node.inputs[0]
    return source if source.dtype == node.dtype else None


def _on_scalars(node: Node) -> Node | None:
    """An elementwise op whose operands are all broadcast scalars runs once, on the scalars
    (Adam's bias corrections, pow(beta, step), are computed once rather than per weight)."""
    if not node.shape or not node.inputs:
        return None
    if not all(i.op is broadcast_in_dim and not i.inputs[0].shape for i in node.inputs):
        return None
    scalar = Node.make(node.op, tuple(i.inputs[0] for i in node.inputs), node.attrs, Aval((), node.dtype))
    return Node.make(broadcast_in_dim, (scalar,), {"shape": node.shape, "broadcast_dimensions": ()}, node.aval)


RULES: tuple[Rule, ...] = (
    Rule("mul_by_one", ew.mul, lambda n: _other_if_splat(n, 1)),
    Rule("add_zero", ew.add, lambda n: _other_if_splat(n, 0, zero_sign=-1.0)),
    Rule("sub_zero", ew.sub, lambda n: _other_if_splat(n, 0, positions=(1,), zero_sign=1.0)),
    Rule("div_by_one", ew.div, lambda n: _other_if_splat(n, 1, positions=(1,))),
    Rule("sub_self_integer", ew.sub, _sub_self),
    Rule("double_negation", ew.neg, _double(ew.neg)),
    Rule("max_self", ew.max_, _same_input),
    Rule("min_self", ew.min_, _same_input),
    Rule("select_same", ew.select, _same_input),
    Rule("reshape", reshape, _reshape),
    Rule("transpose", transpose, _transpose),
    Rule("broadcast", broadcast_in_dim, _broadcast),
    Rule("convert_same_dtype", ew.convert, _convert),
    Rule("on_scalars", None, _on_scalars),
)
_BY_OP: dict[Primitive, list[Rule]] = {}
for _rule in RULES:
    if _rule.op is not None:
        _BY_OP.setdefault(_rule.op, []).append(_rule)
_ELEMENTWISE_RULES = tuple(rule for rule in RULES if rule.op is None)


def simplify_node(node: Node) -> Node | None:
    rules = _BY_OP.get(node.op, ())
    if node.op.elementwise:
        rules = (*rules, *_ELEMENTWISE_RULES)
    for rule in rules:
        result = rule.apply(node)
        if result is not None and result is not node:
            return result
    return None


def simplify(graph: Graph) -> Graph:
    """Apply every rule of ``RULES`` until none applies."""
    return rewrite(graph, simplify_node)
