"""The GPU backend's lowering table: how a work-item computes each primitive at one
element (``rule(emitter, node, index)``). Elementwise, movement and source primitives take
the C-family rules (``cstyle``); a reduction, contraction, window op or scan at an output
element is a loop of the work-item (``elemental.py``), which kernels.py replaces by
work-group phases where they repay it. A loop runs its body's launches from the host."""

from __future__ import annotations

from typing import Any

from braze.backends.cstyle import ELEMENT_RULES
from braze.backends.gpu.elemental import GpuEmitter
from braze.ir.primitive import Primitive
from braze.ir.prims.collectives import all_reduce
from braze.ir.prims.conv import conv, conv_grad_filter, conv_grad_input
from braze.ir.prims.indexing import scatter_add
from braze.ir.prims.linalg import dot_general
from braze.ir.prims.loops import scan, while_loop
from braze.ir.prims.reductions import reduce_max, reduce_prod, reduce_sum
from braze.ir.prims.scans import argsort, cumprod, cumsum, sort
from braze.ir.prims.window import reduce_window, select_and_gather_add, select_and_scatter_add
from braze.runtime.backend import NotLowered


def host_loop(*args: Any) -> None:
    """A loop is a host loop of its body's launch sequence (``staged.StagedExecutable``),
    never code inside a kernel: the fusion pass leaves it a kernel of its own."""
    raise AssertionError("a loop reached a GPU kernel's code; it runs from the host (staged.py)")


LOWERINGS: dict[Primitive, Any] = {
    **ELEMENT_RULES,
    reduce_sum: GpuEmitter.reduce,
    reduce_prod: GpuEmitter.reduce,
    reduce_max: GpuEmitter.reduce,
    cumsum: GpuEmitter.scan,
    cumprod: GpuEmitter.scan,
    sort: GpuEmitter.sort,
    argsort: GpuEmitter.sort,
    dot_general: GpuEmitter.dot,
    conv: GpuEmitter.conv,
    conv_grad_input: GpuEmitter.conv_grad_input,
    conv_grad_filter: GpuEmitter.conv,
    reduce_window: GpuEmitter.reduce_window,
    select_and_gather_add: GpuEmitter.gather,
    select_and_scatter_add: GpuEmitter.scatter,
    scatter_add: GpuEmitter.scatter_add,
    # Eager GPU tensors all-reduce on the host transport; a compiled GPU graph cannot yet.
    all_reduce: NotLowered("collectives run on the host transport, between eager GPU ops only"),
    scan: host_loop,
    while_loop: host_loop,
}
