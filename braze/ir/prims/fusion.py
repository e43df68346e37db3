"""Compiler-only primitives: ``fusion`` (a nested computation run as one kernel) and
``get_element`` (one result of a multi-output fusion). They appear only after the fusion
pass, never in user traces, so they have no VJP; the interpreter and the backends evaluate
them by walking the nested graph."""

from __future__ import annotations

from typing import Any

from braze.ir.errors import ShapeError
from braze.ir.primitive import Aval, Category, Primitive, register

KINDS = ("loop", "input", "output", "collective")


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
        "get_element", _get_element_rule, lambda x, *, index: x[index], None, ("index",), category=Category.FUSION
    )
)
