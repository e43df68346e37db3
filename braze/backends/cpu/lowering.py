"""The CPU backend's lowering table: how generated C computes each primitive.

An elementwise, movement or source primitive (and a parameter) computes one element at an
index, inside any fused loop: the C-family rules (``cstyle``). A reduction, contraction,
window, scan or scatter primitive is the root of a kernel of its own, ``rule(emitter, computation, outputs,
root)`` writing the loop nest with its fused producers and epilogue. A collective is a call
from the entry function into the transport, ``rule(node, operand, result, shape_name)``. A
loop (``scan``, ``while_loop``) is a loop of the entry function around its body's compiled
entry, ``rule(plan, name, kernel, results, buffer_of, compile_body)``.
"""

from __future__ import annotations

from typing import Any

from braze.backends.cpu import collectives
from braze.backends.cpu.contractions import CONTRACTION_EMITTERS
from braze.backends.cpu.loop_kernel import emit_loop
from braze.backends.cpu.loops import emit_reduction_kernel
from braze.backends.cpu.scans import emit_scan_kernel, emit_sort_kernel
from braze.backends.cpu.scatter import emit_scatter_add
from braze.backends.cpu.windows import WINDOW_EMITTERS
from braze.backends.cstyle import ELEMENT_RULES, OPS, elementwise
from braze.backends.cstyle.ops import OpRule, render
from braze.ir.dtypes import float32, float64
from braze.ir.graph import Node
from braze.ir.primitive import Primitive
from braze.ir.prims import elementwise as ew
from braze.ir.prims.collectives import all_reduce
from braze.ir.prims.indexing import scatter_add
from braze.ir.prims.loops import scan, while_loop
from braze.ir.prims.reductions import reduce_max, reduce_prod, reduce_sum
from braze.ir.prims.scans import argsort, cumprod, cumsum, sort

_PICKS = {float32: ("braze_pickf", "float"), float64: ("braze_pick", "double")}


def _branch_free(primitive: Primitive, select: str) -> OpRule:
    """``primitive``'s float rule with its ternary taken as vmath's bitwise select
    (``select``: the condition and the two values, of the operand ``{0}`` in C type
    ``{t}``, with ``{p}`` the select itself). GCC if-converts a ternary, and a comparison
    taken as a number, before it vectorizes, and the kernels compiled without
    if-conversion (emit.py's branchy ones: a reduction kernel of several sums) kept a
    ReLU's or a sign's branch in their loop, which then ran scalar."""
    table = OPS[primitive]

    def rule(operands: list[str], node: Node) -> str:
        if node.dtype not in _PICKS:
            return render(table, operands, node)
        pick, t = _PICKS[node.dtype]
        return f"{pick}({select.format(*operands, t=t, p=pick)})"

    return rule


LOWERINGS: dict[Primitive, Any] = {
    **ELEMENT_RULES,
    # NaN stays NaN in both, and either zero gives +0, as NumPy's maximum(x, 0) and sign.
    ew.relu: elementwise(_branch_free(ew.relu, "{0} <= 0, ({t})0, {0}")),
    ew.sign: elementwise(_branch_free(ew.sign, "{0} != {0}, {0}, {p}({0} > 0, ({t})1, {p}({0} < 0, ({t})-1, ({t})0))")),
    # NaN where either is NaN. As ternaries, a chain of them did not vectorize even where
    # GCC if-converts (a cross entropy's clamp of its logits and their row maximum).
    ew.max_: elementwise(_branch_free(ew.max_, "({0} != {0}) | ({0} > {1}), {0}, {1}")),
    ew.min_: elementwise(_branch_free(ew.min_, "({0} != {0}) | ({0} < {1}), {0}, {1}")),
    reduce_sum: emit_reduction_kernel,
    reduce_prod: emit_reduction_kernel,
    reduce_max: emit_reduction_kernel,
    cumsum: emit_scan_kernel,
    cumprod: emit_scan_kernel,
    sort: emit_sort_kernel,
    argsort: emit_sort_kernel,
    **CONTRACTION_EMITTERS,
    **WINDOW_EMITTERS,
    scatter_add: emit_scatter_add,
    all_reduce: collectives.emit_call,
    scan: emit_loop,
    while_loop: emit_loop,
}
