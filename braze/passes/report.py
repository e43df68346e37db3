"""What ``braze.explain`` and ``braze hlo`` print: the optimized graph, each fusion group
with its kind and ops, the kernel count and peak temporary memory against the unfused
graph, and a Graphviz rendering of the fused graph."""

from __future__ import annotations

from dataclasses import dataclass

from braze.ir.graph import Graph, schedule
from braze.ir.primitive import Category
from braze.ir.prims.fusion import fusion
from braze.ir.text import format_aval, fused_ops, kernel_label, print_graph
from braze.passes.buffers import assign


@dataclass
class Report:
    unfused: Graph
    optimized: Graph
    unfused_kernels: int
    kernels: int
    unfused_peak_bytes: int
    peak_bytes: int

    def summary(self) -> str:
        return (
            f"kernels: {self.kernels} after fusion (unfused: {self.unfused_kernels})\n"
            f"peak temporary memory: {self.peak_bytes / 1024:.1f} KiB "
            f"(unfused: {self.unfused_peak_bytes / 1024:.1f} KiB)"
        )

    def groups(self) -> str:
        kernels = (k for k in schedule(self.optimized) if k.op is fusion)
        return "\n".join(f"kernel {n}: {kernel_label(node)}" for n, node in enumerate(kernels))

    def text(self) -> str:
        notes = "".join(f"# {note}\n" for note in self.optimized.notes)
        return f"{self.summary()}\n\n{self.groups()}\n\n{notes}{print_graph(self.optimized)}"


def build_report(unfused: Graph, optimized: Graph, alignment: int) -> Report:
    """The report on ``optimized``, compiled from ``unfused`` for a backend whose buffers
    start at multiples of ``alignment`` bytes."""
    return Report(
        unfused,
        optimized,
        unfused_kernels=len(schedule(unfused)),
        kernels=len(schedule(optimized)),
        unfused_peak_bytes=assign(unfused, alignment).peak_bytes,
        peak_bytes=assign(optimized, alignment).peak_bytes,
    )


def to_dot(graph: Graph) -> str:
    """Graphviz source: one box per kernel (labelled with its ops), edges for data flow."""
    ids = {id(n): f"n{i}" for i, n in enumerate(graph.nodes())}
    lines = ["digraph braze {", "  rankdir=TB;", '  node [shape=box, fontname="monospace"];']
    for node in graph.nodes():
        if node.op.category is Category.PARAMETER:
            label = f"param {node.attr('index')}\\n{format_aval(node.aval)}"
            lines.append(f'  {ids[id(node)]} [label="{label}", shape=ellipse];')
            continue
        if node.op is fusion:
            body = "\\n".join(fused_ops(node))
            label = f"{node.attr('kind')} fusion\\n{body}\\n{format_aval(node.aval)}"
        else:
            label = f"{node.op}\\n{format_aval(node.aval)}"
        lines.append(f'  {ids[id(node)]} [label="{label}"];')
        lines.extend(f"  {ids[id(i)]} -> {ids[id(node)]};" for i in node.inputs)
    lines.append("}")
    return "\n".join(lines)
