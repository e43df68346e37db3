"""A kernel phase for a contraction root: dot_general, with its fused epilogue, as tiles
through work-group-local memory (and the tiled product that convolutions share,
tiled_conv.py).

Each work-group computes a tile of ``T x T`` outputs (fewer columns and more rows where
the product has fewer than T columns) of one batch element at a time. For every slice
of ``TK`` contracted elements its work-items copy the two operand tiles (everything fused
into an operand computed once per element, not once per output that reads it) into local
memory, wait at a barrier, and each accumulates its outputs from the tiles; positions past
an operand's edge load zeros, so a remainder tile needs no other code. ``T`` makes one or
two outputs per work-item of the device's work-group size, and the two tiles fit in the
device's local memory (``dot_tiles``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from braze.backends.cstyle import Index, c_literal, c_type
from braze.backends.gpu.dialect import Dialect
from braze.backends.gpu.elemental import GpuEmitter, all_of
from braze.ir.graph import Graph, Node
from braze.ir.primitive import Category
from braze.ir.prims.linalg import dot_general, free_dims


@dataclass(frozen=True)
class DotTiles:
    rows: int  # the output tile is rows x cols
    cols: int
    depth: int  # TK: contracted elements per pair of operand tiles
    per_item: int  # outputs each work-item accumulates: rows * cols / local size


def dot_tiles(local_size: int, local_memory: int, itemsize: int, columns: int | None = None) -> DotTiles:
    """The tile for ``local_size`` work-items: T x T = local_size or twice it (each
    work-item one or two outputs), or as many outputs in fewer columns and more rows where
    the product has fewer than T ``columns`` (a convolution's few output channels: square
    tiles would leave most of their columns idle); TK = T halved until both operand tiles
    fit in half of ``local_memory`` (the other half left to the kernel's other phases)."""
    side = 1 << math.ceil(math.log2(local_size) / 2)
    cols = side if columns is None else min(side, 1 << math.ceil(math.log2(max(columns, 1))))
    rows = side * side // cols
    depth = side
    while depth > 1 and (rows + cols) * depth * itemsize > local_memory // 2:
        depth //= 2
    return DotTiles(rows, cols, depth, rows * cols // local_size)


def is_tiled(node: Node) -> bool:
    """A contraction with a matrix of outputs per batch element (a vector of them reuses no
    operand element across a tile)."""
    if node.op is not dot_general:
        return False
    x, y = node.inputs
    lf = free_dims(x.aval.ndim, node.attr("lhs_contracting"), node.attr("lhs_batch"))
    rf = free_dims(y.aval.ndim, node.attr("rhs_contracting"), node.attr("rhs_batch"))
    return math.prod(x.shape[d] for d in lf) > 1 and math.prod(y.shape[d] for d in rf) > 1


def tiled_root(result: Node, applies: Callable[[Node], bool]) -> Node | None:
    """The product (``applies``: a node that is one, tiled) that ``result`` is, or applies
    an elementwise epilogue to (fusion's output kernels: bias, activation), when it is read
    at no other position than the one being stored."""
    chain: dict[int, Node] = {}  # the elementwise ops of result's shape between it and the product
    roots: dict[int, Node] = {}
    stack = [result]
    while stack:
        node = stack.pop()
        if id(node) in chain or id(node) in roots:
            continue
        if node.aval.shape != result.aval.shape:
            continue
        if node.op.category is Category.CONTRACTION:  # kernels.py maps each to its phase
            roots[id(node)] = node
        elif node.op.elementwise:
            chain[id(node)] = node
            stack.extend(node.inputs)
    if len(roots) != 1:
        return None
    (root,) = roots.values()
    readers = [n for n in Graph((), (result,)).nodes() if any(i is root for i in n.inputs)]
    return root if applies(root) and all(id(n) in chain for n in readers) else None


class TiledProduct:
    """The phase storing ``result`` into ``out``: ``node``, a product of two operands seen
    as ``batch`` matrix products of an m x k by a k x n matrix whose outputs lie row-major
    in ``node`` (``shape``), and the epilogue ``result`` applies to it (``node`` itself
    without one); ``write`` emits it and returns the work-groups it can use, ``locals`` are
    the local arrays it declares. A subclass says where an operand element of the matrices
    is (``operand``)."""

    # Whether an x-matrix element that ``operand`` finds outside its array adds nothing to
    # the sum (not a zero times y: 0 * inf is NaN), as for conv_grad_input's taps that do
    # not reach an output of the forward conv.
    skips_outside = False

    def __init__(
        self, dialect: Dialect, local_size: int, local_memory: int, node: Node, result: Node, out: str, k: int
    ) -> None:
        self.dialect, self.size, self.node, self.result, self.out = dialect, local_size, node, result, out
        x, y = node.inputs
        _, _, columns, _ = self.shape()
        self.tiles = dot_tiles(local_size, local_memory, max(x.dtype.itemsize, y.dtype.itemsize), columns)
        t = self.tiles
        self.x_tile, self.y_tile, self.mask = f"xtile{k}", f"ytile{k}", f"inside{k}"
        self.locals = [
            f"  {dialect.local} {c_type(x.dtype)} {self.x_tile}[{t.rows * t.depth}];",
            f"  {dialect.local} {c_type(y.dtype)} {self.y_tile}[{t.depth * t.cols}];",
        ]
        if self.skips_outside:
            self.locals.append(f"  {dialect.local} char {self.mask}[{t.rows * t.depth}];")

    def shape(self) -> tuple[int, int, int, int]:
        """(batch, m, n, k)."""
        raise NotImplementedError

    def operand(self, emitter: GpuEmitter, side: int, batch: str, free: str, k: str) -> tuple[Index, list[str]]:
        """Where operand ``side``'s matrix element at batch ``batch``, free position
        ``free`` (a row of x, a column of y) and contracted position ``k`` is, and the
        conditions under which it is inside the operand (a zero outside)."""
        raise NotImplementedError

    def write(self, emitter: GpuEmitter) -> int:
        batches, m, n, k = self.shape()
        t, size, barrier = self.tiles, self.size, self.dialect.barrier
        tiles_m, tiles_n = -(-m // t.rows), -(-n // t.cols)
        count = batches * tiles_m * tiles_n
        tile = emitter.fresh("tile")
        emitter.emit(f"for (int64_t {tile} = gid; {tile} < {count}; {tile} += ngroups) {{")
        emitter.push()
        batch = emitter.let("int64_t", f"{tile} / {tiles_m * tiles_n}", "bat")
        m0 = emitter.let("int64_t", f"{tile} / {tiles_n} % {tiles_m} * {t.rows}", "row")
        n0 = emitter.let("int64_t", f"{tile} % {tiles_n} * {t.cols}", "col")
        accs = [emitter.accumulator(self.node.dtype, c_literal(0, self.node.dtype)) for _ in range(t.per_item)]
        k0 = emitter.fresh("kslice")
        emitter.emit(f"for (int64_t {k0} = 0; {k0} < {k}; {k0} += {t.depth}) {{")
        emitter.push()
        self._load(emitter, 0, batch, (m0, t.depth, m), (k0, k))
        self._load(emitter, 1, batch, (n0, t.cols, n), (k0, k))
        emitter.emit(barrier)
        for j, acc in enumerate(accs):
            row, col = f"((lid + {j * size}) / {t.cols})", f"((lid + {j * size}) % {t.cols})"
            kk = emitter.fresh("kk")
            x_at, y_at = f"{self.x_tile}[{row} * {t.depth} + {kk}]", f"{self.y_tile}[{kk} * {t.cols} + {col}]"
            add = f"{acc} += {x_at} * {y_at};"
            if self.skips_outside:
                add = f"if ({self.mask}[{row} * {t.depth} + {kk}]) {add}"
            emitter.emit(f"for (int64_t {kk} = 0; {kk} < {t.depth}; ++{kk}) {add}")
        emitter.emit(barrier)  # the tiles are loaded again for the next slice
        emitter.pop()
        emitter.emit("}")
        for j, acc in enumerate(accs):
            row, col = f"({m0} + (lid + {j * size}) / {t.cols})", f"({n0} + (lid + {j * size}) % {t.cols})"
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
        ``rows`` free positions from ``start`` of TK contracted elements each, the y tile
        TK rows of ``cols`` free positions; past an edge, zeros."""
        (start, width, free_count), (k0, k_count) = free, contracted
        operand = self.node.inputs[side]
        t = self.tiles
        e = emitter.fresh("e")
        elements = (t.rows if side == 0 else t.cols) * t.depth
        emitter.emit(f"for (int64_t {e} = lid; {e} < {elements}; {e} += {self.size}) {{")
        emitter.push()
        if side == 0:  # [free][contracted]
            position, slice_at = f"({start} + {e} / {width})", f"({k0} + {e} % {width})"
        else:  # [contracted][free]
            position, slice_at = f"({start} + {e} % {width})", f"({k0} + {e} / {width})"
        free_at = emitter.let("int64_t", position, "fr")
        k_at = emitter.let("int64_t", slice_at, "ct")
        value = emitter.accumulator(operand.dtype, c_literal(0, operand.dtype))
        index, inside = self.operand(emitter, side, batch, free_at, k_at)
        conditions = [f"{free_at} < {free_count}", f"{k_at} < {k_count}", *inside]
        if self.skips_outside and side == 0:
            emitter.emit(f"{self.mask}[{e}] = {all_of(conditions)};")
        emitter.guarded(conditions)
        emitter.emit(f"{value} = {emitter.value(operand, index)};")
        emitter.close()
        emitter.emit(f"{(self.x_tile, self.y_tile)[side]}[{e}] = {value};")
        emitter.pop()
        emitter.emit("}")


class TiledDot(TiledProduct):
    """dot_general: the batch, free and contracted dimensions of each operand, each group
    flattened row-major."""

    def __init__(
        self, dialect: Dialect, local_size: int, local_memory: int, node: Node, result: Node, out: str, k: int
    ) -> None:
        x, y = node.inputs
        self.lc, self.rc = node.attr("lhs_contracting"), node.attr("rhs_contracting")
        self.lb, self.rb = node.attr("lhs_batch"), node.attr("rhs_batch")
        self.lf, self.rf = free_dims(x.aval.ndim, self.lc, self.lb), free_dims(y.aval.ndim, self.rc, self.rb)
        self.batch = tuple(x.shape[d] for d in self.lb)
        self.m_shape = tuple(x.shape[d] for d in self.lf)
        self.n_shape = tuple(y.shape[d] for d in self.rf)
        self.k_shape = tuple(x.shape[d] for d in self.lc)
        super().__init__(dialect, local_size, local_memory, node, result, out, k)  # after: it asks shape()

    def shape(self) -> tuple[int, int, int, int]:
        sizes = (self.batch, self.m_shape, self.n_shape, self.k_shape)
        return tuple(math.prod(s) for s in sizes)  # type: ignore[return-value]

    def operand(self, emitter: GpuEmitter, side: int, batch: str, free: str, k: str) -> tuple[Index, list[str]]:
        operand = self.node.inputs[side]
        dims = [""] * operand.aval.ndim
        batch_dims, kept_dims, k_dims = (self.lb, self.lf, self.lc) if side == 0 else (self.rb, self.rf, self.rc)
        shapes = (self.batch, self.m_shape if side == 0 else self.n_shape, self.k_shape)
        for where, shape, at in zip((batch_dims, kept_dims, k_dims), shapes, (batch, free, k), strict=True):
            for d, coordinate in zip(where, emitter.dims(Index(shape, None, at)), strict=True):
                dims[d] = coordinate
        return Index(operand.shape, tuple(dims)), []
