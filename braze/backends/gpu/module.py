"""A graph as a GPU module: its kernels in launch order and where every value lives.

Every kernel takes the same arguments: the arena (the buffer assignment's temporaries,
allocated once per executable) and the module's other buffers, numbered parameters first,
then each result the graph returns, then non-scalar constants (uploaded once). A value a
kernel reads is a parameter's buffer, a result's buffer, a constant's, or an offset into
the arena; offsets are compiled into the source, so a launch passes the same arguments
every time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from braze.backends.gpu.dialect import Dialect
from braze.backends.gpu.kernels import Kernel, KernelWriter, LaunchShape
from braze.backends.layout import Layout, Output, buffers_of, lay_out
from braze.ir.graph import Graph, Node, parameter
from braze.ir.primitive import Category
from braze.ir.prims.fusion import fusion
from braze.ir.prims.sources import constant


@dataclass
class ModulePlan:
    graph: Graph
    kernels: list[Kernel]
    arena_bytes: int
    results: list[Node] = field(default_factory=list)  # the nodes with a result buffer, by slot
    constants: list[np.ndarray] = field(default_factory=list)  # the constant buffers' contents, by slot
    outputs: list[Output] = field(default_factory=list)  # where each graph output comes from

    @property
    def buffer_count(self) -> int:
        return len(self.graph.params) + len(self.results) + len(self.constants)


def as_computation(node: Node) -> Graph:
    """A node that no fusion holds, as a computation of its own (eager ops, collectives)."""
    params = tuple(parameter(k, i.aval) for k, i in enumerate(node.inputs))
    return Graph(params, (Node.make(node.op, params, node.attrs, node.aval),))


class _Locations:
    """Where each value lives; result slots are fixed before any kernel is written, so a
    constant found while writing one takes the next buffer after them."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.constants: list[np.ndarray] = []
        self.constant_slots: dict[int, int] = {}
        self.first = len(layout.graph.params)

    def constant(self, node: Node) -> str:
        if id(node) not in self.constant_slots:
            self.constant_slots[id(node)] = len(self.constants)
            self.constants.append(np.ascontiguousarray(node.attr("value").array))
        return f"b{self.first + len(self.layout.results) + self.constant_slots[id(node)]}"

    def of(self, node: Node) -> str:
        if node.op.category is Category.PARAMETER:
            return f"b{node.attr('index')}"
        if node.op is constant:
            return self.constant(node)
        slot = self.layout.slots.get(id(node))
        if slot is not None:
            return f"b{self.first + slot}"
        return f"(arena + {self.layout.buffers.offsets[id(node)]})"


def _reductions_apart(
    computation: Graph, operands: list[str], results: list[str | None]
) -> list[tuple[Graph, list[str], list[str | None]]]:
    """The kernels of one fusion: itself, less any reduction of another of its stored
    results (a bias gradient beside the gradient it sums), which becomes a kernel of its own
    reading that result's buffer, launched after it. In the same kernel each work-group
    would compute the reduced values again, the whole fused producer per element, since a
    kernel's work-groups cannot wait for each other's stores."""
    position = {id(o): k for k, o in enumerate(computation.outputs)}
    apart = [
        k
        for k, o in enumerate(computation.outputs)
        if o.op.category is Category.REDUCTION
        and results[k] is not None
        and id(o.inputs[0]) in position
        and results[position[id(o.inputs[0])]] is not None
    ]
    if not apart:
        return [(computation, operands, results)]
    kept = [k for k in range(len(computation.outputs)) if k not in apart]
    fused = Graph(computation.params, tuple(computation.outputs[k] for k in kept))
    jobs = [(fused, operands, [results[k] for k in kept])]
    for k in apart:
        reduction = computation.outputs[k]
        source = parameter(0, reduction.inputs[0].aval)
        alone = Graph((source,), (Node.make(reduction.op, (source,), reduction.attrs, reduction.aval),))
        jobs.append((alone, [results[position[id(reduction.inputs[0])]]], [results[k]]))
    return jobs


def plan_module(graph: Graph, dialect: Dialect, launch: LaunchShape, prefix: str, alignment: int) -> ModulePlan:
    """The kernels of an optimized graph (every op in a fusion, or run as one on its own)."""
    layout = lay_out(graph, buffers_of(graph, alignment))
    where = _Locations(layout)
    jobs = []
    for node in layout.kernels:
        computation = node.attr("computation") if node.op is fusion else as_computation(node)
        results = [None if r is None else where.of(r) for r in layout.results_of(node)]
        jobs += _reductions_apart(computation, [where.of(i) for i in node.inputs], results)
    kernels = [
        KernelWriter(dialect, launch, operands, results, where.constant).write(f"{prefix}_k{k}", computation)
        for k, (computation, operands, results) in enumerate(jobs)
    ]
    return ModulePlan(graph, kernels, layout.buffers.peak_bytes, layout.results, where.constants, layout.outputs)
