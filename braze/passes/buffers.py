"""Buffer assignment: where every kernel's result lives while the step runs.

The schedule is the graph's kernels in topological order. A result's buffer is live from
the kernel that writes it to the last kernel that reads it; a dead buffer is reused by a
later result of the same size (first fit). Results the graph returns get buffers of their
own, and a result donated to a parameter is written into that parameter's buffer. The
assignment records each result's offset in one temporary arena and the arena's peak size.
Every buffer starts at a multiple of the alignment the backend's target asks for.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field

from braze.ir.graph import Graph, Node, schedule
from braze.ir.prims.fusion import get_element


@dataclass
class BufferAssignment:
    offsets: dict[int, int] = field(default_factory=dict)  # id(node) -> byte offset in the arena
    sizes: dict[int, int] = field(default_factory=dict)
    outputs: dict[int, int] = field(default_factory=dict)  # id(node) -> output position
    donated: dict[int, int] = field(default_factory=dict)  # id(node) -> parameter index written in place
    aliases: dict[int, int] = field(default_factory=dict)  # id(node) -> id(node) whose buffer it reuses
    peak_bytes: int = 0
    kernels: int = 0

    def describe(self) -> str:
        return (
            f"{self.kernels} kernels, {len(self.offsets)} temporary buffers, "
            f"peak temporary memory {self.peak_bytes / 1024:.1f} KiB"
        )


def _results(node: Node, element_of: dict[int, list[Node]]) -> list[Node]:
    return element_of.get(id(node), []) if node.multi_output else [node]


def assign(graph: Graph, alignment: int) -> BufferAssignment:
    """Where each kernel result of ``graph`` lives, every buffer ``alignment`` bytes aligned."""
    kernels = schedule(graph)
    position = {id(k): t for t, k in enumerate(kernels)}
    element_of: dict[int, list[Node]] = {}
    for node in graph.nodes():
        if node.op is get_element:
            element_of.setdefault(id(node.inputs[0]), []).append(node)
    last_use: dict[int, int] = {}
    for node in graph.nodes():
        reader = node if node.op is not get_element else None
        if reader is None or id(reader) not in position:
            continue
        for i in node.inputs:
            last_use[id(i)] = max(last_use.get(id(i), -1), position[id(reader)])
    result = BufferAssignment(kernels=len(kernels))
    for k, output in enumerate(graph.outputs):
        result.outputs.setdefault(id(output), k)
        if k in graph.donated:
            result.donated.setdefault(id(output), graph.donated[k])
    free: dict[int, deque[int]] = {}  # size -> offsets of dead buffers of that size, oldest first
    live: list[tuple[int, int, int, int]] = []  # heap of (last use, birth, offset, size)
    arena = 0
    for t, kernel in enumerate(kernels):
        dead = []
        while live and live[0][0] < t:
            dead.append(heapq.heappop(live)[1:])
        for _, offset, size in sorted(dead):  # freed in the order they were made
            free.setdefault(size, deque()).append(offset)
        for node in _results(kernel, element_of):
            if id(node) in result.outputs:
                continue
            size = -(-node.aval.nbytes // alignment) * alignment
            slots = free.get(size)
            if slots:
                offset = slots.popleft()
            else:
                offset = arena
                arena += size
            result.offsets[id(node)] = offset
            result.sizes[id(node)] = size
            heapq.heappush(live, (last_use.get(id(node), t), len(result.offsets), offset, size))
    result.peak_bytes = arena
    return result


def assign_buffers(graph: Graph, alignment: int) -> Graph:
    """Attach the buffer assignment to the graph (``graph.annotations["buffers"]``)."""
    graph.annotations["buffers"] = assign(graph, alignment)
    graph.notes.append(f"buffers: {graph.annotations['buffers'].describe()}")
    return graph
