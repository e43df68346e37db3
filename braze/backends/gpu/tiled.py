"""A kernel phase for a contraction root: dot_general, with its fused epilogue, as tiles
through work-group-local memory.

Each work-group computes ``T x T`` outputs of one batch element at a time. For every slice
of ``TK`` contracted elements its work-items copy the two operand tiles (everything fused
into an operand computed once per element, not once per output that reads it) into local
memory, wait at a barrier, and each accumulates its outputs from the tiles; positions past
an operand's edge load zeros, so a remainder tile needs no other code. ``T`` makes one or
two outputs per work-item of the device's work-group size, and the two tiles fit in the
device's local memory (``dot_tiles``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from braze.backends.cpu.elemental import Index, c_literal, c_type
from braze.backends.gpu.dialect import Dialect
from braze.backends.gpu.elemental import GpuEmitter
from braze.ir.graph import Graph, Node
from braze.ir.prims.linalg import free_dims
from braze.passes.patterns import ELEMENTWISE


@dataclass(frozen=True)
class DotTiles:
    rows: int  # T: the output tile is T x T
    depth: int  # TK: contracted elements per pair of operand tiles
    per_item: int  # outputs each work-item accumulates: T * T / local size


def dot_tiles(local_size: int, local_memory: int, itemsize: int) -> DotTiles:
    """The tile for ``local_size`` work-items: T x T = local_size or twice it (each
    work-item one or two outputs), TK = T halved until both operand tiles fit in half of
    ``local_memory`` (the other half left to the kernel's other phases)."""
    rows = 1 << math.ceil(math.log2(local_size) / 2)
    depth = rows
    while depth > 1 and 2 * rows * depth * itemsize > local_memory // 2:
        depth //= 2
    return DotTiles(rows, depth, rows * rows // local_size)


def is_tiled(node: Node) -> bool:
    """A contraction with a matrix of outputs per batch element (a vector of them reuses no
    operand element across a tile)."""
    if node.op != "dot_general":
        return False
    x, y = node.inputs
    lf = free_dims(x.aval.ndim, node.attr("lhs_contracting"), node.attr("lhs_batch"))
    rf = free_dims(y.aval.ndim, node.attr("rhs_contracting"), node.attr("rhs_batch"))
    return math.prod(x.shape[d] for d in lf) > 1 and math.prod(y.shape[d] for d in rf) > 1


def tiled_contraction(result: Node) -> Node | None:
    """The dot_general that ``result`` is, or applies an elementwise epilogue to (fusion's
    output kernels: bias, activation), when it is tiled and read at no other position than
    the one being stored."""
    chain: dict[int, Node] = {}  # the elementwise ops of result's shape between it and the dot
    dots: dict[int, Node] = {}
    stack = [result]
    while stack:
        node = stack.pop()
        if id(node) in chain or id(node) in dots:
            continue
        if node.op == "dot_general" and node.aval.shape == result.aval.shape:
            dots[id(node)] = node
        elif node.op in ELEMENTWISE and node.aval.shape == result.aval.shape:
            chain[id(node)] = node
            stack.extend(node.inputs)
    if len(dots) != 1:
        return None
    (dot,) = dots.values()
    readers = [n for n in Graph((), (result,)).nodes() if any(i is dot for i in n.inputs)]
    return dot if is_tiled(dot) and all(id(n) in chain for n in readers) else None


class TiledDot:
    """The phase storing ``result`` into ``out``: ``node``, a dot_general, and the epilogue
    ``result`` applies to it (``node`` itself without one); ``write`` emits it and returns
    the work-groups it can use, ``locals`` are the local arrays it declares."""

    def __init__(
        self, dialect: Dialect, local_size: int, local_memory: int, node: Node, result: Node, out: str, k: int
    ) -> None:
        self.dialect, self.size, self.node, self.result, self.out = dialect, local_size, node, result, out
        x, y = node.inputs
        self.lc, self.rc = node.attr("lhs_contracting"), node.attr("rhs_contracting")
        self.lb, self.rb = node.attr("lhs_batch"), node.attr("rhs_batch")
        self.lf, self.rf = free_dims(x.aval.ndim, self.lc, self.lb), free_dims(y.aval.ndim, self.rc, self.rb)
        self.batch = tuple(x.shape[d] for d in self.lb)
        self.m_shape = tuple(x.shape[d] for d in self.lf)
        self.n_shape = tuple(y.shape[d] for d in self.rf)
        self.k_shape = tuple(x.shape[d] for d in self.lc)
        self.tiles = dot_tiles(local_size, local_memory, max(x.dtype.itemsize, y.dtype.itemsize))
        t = self.tiles
        self.x_tile, self.y_tile = f"xtile{k}", f"ytile{k}"
        self.locals = [
            f"  {dialect.local} {c_type(x.dtype)} {self.x_tile}[{t.rows * t.depth}];",
            f"  {dialect.local} {c_type(y.dtype)} {self.y_tile}[{t.depth * t.rows}];",
        ]

    def write(self, emitter: GpuEmitter) -> int:
        m, n, k = math.prod(self.m_shape), math.prod(self.n_shape), math.prod(self.k_shape)
        t, size, barrier = self.tiles, self.size, self.dialect.barrier
        tiles_m, tiles_n = -(-m // t.rows), -(-n // t.rows)
        count = math.prod(self.batch) * tiles_m * tiles_n
        tile = emitter.fresh("tile")
        emitter.emit(f"for (int64_t {tile} = gid; {tile} < {count}; {tile} += ngroups) {{")
        emitter.push()
        batch = emitter.let("int64_t", f"{tile} / {tiles_m * tiles_n}", "bat")
        m0 = emitter.let("int64_t", f"{tile} / {tiles_n} % {tiles_m} * {t.rows}", "row")
        n0 = emitter.let("int64_t", f"{tile} % {tiles_n} * {t.rows}", "col")
        accs = [emitter.accumulator(self.node.dtype, c_literal(0, self.node.dtype)) for _ in range(t.per_item)]
        k0 = emitter.fresh("kslice")
        emitter.emit(f"for (int64_t {k0} = 0; {k0} < {k}; {k0} += {t.depth}) {{")
        emitter.push()
        self._load(emitter, 0, batch, (m0, t.depth, m), (k0, k))
        self._load(emitter, 1, batch, (n0, t.rows, n), (k0, k))
        emitter.emit(barrier)
        for j, acc in enumerate(accs):
            row, col = f"((lid + {j * size}) / {t.rows})", f"((lid + {j * size}) % {t.rows})"
            kk = emitter.fresh("kk")
            x_at, y_at = f"{self.x_tile}[{row} * {t.depth} + {kk}]", f"{self.y_tile}[{kk} * {t.rows} + {col}]"
            emitter.emit(f"for (int64_t {kk} = 0; {kk} < {t.depth}; ++{kk}) {acc} += {x_at} * {y_at};")
        emitter.emit(barrier)  # the tiles are loaded again for the next slice
        emitter.pop()
        emitter.emit("}")
        for j, acc in enumerate(accs):
            row, col = f"({m0} + (lid + {j * size}) / {t.rows})", f"({n0} + (lid + {j * size}) % {t.rows})"
            emitter.guarded([f"{row} < {m}", f"{col} < {n}"])
            position = emitter.let("int64_t", f"({batch} * {m} + {row}) * {n} + {col}", "at")
            emitter.overrides[id(self.node)] = lambda _index, acc=acc: acc  # read where it is stored
            value = emitter.value(self.result, Index(self.result.shape, None, position))
            emitter.emit(f"{self.out}[{position}] = {value};")
            del emitter.overrides[id(self.node)]
            emitter.close()
        emitter.pop()
        emitter.emit("}")
        return count

    def _load(self, emitter: GpuEmitter, side: int, batch: str, free: tuple, contracted: tuple) -> None:
        """Copy operand ``side``'s tile for this slice into local memory: the x tile is
        T rows (free positions from ``start``) of TK contracted elements, the y tile TK
        rows of T free positions; past an edge, zeros."""
        (start, width, free_count), (k0, k_count) = free, contracted
        operand = self.node.inputs[side]
        t = self.tiles
        e = emitter.fresh("e")
        emitter.emit(f"for (int64_t {e} = lid; {e} < {t.rows * t.depth}; {e} += {self.size}) {{")
        emitter.push()
        if side == 0:  # [free][contracted]
            position, slice_at = f"({start} + {e} / {width})", f"({k0} + {e} % {width})"
        else:  # [contracted][free]
            position, slice_at = f"({start} + {e} % {width})", f"({k0} + {e} / {width})"
        free_at = emitter.let("int64_t", position, "fr")
        k_at = emitter.let("int64_t", slice_at, "ct")
        value = emitter.accumulator(operand.dtype, c_literal(0, operand.dtype))
        emitter.guarded([f"{free_at} < {free_count}", f"{k_at} < {k_count}"])
        dims = [""] * operand.aval.ndim
        batch_dims, kept_dims, k_dims = (self.lb, self.lf, self.lc) if side == 0 else (self.rb, self.rf, self.rc)
        shapes = (self.batch, self.m_shape if side == 0 else self.n_shape, self.k_shape)
        for where, shape, at in zip((batch_dims, kept_dims, k_dims), shapes, (batch, free_at, k_at), strict=True):
            for d, coordinate in zip(where, emitter.dims(Index(shape, None, at)), strict=True):
                dims[d] = coordinate
        emitter.emit(f"{value} = {emitter.value(operand, Index(operand.shape, tuple(dims)))};")
        emitter.close()
        emitter.emit(f"{(self.x_tile, self.y_tile)[side]}[{e}] = {value};")
        emitter.pop()
        emitter.emit("}")
