"""The scan's VJP: a reverse scan whose body is the VJP of the forward body.

The backward steps need the carry each forward step started from: the forward scan with
those carries as more per-step outputs records them (CSE then reads the forward scan's
own results from this one, so on a compiled device the forward pass runs once). The
reverse scan then carries the cotangent of the carry and the sum of the constants'
cotangents, and steps over the recorded carries, the ``xs`` and the cotangents of the
per-step outputs, giving the cotangent of each step's ``x``. Its body is traced once, by
differentiating the forward body's graph with the autodiff every op uses, so a loop's
gradient is itself a loop (and can be differentiated again).
"""

from __future__ import annotations

from typing import Any

from braze import autodiff, ops
from braze.ir.graph import Graph
from braze.ir.primitive import Aval
from braze.ir.prims import loops
from braze.ir.prims.fusion import Cotangents, get_element
from braze.lax.body import floating, inline, reader, trace
from braze.tensor import Tensor


def _or_zeros(g: Tensor | None, like: Tensor) -> Tensor:
    return ops.zeros_like(like) if g is None else g


def _step_carries(body: Graph, operands: list, length: int, reverse: bool, carries: int, xs: int) -> list[Tensor]:
    """The carry each step starts from, stacked in step order: a scan of the same body with
    its input carries as more per-step outputs, after the forward scan's own (CSE then reads
    the forward scan's results from it, so the forward pass runs once)."""
    recorder = Graph(body.params, (*body.outputs, *body.params[:carries]))
    node = loops.scan.bind(*operands, body=recorder, length=length, reverse=reverse, carries=carries, xs=xs)
    return [get_element.bind(node, index=len(body.outputs) + k) for k in range(carries)]


def scan_vjp(g: Cotangents, *inputs: Tensor, out: Any, body: Graph, length: int, reverse: bool, carries: int, xs: int):
    init, seqs, consts = list(inputs[:carries]), list(inputs[carries : carries + xs]), list(inputs[carries + xs :])
    y_avals = [o.aval for o in body.outputs[carries:]]
    fc, fx, fk = floating(init), floating(seqs), floating(consts)
    fy = [k for k, a in enumerate(y_avals) if a.dtype.is_float]
    init_device = inputs[0].device
    started = _step_carries(body, list(inputs), length, reverse, carries, xs)
    ct_carry = [_or_zeros(g.parts[k], init[k]) for k in fc]
    stacked = [Aval((length, *y_avals[k].shape), y_avals[k].dtype) for k in fy]
    ct_ys = [
        ops.zeros(a.shape, a.dtype, init_device) if g.parts[carries + k] is None else g.parts[carries + k]
        for k, a in zip(fy, stacked, strict=True)
    ]
    sums = [ops.zeros_like(consts[k]) for k in fk]

    def backward_step(operands: list[Tensor]) -> list[Tensor]:
        take = reader(operands)
        ct_c, acc, c_t, x_t, ct_y, k_t = (
            take(len(fc)),
            take(len(fk)),
            take(carries),
            take(xs),
            take(len(fy)),
            take(len(consts)),
        )
        primals = [c_t[k] for k in fc] + [x_t[k] for k in fx] + [k_t[k] for k in fk]
        with autodiff.enable_grad():
            for p in primals:
                p.requires_grad = True
            results = inline(body, [*c_t, *x_t, *k_t])
        pairs = [(results[k], ct) for k, ct in zip(fc, ct_c, strict=True)]
        pairs += [(results[carries + k], ct) for k, ct in zip(fy, ct_y, strict=True)]
        pairs = [(r, ct) for r, ct in pairs if r.requires_grad]
        if pairs:
            grads = autodiff.gradients(
                [r for r, _ in pairs], primals, [ct for _, ct in pairs], create_graph=True, allow_unused=True
            )
        else:
            grads = (None,) * len(primals)
        grads = [_or_zeros(gr, p) for gr, p in zip(grads, primals, strict=True)]
        d_c, d_x, d_k = grads[: len(fc)], grads[len(fc) : len(fc) + len(fx)], grads[len(fc) + len(fx) :]
        return [*d_c, *(a + d for a, d in zip(acc, d_k, strict=True)), *d_x]

    avals = [t.aval for t in [*ct_carry, *sums]]
    avals += [b.aval for b in body.params[:carries]] + [b.aval for b in body.params[carries : carries + xs]]
    avals += [y_avals[k] for k in fy] + [t.aval for t in consts]
    backward, _ = trace(backward_step, avals, init_device, "scan gradient")
    state = len(fc) + len(fk)
    node = loops.scan.bind(
        *ct_carry,
        *sums,
        *started,
        *seqs,
        *ct_ys,
        *consts,
        *backward.captured,
        body=backward.graph,
        length=length,
        reverse=not reverse,
        carries=state,
        xs=carries + xs + len(fy),
    )
    results = [get_element.bind(node, index=k) for k in range(state + len(fx))]
    grads: list[Tensor | None] = [None] * len(inputs)
    for j, k in enumerate(fc):
        grads[k] = results[j]
    for j, k in enumerate(fk):
        grads[carries + xs + k] = results[len(fc) + j]
    for j, k in enumerate(fx):
        grads[carries + k] = results[state + j]
    return tuple(grads)


loops.install_rule("scan_vjp", scan_vjp)
