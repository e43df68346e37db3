"""The module plan every backend's code generator starts from: a graph's kernels in run
order, which of its results the graph returns (each in a buffer of its own, a result
returned twice in one), where each graph output comes from, and which results of a
multi-output kernel anything reads. Temporaries live at the buffer assignment's offsets
in one arena. How a location is spelled (a pointer of the entry function, a kernel
argument) is the backend's business."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from braze.ir.graph import Graph, Node, schedule
from braze.ir.primitive import Category
from braze.ir.prims.fusion import get_element
from braze.ir.prims.sources import constant
from braze.passes.buffers import BufferAssignment, assign


@dataclass(frozen=True)
class Output:
    """Where one graph output comes from: a parameter (``index``), a constant (``array``)
    or the result buffer of slot ``index``."""

    kind: str  # "param", "constant" or "result"
    index: int = 0
    array: np.ndarray | None = None


@dataclass
class Layout:
    graph: Graph
    kernels: list[Node]  # in run order
    buffers: BufferAssignment
    results: list[Node]  # the nodes with a result buffer of their own, by slot
    slots: dict[int, int]  # id(node) -> its result buffer's slot
    outputs: list[Output]  # one per graph output
    elements: dict[int, dict[int, Node]]  # per multi-output kernel: the get_element of each result read

    def results_of(self, kernel: Node) -> list[Node | None]:
        """The node holding each result of ``kernel`` (the kernel itself, or the
        get_element of a multi-output one); None for a result nobody reads."""
        if not kernel.multi_output:
            return [kernel]
        produced = self.elements.get(id(kernel), {})
        return [produced.get(k) for k in range(len(kernel.aval))]


def is_data(node: Node) -> bool:
    """A parameter or a constant: a value that no kernel computes."""
    return node.op.category is Category.PARAMETER or node.op is constant


def buffers_of(graph: Graph, alignment: int) -> BufferAssignment:
    """The pipeline's buffer assignment of an optimized graph, or one made now."""
    return graph.annotations.get("buffers") or assign(graph, alignment)


def lay_out(graph: Graph, buffers: BufferAssignment) -> Layout:
    """The plan of an optimized graph whose temporaries live where ``buffers`` says."""
    elements: dict[int, dict[int, Node]] = {}
    for node in graph.nodes():
        if node.op is get_element:
            elements.setdefault(id(node.inputs[0]), {})[node.attr("index")] = node
    results: list[Node] = []
    slots: dict[int, int] = {}
    outputs = []
    for output in graph.outputs:
        if output.op is constant:
            outputs.append(Output("constant", array=np.array(output.attr("value").array)))
        elif is_data(output):
            outputs.append(Output("param", output.attr("index")))
        else:
            if id(output) not in slots:
                slots[id(output)] = len(results)
                results.append(output)
            outputs.append(Output("result", slots[id(output)]))
    return Layout(graph, schedule(graph), buffers, results, slots, outputs, elements)
