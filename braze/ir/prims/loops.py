"""Loops over a body graph (XLA's While, JAX's ``lax.scan`` and ``lax.while_loop``): the
body is traced once into a ``Graph`` held as an attribute, as a fusion holds its
computation, so a loop of any length is one node.

``scan`` operands are the carries, the sequences (``xs``, stepped along their leading axis)
and the constants the body reads; its results are the final carries and the per-step
outputs stacked along a new leading axis. ``while_loop`` operands are the carries and the
constants of its condition and of its body; its results are the final carries. Both always
yield a tuple of results (read with ``get_element``).

The NumPy twin runs the body graph with the evaluator the reference backend installs (this
layer cannot evaluate a graph itself). The gradient rules (the scan's VJP, a reverse scan
whose body is the forward body's VJP; the JVPs, loops over primals and tangents) trace new
bodies, so the tensor layer (``braze.lax``) installs them: a rule of this layer can bind
primitives but not trace. A while loop has no VJP (as in JAX): its rule says so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from braze.ir.errors import ShapeError
from braze.ir.primitive import Aval, Category, Primitive, register

Evaluator = Callable[[Any, list], list]
_EVALUATE: list[Evaluator | None] = [None]
_TRACED: dict[str, Callable[..., Any]] = {}


def install_evaluator(evaluate: Evaluator) -> None:
    """How the NumPy twins run a body graph on arrays (the reference interpreter's evaluate)."""
    _EVALUATE[0] = evaluate


def install_rule(name: str, rule: Callable[..., Any]) -> None:
    """A gradient rule that traces a new body (``scan_vjp``, ``scan_jvp``, ``while_loop_jvp``),
    installed by ``braze.lax``."""
    _TRACED[name] = rule


def _traced(name: str) -> Callable[..., Any]:
    def rule(*args: Any, **attrs: Any) -> Any:
        found = _TRACED.get(name)
        if found is None:
            raise RuntimeError(f"{name}: the rule traces a body with braze.lax, which is not loaded")
        return found(*args, **attrs)

    return rule


def _evaluator() -> Evaluator:
    if _EVALUATE[0] is None:
        raise RuntimeError("loops: no graph evaluator installed (import braze.backends.reference)")
    return _EVALUATE[0]


def _expect_params(name: str, what: str, graph: Any, expected: tuple[Aval, ...]) -> None:
    found = tuple(p.aval for p in graph.params)
    if found != expected:
        shown = ", ".join(map(str, expected))
        raise ShapeError(f"{name}: the {what} takes ({', '.join(map(str, found))}), its operands are ({shown})")


def _expect_carries(name: str, graph: Any, carries: tuple[Aval, ...]) -> None:
    outputs = tuple(o.aval for o in graph.outputs)
    if len(outputs) < len(carries):
        raise ShapeError(f"{name}: the body returns {len(outputs)} values for {len(carries)} carries")
    for k, (before, after) in enumerate(zip(carries, outputs, strict=False)):
        if before != after:
            raise ShapeError(
                f"{name}: the body turns carry {k} from {before} into {after}; a carry keeps its shape and dtype"
            )


def _scan_rule(*operands: Aval, body: Any, length: int, reverse: bool, carries: int, xs: int) -> tuple[Aval, ...]:
    if not isinstance(length, int) or length < 0:
        raise ShapeError(f"scan: length must be a non-negative integer, got {length!r}")
    init, seqs, consts = operands[:carries], operands[carries : carries + xs], operands[carries + xs :]
    for k, x in enumerate(seqs):
        if not x.shape or x.shape[0] != length:
            raise ShapeError(f"scan: xs operand {k} is {x}, whose leading axis is not the length {length}")
    _expect_params("scan", "body", body, (*init, *(Aval(x.shape[1:], x.dtype) for x in seqs), *consts))
    _expect_carries("scan", body, init)
    stacked = tuple(Aval((length, *o.aval.shape), o.aval.dtype) for o in body.outputs[carries:])
    return (*init, *stacked)


def _scan_impl(*arrays: np.ndarray, body: Any, length: int, reverse: bool, carries: int, xs: int) -> tuple:
    evaluate = _evaluator()
    carry = list(arrays[:carries])
    seqs, consts = arrays[carries : carries + xs], list(arrays[carries + xs :])
    steps = []
    for i in reversed(range(length)) if reverse else range(length):
        results = evaluate(body, [*carry, *(x[i] for x in seqs), *consts])
        carry = results[:carries]
        steps.append(results[carries:])
    if reverse:
        steps.reverse()
    stacked = [
        np.stack([step[k] for step in steps]) if steps else np.zeros((0, *output.aval.shape), output.aval.dtype.numpy)
        for k, output in enumerate(body.outputs[carries:])
    ]
    return (*carry, *stacked)


scan = register(
    Primitive(
        "scan",
        _scan_rule,
        _scan_impl,
        _traced("scan_vjp"),
        ("body", "length", "reverse", "carries", "xs"),
        variadic=True,
        doc="a body graph run once per step over carries and the steps of sequences",
        category=Category.LOOP,
        jvp=_traced("scan_jvp"),
    )
)


def _while_rule(*operands: Aval, cond: Any, body: Any, carries: int, cond_consts: int) -> tuple[Aval, ...]:
    init = operands[:carries]
    cond_operands = operands[carries : carries + cond_consts]
    _expect_params("while_loop", "condition", cond, (*init, *cond_operands))
    _expect_params("while_loop", "body", body, (*init, *operands[carries + cond_consts :]))
    if len(cond.outputs) != 1 or cond.outputs[0].aval.shape or cond.outputs[0].aval.dtype.kind != "b":
        found = ", ".join(str(o.aval) for o in cond.outputs)
        raise ShapeError(f"while_loop: the condition must return one boolean scalar, it returns ({found})")
    _expect_carries("while_loop", body, init)
    if len(body.outputs) != carries:
        raise ShapeError(f"while_loop: the body returns {len(body.outputs)} values for {carries} carries")
    return tuple(init)


def _while_impl(*arrays: np.ndarray, cond: Any, body: Any, carries: int, cond_consts: int) -> tuple:
    evaluate = _evaluator()
    carry = list(arrays[:carries])
    cond_operands, body_operands = list(arrays[carries : carries + cond_consts]), list(arrays[carries + cond_consts :])
    while bool(evaluate(cond, [*carry, *cond_operands])[0]):
        carry = evaluate(body, [*carry, *body_operands])
    return tuple(carry)


def _while_vjp(g: Any, *inputs: Any, out: Any, **attrs: Any) -> tuple:
    raise NotImplementedError(
        "while_loop is not reverse-mode differentiable: its number of steps is known only when it runs, so "
        "its steps' values cannot be kept for the backward pass (as in JAX). Use braze.lax.fori_loop with "
        "bounds known when tracing, or braze.lax.scan"
    )


while_loop = register(
    Primitive(
        "while_loop",
        _while_rule,
        _while_impl,
        _while_vjp,
        ("cond", "body", "carries", "cond_consts"),
        variadic=True,
        doc="a body graph run while a condition graph holds",
        category=Category.LOOP,
        jvp=_traced("while_loop_jvp"),
    )
)
