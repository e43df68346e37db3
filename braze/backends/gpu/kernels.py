"""One GPU kernel per fused computation, in either dialect.

A kernel computes each of its computation's results in a phase of its own, all phases in
one launch of ``groups`` work-groups of ``local_size`` work-items:

- an elementwise phase walks the result's elements with a grid-stride loop, each element
  computed by the elemental emitter (reductions and contractions inside it are loops of the
  work-item);
- a reduction phase (a result that is a reduce_sum, reduce_prod or reduce_max) gives each output element
  to one work-group: its work-items stride over the reduced elements, then combine their
  partial results in a tree through work-group-local memory;
- a contraction phase (a dot_general or a convolution with a matrix of outputs, or its
  epilogue) gives each work-group a tile of outputs, computed from operand tiles in local
  memory (tiled.py, tiled_conv.py).

Phases write distinct results from the kernel's inputs only, so they need no
synchronization between them; a reduction's barriers sit in a loop whose trip count is the
same for every work-item of a group, as a contraction's do.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from braze.backends.cstyle import Index, c_type
from braze.backends.gpu.dialect import Dialect
from braze.backends.gpu.elemental import REDUCTIONS, GpuEmitter, combine, identity
from braze.backends.gpu.lowering import LOWERINGS
from braze.backends.gpu.tiled import TiledDot, TiledProduct, is_tiled, tiled_root
from braze.backends.gpu.tiled_conv import TiledConv, is_tiled_conv
from braze.ir.graph import Graph, Node
from braze.ir.prims.linalg import dot_general


@dataclass(frozen=True)
class LaunchShape:
    """The launch geometry every kernel of a module uses, derived from the device."""

    local_size: int  # work-items per group: a power of two, a whole number of warps
    max_groups: int  # enough groups to fill every compute unit a few times over
    local_memory: int  # bytes of work-group-local memory


@dataclass
class Kernel:
    name: str
    body: str
    groups: int
    local_size: int

    def source(self, dialect: Dialect, buffers: int) -> str:
        """The kernel, taking the arena and the module's ``buffers`` other buffers (every
        kernel of a module takes the same arguments)."""
        return (
            f"{dialect.signature(self.name, buffers, self.local_size)} {{\n"
            f"  const int64_t lid = {dialect.local_id};\n  const int64_t gid = {dialect.group_id};\n"
            f"  const int64_t ngroups = {dialect.groups};\n{self.body}\n}}\n"
        )


class KernelWriter:
    """The kernel of one computation. ``operands[i]`` is the C expression of the bytes of
    the computation's parameter ``i``, ``results[k]`` that of its output ``k`` (None when
    nobody reads it); ``constant`` gives a non-scalar constant's bytes. Every kernel of a
    module takes the same arguments: the arena and ``buffers`` other device buffers."""

    def __init__(
        self,
        dialect: Dialect,
        launch: LaunchShape,
        operands: list[str],
        results: list[str | None],
        constant: Callable[[Node], str],
    ) -> None:
        self.dialect = dialect
        self.launch = launch
        self.operands = operands
        self.results = results
        self.constant_bytes = constant
        self.declarations: list[str] = []
        self.constants: dict[int, str] = {}

    def pointer(self, name: str, ctype: str, bytes_expression: str, const: bool) -> str:
        pointer = self.dialect.pointer(ctype, const)
        self.declarations.append(f"  {pointer} {name} = ({pointer})({bytes_expression});")
        return name

    def constant(self, node: Node) -> str:
        if id(node) not in self.constants:
            name = f"c{len(self.constants)}"
            self.constants[id(node)] = self.pointer(name, c_type(node.dtype), self.constant_bytes(node), True)
        return self.constants[id(node)]

    def write(self, name: str, computation: Graph) -> Kernel:
        inputs = {
            p.attr("index"): self.pointer(f"in{k}", c_type(p.dtype), self.operands[k], True)
            for k, p in enumerate(computation.params)
        }
        emitter = GpuEmitter(LOWERINGS, inputs, self.constant, indent="  ")
        size = self.launch.local_size
        groups = 1
        for k, (result, where) in enumerate(zip(computation.outputs, self.results, strict=True)):
            if where is None:
                continue
            out = self.pointer(f"out{k}", c_type(result.dtype), where, False)
            product = tiled_root(result, lambda n: is_tiled(n) or is_tiled_conv(n))
            if result.op in REDUCTIONS and _reduced_count(result) > 1:
                groups = max(groups, self._reduction(emitter, result, out, k))
            elif product is not None:
                tiled: type[TiledProduct] = TiledDot if product.op is dot_general else TiledConv
                phase = tiled(self.dialect, size, self.launch.local_memory, product, result, out, k)
                self.declarations[:0] = phase.locals
                groups = max(groups, phase.write(emitter))
            else:
                groups = max(groups, self._elementwise(emitter, result, out))
        body = "\n".join(self.declarations + emitter.lines)
        return Kernel(name, body, min(groups, self.launch.max_groups), size)

    def _elementwise(self, emitter: GpuEmitter, result: Node, out: str) -> int:
        count = math.prod(result.shape)
        size = self.launch.local_size
        emitter.emit(f"for (int64_t i = gid * {size} + lid; i < {count}; i += ngroups * {size}) {{")
        emitter.push()
        value = emitter.value(result, Index(result.shape, None, "i"))
        emitter.emit(f"{out}[i] = {value};")
        emitter.pop()
        emitter.emit("}")
        return -(-count // size)

    def _reduction(self, emitter: GpuEmitter, result: Node, out: str, k: int) -> int:
        kind, source = REDUCTIONS[result.op], result.inputs[0]
        axes = result.attr("axes")
        kept = tuple(s for d, s in enumerate(source.shape) if d not in axes)
        reduced = tuple(source.shape[d] for d in axes)
        size, t = self.launch.local_size, c_type(result.dtype)
        partial = f"partial{k}"
        self.declarations.insert(0, f"  {self.dialect.local} {t} {partial}[{size}];")
        count = math.prod(kept)
        emitter.emit(f"for (int64_t o = gid; o < {count}; o += ngroups) {{")
        emitter.push()
        acc = emitter.accumulator(result.dtype, identity(kind, result.dtype))
        emitter.emit(f"for (int64_t r = lid; r < {math.prod(reduced)}; r += {size}) {{")
        emitter.push()
        kept_dims = iter(emitter.dims(Index(kept, None, "o")))
        reduced_dims = iter(emitter.dims(Index(reduced, None, "r")))
        dims = tuple(next(reduced_dims) if d in axes else next(kept_dims) for d in range(len(source.shape)))
        value = emitter.value(source, Index(source.shape, dims))
        emitter.emit(f"{acc} = {combine(kind, result.dtype, acc, value)};")
        emitter.pop()
        emitter.emit("}")
        barrier = self.dialect.barrier
        emitter.emit(f"{partial}[lid] = {acc};")
        emitter.emit(barrier)
        emitter.emit(f"for (int64_t step = {size // 2}; step > 0; step >>= 1) {{")
        both = combine(kind, result.dtype, f"{partial}[lid]", f"{partial}[lid + step]")
        emitter.emit(f"  if (lid < step) {partial}[lid] = {both};")
        emitter.emit(f"  {barrier}")
        emitter.emit("}")
        emitter.emit(f"if (lid == 0) {out}[o] = {partial}[0];")
        emitter.emit(barrier)  # partial is written again by the next output element
        emitter.pop()
        emitter.emit("}")
        return count


def _reduced_count(node: Node) -> int:
    return math.prod(node.inputs[0].shape[d] for d in node.attr("axes"))
