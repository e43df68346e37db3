"""JVP rules that follow from what a primitive is, as JAX derives them (``deflinear``,
``defbilinear``): a declaration names one of these instead of writing its rule out.

- ``Linear``: an op linear in some operands maps their tangents as it maps them (a reshape
  reshapes its tangent); the other operands only choose (a select's predicate, the operand
  whose maxima a window picks), so their tangents do not matter.
- ``Bilinear``: the product rule, ``f(dx, y) + f(x, dy)`` (a dot, a convolution).
- ``Diagonal``: an elementwise op's Jacobian with respect to each operand is diagonal, so it
  is its own transpose and the VJP rule applied to a tangent gives that operand's part of
  the JVP exactly.

Each rule is called when at least one operand has a tangent (None for the others) and gives
None for a zero tangent.
"""

from __future__ import annotations

from typing import Any

from braze.ir.primitive import Derivation, JVPRule, Literal, Primitive


def zeros_like(x: Any) -> Any:
    """Zeros of ``x``'s shape, dtype and device: the tangent of an operand that has none."""
    zero = sources.constant.bind(value=Literal(0, x.dtype), like=x.device)
    return structural.broadcast_in_dim.bind(zero, shape=tuple(x.shape), broadcast_dimensions=())


def total(parts: list[Any]) -> Any:
    """The sum of the tangent terms that are not None (None when all are)."""
    found = None
    for part in parts:
        if part is not None:
            found = part if found is None else elementwise.add.bind(found, part)
    return found


class Linear(Derivation):
    """Linear in the operands at ``positions`` jointly (in every operand when none are given)."""

    def __init__(self, *positions: int) -> None:
        self.positions = positions

    def rule(self, primitive: Primitive) -> JVPRule:
        def jvp(tangents: tuple, *inputs: Any, out: Any, **attrs: Any) -> Any:
            linear = self.positions or range(len(inputs))
            if all(tangents[i] is None for i in linear):
                return None
            operands = list(inputs)
            for i in linear:
                operands[i] = zeros_like(inputs[i]) if tangents[i] is None else tangents[i]
            return primitive.bind(*operands, **attrs)

        return jvp


class Bilinear(Derivation):
    """Linear in each of its two operands when the other is fixed."""

    def rule(self, primitive: Primitive) -> JVPRule:
        def jvp(tangents: tuple, x: Any, y: Any, out: Any, **attrs: Any) -> Any:
            dx, dy = tangents
            return total(
                [
                    None if dx is None else primitive.bind(dx, y, **attrs),
                    None if dy is None else primitive.bind(x, dy, **attrs),
                ]
            )

        return jvp


class Diagonal(Derivation):
    """Elementwise, with a result of its operands' shape and dtype."""

    def rule(self, primitive: Primitive) -> JVPRule:
        def jvp(tangents: tuple, *inputs: Any, out: Any, **attrs: Any) -> Any:
            parts = []
            for i, tangent in enumerate(tangents):
                if tangent is None:
                    continue
                part = primitive.vjp(tangent, *inputs, out=out, **attrs)[i]
                parts.append(part() if callable(part) else part)
            return total(parts)

        return jvp


DIAGONAL = Diagonal()
BILINEAR = Bilinear()
LINEAR = Linear()

# The families' declarations name the derivations above, so the families come after them.
from braze.ir.prims import elementwise, sources, structural  # noqa: E402
