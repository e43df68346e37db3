"""The loops' JVPs (forward mode): a loop over primals and tangents together.

The tangent of a scan is a scan whose carries, sequences and constants are the primal ones
followed by the tangents of the floating ones, and whose body is the forward body's JVP
(traced once, with the forward mode every op uses); a while loop's likewise, its condition
reading the primal carries only. Inputs without a tangent get zeros.
"""

from __future__ import annotations

from typing import Any

from braze import ops, transforms
from braze.ir.graph import Graph
from braze.ir.primitive import Aval
from braze.ir.prims import loops
from braze.ir.prims.fusion import get_element
from braze.lax.body import floating, inline, reader, trace
from braze.tensor import Tensor


def _directions(tangents: tuple, tensors: list[Tensor], floats: list[int]) -> list[Tensor]:
    return [ops.zeros_like(tensors[k]) if tangents[k] is None else tangents[k] for k in floats]


def _pushed(body: Graph, primals: list[Tensor], floats: list[int], directions: list[Tensor]) -> tuple[list, list]:
    """``body``'s outputs at ``primals`` and their tangents along ``directions`` (given for
    the primals at positions ``floats``)."""

    def at(*moved: Tensor) -> list[Tensor]:
        args = list(primals)
        for k, t in zip(floats, moved, strict=True):
            args[k] = t
        return inline(body, args)

    outs, tangents = transforms.jvp(at, [primals[k] for k in floats], directions)
    return list(outs), list(tangents)


def scan_jvp(
    tangents: tuple, *inputs: Tensor, out: Any, body: Graph, length: int, reverse: bool, carries: int, xs: int
):
    init, seqs, consts = list(inputs[:carries]), list(inputs[carries : carries + xs]), list(inputs[carries + xs :])
    fc, fx, fk = floating(init), floating(seqs), floating(consts)
    fy = [k for k, o in enumerate(body.outputs[carries:]) if o.aval.dtype.is_float]
    dc = _directions(tangents[:carries], init, fc)
    dx = _directions(tangents[carries : carries + xs], seqs, fx)
    dk = _directions(tangents[carries + xs :], consts, fk)

    def step(operands: list[Tensor]) -> list[Tensor]:
        take = reader(operands)
        c, t_c, x, t_x, k, t_k = take(carries), take(len(fc)), take(xs), take(len(fx)), take(len(consts)), take(len(fk))
        floats = [*fc, *(carries + j for j in fx), *(carries + xs + j for j in fk)]
        outs, pushed = _pushed(body, [*c, *x, *k], floats, [*t_c, *t_x, *t_k])
        return [*outs[:carries], *(pushed[j] for j in fc), *outs[carries:], *(pushed[carries + j] for j in fy)]

    operands = [*init, *dc, *seqs, *dx, *consts, *dk]
    avals = [t.aval for t in operands]
    for k in range(len(init) + len(dc), len(init) + len(dc) + len(seqs) + len(dx)):
        avals[k] = Aval(avals[k].shape[1:], avals[k].dtype)  # the body sees one step of a sequence
    traced, _ = trace(step, avals, inputs[0].device, "scan tangent")
    node = loops.scan.bind(
        *operands,
        *traced.captured,
        body=traced.graph,
        length=length,
        reverse=reverse,
        carries=carries + len(fc),
        xs=xs + len(fx),
    )
    ys = len(body.outputs) - carries
    result: list[Tensor | None] = [None] * (carries + ys)
    for j, k in enumerate(fc):
        result[k] = get_element.bind(node, index=carries + j)
    for j, k in enumerate(fy):
        result[carries + k] = get_element.bind(node, index=carries + len(fc) + ys + j)
    return tuple(result)


def while_loop_jvp(
    tangents: tuple, *inputs: Tensor, out: Any, cond: Graph, body: Graph, carries: int, cond_consts: int
):
    init = list(inputs[:carries])
    cond_operands, body_operands = list(inputs[carries : carries + cond_consts]), list(inputs[carries + cond_consts :])
    fc, fk = floating(init), floating(body_operands)
    dc = _directions(tangents[:carries], init, fc)
    dk = _directions(tangents[carries + cond_consts :], body_operands, fk)
    device = inputs[0].device

    def condition(operands: list[Tensor]) -> list[Tensor]:
        take = reader(operands)
        c, _, k = take(carries), take(len(fc)), take(cond_consts)
        return inline(cond, [*c, *k])

    def step(operands: list[Tensor]) -> list[Tensor]:
        take = reader(operands)
        c, t_c, k, t_k = take(carries), take(len(fc)), take(len(body_operands)), take(len(fk))
        outs, pushed = _pushed(body, [*c, *k], [*fc, *(carries + j for j in fk)], [*t_c, *t_k])
        return [*outs, *(pushed[j] for j in fc)]

    state = [*init, *dc]
    traced_cond, _ = trace(condition, [t.aval for t in [*state, *cond_operands]], device, "while_loop tangent")
    traced_body, _ = trace(step, [t.aval for t in [*state, *body_operands, *dk]], device, "while_loop tangent")
    node = loops.while_loop.bind(
        *state,
        *cond_operands,
        *traced_cond.captured,
        *body_operands,
        *dk,
        *traced_body.captured,
        cond=traced_cond.graph,
        body=traced_body.graph,
        carries=len(state),
        cond_consts=cond_consts + len(traced_cond.captured),
    )
    result: list[Tensor | None] = [None] * carries
    for j, k in enumerate(fc):
        result[k] = get_element.bind(node, index=carries + j)
    return tuple(result)


loops.install_rule("scan_jvp", scan_jvp)
loops.install_rule("while_loop_jvp", while_loop_jvp)
