"""Small queries the passes share: the value of a scalar splat, and how to build one."""

from __future__ import annotations

from braze.ir.dtypes import readable
from braze.ir.graph import Node
from braze.ir.primitive import Aval, Literal
from braze.ir.prims.sources import constant
from braze.ir.prims.structural import broadcast_in_dim


def splat_value(node: Node) -> float | int | bool | None:
    """The value of a 0-d constant, or of a broadcast of one; None for anything else."""
    if node.op is broadcast_in_dim:
        node = node.inputs[0]
    if node.op is constant:
        literal: Literal = node.attr("value")
        if literal.array.ndim == 0:
            return readable(literal.array, literal.aval.dtype).item()
    return None


def splat(value: float | int | bool, aval: Aval) -> Node:
    """A node holding ``value`` everywhere in ``aval`` (a broadcast 0-d constant)."""
    scalar = Node.make(constant, (), {"value": Literal(value, aval.dtype)}, Aval((), aval.dtype))
    if not aval.shape:
        return scalar
    return Node.make(broadcast_in_dim, (scalar,), {"shape": aval.shape, "broadcast_dimensions": ()}, aval)
