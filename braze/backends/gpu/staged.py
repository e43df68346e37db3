"""A GPU graph holding loops: a host loop of launches.

The graph's kernels are cut at each loop into stretches, each compiled as one launch
sequence (a ``GpuExecutable`` of the stretch's subgraph); a loop runs on the host, one
launch sequence of its body per step, over device arrays: the carries are the previous
step's results, each step's slice of a sequence is copied out of it, and each step's
outputs are copied into the stacked results. The body is compiled once, whatever the
number of steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from braze.backends.gpu.executable import DeviceArray, run_on_host
from braze.ir.graph import Graph, Node, parameter, schedule
from braze.ir.primitive import Aval, Category
from braze.ir.prims.fusion import get_element
from braze.ir.prims.loops import scan
from braze.ir.prims.sources import constant

Lower = Callable[[Graph], Any]  # an optimized graph -> its executable (run on device arrays)
Optimize = Callable[[Graph], Graph]


def has_loops(graph: Graph) -> bool:
    return any(n.attr("kind") == "control" for n in schedule(graph) if n.op.category is Category.FUSION)


def _segment(kernels: list[Node], graph: Graph, later: set[int]) -> tuple[Graph, list[Node], list[Node]]:
    """The subgraph computing ``kernels``: the values it reads from elsewhere become its
    parameters, and those that ``later`` reads (by id) or the graph returns its outputs."""
    inside = {id(k) for k in kernels}
    made: dict[int, Node] = {}
    reads: list[Node] = []

    def value(node: Node) -> Node:
        if id(node) in made:
            return made[id(node)]
        if node.op is constant:
            return node
        if node.op is get_element and id(node.inputs[0]) in inside:
            made[id(node)] = Node.make(get_element, (made[id(node.inputs[0])],), node.attrs, node.aval)
        else:
            made[id(node)] = parameter(len(reads), node.aval)
            reads.append(node)
        return made[id(node)]

    for kernel in kernels:
        made[id(kernel)] = Node.make(kernel.op, tuple(value(i) for i in kernel.inputs), kernel.attrs, kernel.aval)
    returned = {id(o) for o in graph.outputs}
    results = [
        n
        for n in graph.nodes()
        if (id(n) in inside and not n.multi_output) or (n.op is get_element and id(n.inputs[0]) in inside)
    ]
    results = [n for n in results if id(n) in later or id(n) in returned]
    return Graph(tuple(made[id(r)] for r in reads), tuple(value(r) for r in results)), reads, results


def stages(graph: Graph) -> list[tuple]:
    """The graph's work in order: ("kernels", subgraph, the values it reads, the values it
    makes) for each stretch of kernels between loops, ("loop", kernel) for each loop."""
    kernels = schedule(graph)
    later: list[set[int]] = [set() for _ in kernels]  # what the kernels from each position on read
    reads: set[int] = set()
    for t in reversed(range(len(kernels))):
        reads |= {id(i) for i in kernels[t].inputs}
        later[t] = set(reads)
    found: list[tuple] = []
    stretch: list[Node] = []
    for t, kernel in enumerate([*kernels, None]):
        if kernel is not None and kernel.attr("kind") != "control":
            stretch.append(kernel)
            continue
        if stretch:
            found.append(("kernels", *_segment(stretch, graph, later[t] if kernel is not None else set())))
        stretch = []
        if kernel is not None:
            found.append(("loop", kernel))
    return found


def _loop_of(kernel: Node) -> Node:
    (loop,) = [n for n in kernel.attr("computation").nodes() if n.op.category is Category.LOOP]
    return loop


def pieces(graph: Graph, optimize: Optimize) -> list[Graph]:
    """The loop-free graphs whose launch sequences run ``graph``: itself, or its stretches
    and its loops' optimized bodies (and theirs)."""
    if not has_loops(graph):
        return [graph]
    found = []
    for stage in stages(graph):
        if stage[0] == "kernels":
            found.append(stage[1])
        else:
            found += [p for _, body in _bodies_of(_loop_of(stage[1])) for p in pieces(optimize(body), optimize)]
    return found


