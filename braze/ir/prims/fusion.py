"""Compiler-only primitives: ``fusion`` (a nested computation run as one kernel) and
``get_element`` (one result of a multi-output node). A fusion appears only after the fusion
pass, never in user traces, so it has no VJP; the interpreter and the backends evaluate it
by walking the nested graph. ``get_element`` also reads the results of a loop (a
``scan``), in user traces too: its VJP hands the loop a ``Cotangents``, one entry per
result (a fusion's kind ``control`` holds such a loop, run by the backend's loop code)."""

from __future__ import annotations

from typing import Any

from braze.ir.errors import ShapeError
from braze.ir.primitive import Aval, Category, Primitive, register

KINDS = ("loop", "input", "row", "output", "collective", "control")


def _fusion_rule(*inputs: Aval, kind: str, computation: Any) -> Aval | tuple[Aval, ...]:
    if kind not in KINDS:
        raise ShapeError(f"fusion: kind must be one of {KINDS}, got {kind!r}")
    expected = tuple(p.aval for p in computation.params)
    if tuple(inputs) != expected:
        raise ShapeError(f"fusion: operands {inputs} do not match the computation's parameters {expected}")
    outputs = tuple(o.aval for o in computation.outputs)
    return outputs[0] if len(outputs) == 1 else outputs


def _get_element_rule(x: Any, *, index: int) -> Aval:
    if isinstance(x, Aval) or not 0 <= index < len(x):
        raise ShapeError(f"get_element: index {index} of a value with {1 if isinstance(x, Aval) else len(x)} results")
    return x[index]


class Cotangents:
    """The cotangent of a multi-output node's results: one per result, None for a zero.
    Cotangents reaching the node from several ``get_element`` readers add up."""

    __slots__ = ("parts",)

    def __init__(self, parts: tuple) -> None:
        self.parts = parts

    @staticmethod
    def one(count: int, index: int, g: Any) -> Cotangents:
        return Cotangents(tuple(g if k == index else None for k in range(count)))

    def __add__(self, other: Cotangents) -> Cotangents:
        return Cotangents(
            tuple(a if b is None else b if a is None else a + b for a, b in zip(self.parts, other.parts, strict=True))
        )


def _get_element_vjp(g: Any, x: Any, *, out: Any, index: int) -> tuple:
    return (Cotangents.one(len(x.aval), index, g),)


def _get_element_jvp(tangents: tuple, x: Any, *, out: Any, index: int) -> Any:
    (tangent,) = tangents
    return None if tangent is None else tangent[index]


def _evaluated_elsewhere(*args: Any, **attrs: Any) -> Any:
    raise RuntimeError("fusion nodes are evaluated by the interpreter and the backends, not by NumPy directly")


fusion = register(
    Primitive(
        "fusion",
        _fusion_rule,
        _evaluated_elsewhere,
        None,
        ("kind", "computation"),
        variadic=True,
        category=Category.FUSION,
    )
)
get_element = register(
    Primitive(
        "get_element",
        _get_element_rule,
        lambda x, *, index: x[index],
        _get_element_vjp,
        ("index",),
        category=Category.FUSION,
        jvp=_get_element_jvp,
    )
)
