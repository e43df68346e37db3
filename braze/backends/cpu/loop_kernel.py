"""A loop node (``scan``, ``while_loop``) as C: a loop in the entry function around a call
of the body's own entry function, compiled into the same library.

The body graph goes through the pass pipeline like any graph (its kernels fused as usual)
and becomes a module plan of its own, whose kernels, constants and entry join the outer
plan's. Its temporaries and the loop's carries live in the outer arena, past the outer
graph's own temporaries; its scratch buffers are appended to the outer plan's. Each step
points the body's parameters at the current carries, the step's slices of the sequences
and the constants, and its outputs at the next carries and the step's slices of the
stacked results; a body output that is one of its parameters, a constant, or a result
returned twice is copied where it goes after the call.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from braze.backends.cpu.elemental import whole_cache_lines
from braze.backends.cstyle import c_literal, c_type
from braze.ir.graph import Graph, Node
from braze.ir.primitive import Aval, Category
from braze.ir.prims.loops import scan


class _LoopWriter:
    def __init__(self, plan, name: str, compile_body: Callable[[Graph, str], object]) -> None:
        self.plan = plan
        self.name = name
        self.compile_body = compile_body
        self.lines: list[str] = []

    def reserve(self, nbytes: int) -> str:
        """A region of the arena after everything placed there so far."""
        offset = whole_cache_lines(self.plan.arena_bytes)
        self.plan.arena_bytes = offset + max(nbytes, 1)
        return f"(arena + {offset})"

    def body(self, graph: Graph, suffix: str):
        """Compile ``graph`` as a function of the library; its plan, its name, its arena and scratch."""
        name = f"{self.name}_{suffix}"
        sub = self.compile_body(graph, name)
        plan = self.plan
        plan.constants += sub.constants
        plan.declarations += sub.declarations  # the body's entry among them
        plan.kernel_sources += [*sub.kernel_sources, sub.entry_source]
        plan.collectives += sub.collectives
        arena = self.reserve(sub.arena_bytes)
        scratch = f"(scratch + {len(plan.scratch)})"
        plan.scratch += sub.scratch
        return sub, name, arena, scratch

    def call(self, graph: Graph, suffix: str, params: list[str], destinations: list[str], indent: str) -> None:
        """Lines calling ``graph``'s function on ``params`` with its outputs written to ``destinations``."""
        sub, name, arena, scratch = self.body(graph, suffix)
        slots: dict[int, str] = {}
        after = []
        for k, (out, where) in enumerate(zip(sub.outputs, destinations, strict=True)):
            nbytes = graph.outputs[k].aval.size * graph.outputs[k].aval.dtype.itemsize
            if out.kind == "result" and out.index not in slots:
                slots[out.index] = where
            elif out.kind == "result":
                after.append(f"memcpy({where}, {slots[out.index]}, {nbytes});")
            elif out.kind == "param":
                after.append(f"memcpy({where}, {suffix}_in[{out.index}], {nbytes});")
            else:
                after.append(
                    f"memcpy({where}, {self.constant(out.array, graph.outputs[k].aval, suffix, k)}, {nbytes});"
                )
        inputs = ", ".join(f"(void*)({p})" for p in params) or "0"
        outputs = ", ".join(f"(void*)({slots[s]})" for s in range(len(sub.buffers))) or "0"
        self.lines += [
            f"{indent}void* {suffix}_in[{max(len(params), 1)}] = {{{inputs}}};",
            f"{indent}void* {suffix}_out[{max(len(sub.buffers), 1)}] = {{{outputs}}};",
            f"{indent}{name}({suffix}_in, {suffix}_out, {arena}, {scratch});",
            *(indent + line for line in after),
        ]

    def constant(self, array: np.ndarray, aval: Aval, suffix: str, k: int) -> str:
        name = f"{self.name}_{suffix}_const{k}"
        values = ", ".join(c_literal(v, aval.dtype) for v in array.reshape(-1).tolist())
        self.plan.constants.append(f"static const {c_type(aval.dtype)} {name}[{max(array.size, 1)}] = {{{values}}};")
        return name


def _nbytes(aval: Aval) -> int:
    return aval.size * aval.dtype.itemsize


def emit_loop(
    plan,
    name: str,
    kernel: Node,
    results: list[Node | None],
    buffer_of: dict[int, str],
    compile_body: Callable[[Graph, str], object],
) -> str:
    """The C statement running the loop of a ``control`` fusion ``kernel``; ``results``
    are the nodes holding its results (None where nobody reads one)."""
    computation: Graph = kernel.attr("computation")
    (loop,) = [n for n in computation.nodes() if n.op.category is Category.LOOP]
    position = {id(p): k for k, p in enumerate(computation.params)}
    operands = [buffer_of[id(kernel.inputs[position[id(i)]])] for i in loop.inputs]
    destination: dict[int, str] = {}
    for out, holder in zip(computation.outputs, results, strict=True):
        if holder is not None:
            destination[out.attr("index")] = buffer_of[id(holder)]
    writer = _LoopWriter(plan, name, compile_body)
    attrs = loop.attr_dict
    carries = attrs["carries"]
    avals = loop.aval
    current = [writer.reserve(_nbytes(a)) for a in avals[:carries]]
    following = [writer.reserve(_nbytes(a)) for a in avals[:carries]]
    lines = writer.lines
    lines.append("  {")
    lines += [f"    memcpy({c}, {o}, {_nbytes(a)});" for c, o, a in zip(current, operands, avals, strict=False)]
    advance = [f"      memcpy({c}, {n}, {_nbytes(a)});" for c, n, a in zip(current, following, avals, strict=False)]
    if loop.op is scan:
        xs, length = attrs["xs"], attrs["length"]
        stacked = [destination.get(carries + j) or writer.reserve(_nbytes(a)) for j, a in enumerate(avals[carries:])]
        step = "(L - 1 - i)" if attrs["reverse"] else "i"
        lines.append(f"    const int64_t L = {length};")
        lines.append("    for (int64_t i = 0; i < L; ++i) {")
        seqs = loop.inputs[carries : carries + xs]
        slices = [
            f"(char*){p} + {step} * {_nbytes(Aval(s.shape[1:], s.dtype))}"
            for p, s in zip(operands[carries : carries + xs], [x.aval for x in seqs], strict=True)
        ]
        ys = [
            f"(char*){p} + {step} * {_nbytes(Aval(a.shape[1:], a.dtype))}"
            for p, a in zip(stacked, avals[carries:], strict=True)
        ]
        params = [*current, *slices, *operands[carries + xs :]]
        writer.call(attrs["body"], "body", params, [*following, *ys], "      ")
    else:
        flag = writer.reserve(1)
        cond_params = [*current, *operands[carries : carries + attrs["cond_consts"]]]
        lines.append("    for (;;) {")
        writer.call(attrs["cond"], "cond", cond_params, [flag], "      ")
        lines.append(f"      if (!*(const unsigned char*){flag}) break;")
        body_params = [*current, *operands[carries + attrs["cond_consts"] :]]
        writer.call(attrs["body"], "body", body_params, following, "      ")
    lines += advance
    lines.append("    }")
    lines += [
        f"    memcpy({destination[k]}, {c}, {_nbytes(a)});"
        for k, (c, a) in enumerate(zip(current, avals, strict=False))
        if k in destination
    ]
    lines.append("  }")
    return "\n".join(lines)