def _bodies_of(loop: Node) -> list[tuple[str, Graph]]:
    return [(k, v) for k, v in loop.attrs if k in ("body", "cond")]


class StagedExecutable:
    """Runs an optimized graph with loops: its stretches of kernels, and its loops on the host."""

    target = "gpu"

    def __init__(self, graph: Graph, runtime: Any, lower: Lower, optimize: Optimize) -> None:
        self.graph = graph
        self.runtime = runtime
        self.steps: list[tuple] = []
        for stage in stages(graph):
            if stage[0] == "kernels":
                _, sub, reads, results = stage
                self.steps.append(("kernels", lower(sub), reads, results))  # its kernels are fused already
            else:
                loop = _loop_of(stage[1])
                self.steps.append(("loop", stage[1], {k: lower(optimize(v)) for k, v in _bodies_of(loop)}))

    def run(self, inputs: Sequence[DeviceArray]) -> list[DeviceArray]:
        values: dict[int, DeviceArray] = {id(p): a for p, a in zip(self.graph.params, inputs, strict=True)}

        def read(node: Node) -> DeviceArray:
            if node.op is constant and id(node) not in values:
                values[id(node)] = DeviceArray.from_numpy(self.runtime, node.attr("value").array)
            return values[id(node)]

        for step in self.steps:
            if step[0] == "kernels":
                _, executable, reads, results = step
                for node, array in zip(results, executable.run([read(r) for r in reads]), strict=True):
                    values[id(node)] = array
            else:
                _, kernel, bodies = step
                computation: Graph = kernel.attr("computation")
                loop = _loop_of(kernel)
                position = {id(p): k for k, p in enumerate(computation.params)}
                operands = [read(kernel.inputs[position[id(i)]]) for i in loop.inputs]
                produced = self._run_loop(loop, operands, bodies)
                self._store(kernel, computation, produced, values)
        return [read(o).copy() if id(o) in self._aliased() else read(o) for o in self.graph.outputs]

    def _aliased(self) -> set[int]:
        """Graph outputs that are its inputs or its constants: returned as copies."""
        return {id(o) for o in self.graph.outputs if o.op.category is Category.PARAMETER or o.op is constant}

    def _store(self, kernel: Node, computation: Graph, produced: list[DeviceArray], values: dict) -> None:
        picks = [o.attr("index") for o in computation.outputs]
        if not kernel.multi_output:
            values[id(kernel)] = produced[picks[0]]
            return
        for node in self.graph.nodes():
            if node.op is get_element and node.inputs[0] is kernel:
                values[id(node)] = produced[picks[node.attr("index")]]

    def _run_loop(self, loop: Node, operands: list[DeviceArray], bodies: dict[str, Any]) -> list[DeviceArray]:
        attrs = loop.attr_dict
        carries = attrs["carries"]
        carry = operands[:carries]
        if loop.op is not scan:
            split = carries + attrs["cond_consts"]
            cond_operands, body_operands = operands[carries:split], operands[split:]
            while bool(bodies["cond"].run([*carry, *cond_operands])[0].numpy()):
                carry = bodies["body"].run([*carry, *body_operands])[:carries]
            return list(carry)
        xs, length = attrs["xs"], attrs["length"]
        seqs, consts = operands[carries : carries + xs], operands[carries + xs :]
        stacked = [DeviceArray(self.runtime, a) for a in loop.aval[carries:]]
        for i in range(length):
            s = length - 1 - i if attrs["reverse"] else i
            slices = [self._slice(x, s) for x in seqs]
            results = bodies["body"].run([*carry, *slices, *consts])
            carry = results[:carries]
            for target, y in zip(stacked, results[carries:], strict=True):
                self.runtime.copy(y.buffer, target.buffer, y.aval.nbytes, target_offset=s * y.aval.nbytes)
        return [*carry, *stacked]

    def _slice(self, x: DeviceArray, s: int) -> DeviceArray:
        aval = Aval(x.aval.shape[1:], x.aval.dtype)
        part = DeviceArray(self.runtime, aval)
        self.runtime.copy(x.buffer, part.buffer, aval.nbytes, source_offset=s * aval.nbytes)
        return part

    def __call__(self, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        return run_on_host(self, args)
