"""dot_general as a batched GEMM: C[b, m, n] = sum over k of A[b, m, k] B[b, k, n].

Every product whose batch, free and contracting dimensions each collapse to one stride (all
of a transformer's: ``x @ W`` over (batch, time, channels), the weight gradient contracting
batch and time together, the 4-D attention products, the transposed operands of the
backward pass) runs as register-tiled micro-kernels in the GotoBLAS arrangement: B is
packed once into contiguous rows padded to whole vectors; each task, a block of rows of one
batch sized so that its rows of A stay in the L2 cache, sweeps the packed columns of B in
panels of one register tile's width (a panel is reused by every row tile of the block from
L1/L2), and in each panel a register tile of rows times vectors of columns accumulates the
whole depth in registers. Tile, block and panel sizes come from the CPU target (vector
width, vector registers, L2 size), never from this host. The epilogue (bias, activation,
scaling, residual add) is computed as results are stored. Other products (integers, a
layout whose dimensions do not collapse) run as plain loops.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from braze.backends.cpu.elemental import Emitter
from braze.backends.cpu.loops import close_loops, contraction_pragma, open_loop, parallel_pragma, store_results
from braze.backends.cpu.tiles import each_tile, operand, register_tile, strides, vector_tile
from braze.backends.cstyle import Index, c_type
from braze.ir.dtypes import bfloat16
from braze.ir.graph import Graph, Node


@dataclass(frozen=True)
class Gemm:
    """A dot_general as a batched GEMM over its operands' buffers: ``batch``, per batch
    dimension (size, A's stride, B's stride), outermost first; A[m, k] at ``m * a_row + k *
    a_k`` and B[k, n] at ``k * b_k + n * b_col`` from their batch's offsets."""

    batch: tuple[tuple[int, int, int], ...]
    m: int
    n: int
    k: int
    a_row: int
    a_k: int
    b_k: int
    b_col: int

    @property
    def batches(self) -> int:
        return math.prod(size for size, _, _ in self.batch)


def _collapse(dims: list[int], shape: tuple[int, ...], steps: list[int]) -> tuple[int, int] | None:
    """(size, stride) of ``dims`` (outermost first) taken as one dimension, or None where
    they are not evenly strided; dimensions of size 1 have no stride to keep."""
    kept = [d for d in dims if shape[d] != 1]
    if not kept:
        return 1, 0
    if any(steps[outer] != steps[inner] * shape[inner] for outer, inner in itertools.pairwise(kept)):
        return None
    return math.prod(shape[d] for d in kept), steps[kept[-1]]


def gemm_layout(root: Node) -> Gemm | None:
    """``root`` (a dot_general) as a batched GEMM, or None where one of its dimension groups
    does not collapse to a single stride."""
    x, y = root.inputs
    lc, rc = list(root.attr("lhs_contracting")), list(root.attr("rhs_contracting"))
    lb, rb = list(root.attr("lhs_batch")), list(root.attr("rhs_batch"))
    lf = [d for d in range(len(x.shape)) if d not in lc and d not in lb]
    rf = [d for d in range(len(y.shape)) if d not in rc and d not in rb]
    xs, ys = strides(x.shape), strides(y.shape)
    pairs = [(i, j) for i, j in zip(lc, rc, strict=True) if x.shape[i] != 1]
    rows, cols = _collapse(lf, x.shape, xs), _collapse(rf, y.shape, ys)
    a_depth = _collapse([i for i, _ in pairs], x.shape, xs)
    b_depth = _collapse([j for _, j in pairs], y.shape, ys)
    if rows is None or cols is None or a_depth is None or b_depth is None:
        return None
    batch = tuple((x.shape[i], xs[i], ys[j]) for i, j in zip(lb, rb, strict=True) if x.shape[i] != 1)
    return Gemm(batch, rows[0], cols[0], a_depth[0], rows[1], a_depth[1], b_depth[1], cols[1])


def emit_dot(em: Emitter, computation: Graph, outputs: list[str], root: Node) -> None:
    layout = gemm_layout(root) if root.dtype.is_float else None
    if layout is not None and layout.n >= 8 and em.target.bfloat16_dot and root.inputs[0].dtype is bfloat16:
        from braze.backends.cpu.bf16_dot import emit_bfloat16_dot  # it builds on this module

        emit_bfloat16_dot(em, computation, outputs, root, layout)
    elif layout is not None and layout.n >= 8:
        _tiled_gemm(em, computation, outputs, root, layout)
    else:
        _loop_dot(em, computation, outputs, root)


def batch_offset(batch: tuple[tuple[int, int, int], ...], flat: str, operand_index: int) -> str:
    """The C offset of batch ``flat`` (a flat index over ``batch``) in operand 0 (A) or 1 (B)."""
    terms, inner = [], 1
    for size, *operand_steps in reversed(batch):
        step = operand_steps[operand_index]
        if step:
            position = f"{flat} / {inner}" if inner > 1 else flat
            terms.append(f"({position}) % {size} * {step}")
        inner *= size
    return " + ".join(terms) if terms else "0"


def row_blocks(em: Emitter, g: Gemm, tile_rows: int, itemsize: int) -> int:
    """Rows of A per task: as many whole row tiles as keep the block's rows of A within half
    the target's L2 cache (the other half holds a panel of B and the results), in blocks
    of equal size, at least one per core where there are fewer batches than cores."""
    fitting = max(1, em.target.l2_bytes // 2 // max(1, g.k * itemsize))
    blocks = -(-g.m // max(tile_rows, fitting - fitting % tile_rows))
    if g.batches < em.target.cores:
        blocks = max(blocks, -(-em.target.cores // g.batches))
    rows_per_block = -(-g.m // blocks)
    return -(-rows_per_block // tile_rows) * tile_rows


def result_index(root: Node, g: Gemm) -> Index:
    """Element (batch ``bi``, row ``m``, column ``col``) of ``root``'s result, laid out as
    its batch, lhs-free and rhs-free dimensions."""
    lb = len(root.attr("lhs_batch"))
    rb = len(root.inputs[0].shape) - len(root.attr("lhs_contracting"))
    shape = root.shape
    dims = (*_unflatten("bi", shape[:lb]), *_unflatten("m", shape[lb:rb]), *_unflatten("col", shape[rb:]))
    return Index(shape, dims, f"(bi * {g.m} + m) * {g.n} + col")


def _unflatten(flat: str, sizes: tuple[int, ...]) -> list[str]:
    """C expressions of the indices into dimensions of ``sizes`` (outermost first) that the
    row-major flat index ``flat`` stands for."""
    dims, inner, total = [], 1, math.prod(sizes)
    for size in reversed(sizes):
        if size == 1:
            dims.append("0")
            continue
        quotient = f"{flat} / {inner}" if inner > 1 else flat
        dims.append(f"({quotient}) % {size}" if inner * size < total else f"({quotient})")
        inner *= size
    return dims[::-1]


def _tiled_gemm(em: Emitter, computation: Graph, outputs: list[str], root: Node, g: Gemm) -> None:
    x, y = root.inputs
    a, b = operand(em, x), operand(em, y)
    t = c_type(root.dtype)
    # bfloat16 operands (without vdpbf16ps) are widened to float32 as they are read
    widen = "braze_from_bf16" if x.dtype is bfloat16 else ""
    lanes = em.target.lanes(root.dtype.itemsize)
    width = -(-g.n // lanes) * lanes
    batches = g.batches
    if g.b_col == 1 and width == g.n and not widen:
        panel, panel_k, panel_batch = b, g.b_k, None
    else:
        # Rows of B made contiguous and padded to whole vectors (the scratch is kept
        # between calls, so the padding stays zero), whatever B's layout.
        panel, panel_k, panel_batch = "bpack", width, g.k * width
        em.scratch_buffer(t, "bpack", batches * g.k * width)
        pragma = parallel_pragma(batches * g.k * g.n, batches * g.k)
        if pragma:
            em.emit(pragma)
        open_loop(em, "pb", batches * g.k)
        em.emit(f"const int64_t bi = pb / {g.k}, kk = pb % {g.k};")
        em.emit(f"const {c_type(y.dtype)}* from = {b} + {batch_offset(g.batch, 'bi', 1)} + kk * {g.b_k};")
        open_loop(em, "j", g.n)
        em.emit(f"bpack[pb * {width} + j] = {widen}(from[j * {g.b_col}]);")
        close_loops(em, 2)
    vectors = width // lanes
    work = root.aval.size * g.k
    tile_rows, tile_vectors = register_tile(em, g.m, vectors, work)
    block = row_blocks(em, g, tile_rows, root.dtype.itemsize)
    blocks = -(-g.m // block)
    pragma = contraction_pragma(work, batches * blocks)
    if pragma:
        em.emit(pragma)
    open_loop(em, "task", batches * blocks)
    em.emit(f"const int64_t bi = task / {blocks}, r0 = task % {blocks} * {block};")
    em.emit(f"const int64_t r1 = r0 + {block} < {g.m} ? r0 + {block} : {g.m};")
    em.emit(f"const {c_type(x.dtype)}* am = {a} + {batch_offset(g.batch, 'bi', 0)};")
    b_base = f"bi * {panel_batch}" if panel_batch is not None else batch_offset(g.batch, "bi", 1)
    em.emit(f"const {t}* bm = {panel} + {b_base};")
    full_chunks_fit = (vectors - vectors % tile_vectors) * lanes <= g.n

    def row_tile(rows: int, chunk: int, first: str) -> None:
        em.emit(f"braze_v{root.dtype.short} acc[{rows}][{chunk}];")
        em.emit("memset(acc, 0, sizeof(acc));")
        open_loop(em, "k", g.k)
        vector_tile(
            em,
            t,
            rows,
            chunk,
            f"bm + k * {panel_k} + q0 * {lanes}",
            lambda i: f"{widen}(am[(m0 + {i}) * {g.a_row} + k * {g.a_k}])",
        )
        close_loops(em, 1)
        # A compile-time count of columns wherever it is known, so the stores vectorize.
        if first.isdigit():
            columns: int | str = min(g.n - int(first) * lanes, chunk * lanes)
        elif full_chunks_fit:
            columns = chunk * lanes
        else:
            columns = f"({g.n} - q0 * {lanes} < {chunk * lanes} ? {g.n} - q0 * {lanes} : {chunk * lanes})"
        open_loop(em, "i", rows)
        em.emit("const int64_t m = m0 + i;")
        open_loop(em, "jj", columns)
        em.emit(f"const int64_t col = q0 * {lanes} + jj;")
        value = f"((const {t}*)acc)[i * {chunk * lanes} + jj]"
        store_results(em, computation, outputs, root, result_index(root, g), value)
        close_loops(em, 2)

    def column_panel(chunk: int, first: str) -> None:
        em.emit("{")
        em.push()
        em.emit(f"const int64_t q0 = {first};")
        em.emit(f"for (int64_t m0 = r0; m0 + {tile_rows} <= r1; m0 += {tile_rows}) {{")
        em.push()
        row_tile(tile_rows, chunk, first)
        close_loops(em, 1)
        if g.m % tile_rows:
            # The last rows, in the last block only (every other block ends before them); a
            # loop rather than an if, which would keep GCC from if-converting the epilogue.
            open_loop(em, "m0", "r1", start=g.m - g.m % tile_rows, step=tile_rows)
            row_tile(g.m % tile_rows, chunk, first)
            close_loops(em, 1)
        em.pop()
        em.emit("}")

    each_tile(em, "qb", vectors, tile_vectors, column_panel)
    close_loops(em, 1)


def _offset(names: list[str], steps: list[int]) -> str:
    terms = [n if s == 1 else f"{n} * {s}" for n, s in zip(names, steps, strict=True) if s]
    return " + ".join(terms) if terms else "0"


def _loop_dot(em: Emitter, computation: Graph, outputs: list[str], root: Node) -> None:
    """Any dot_general, in plain loops the compiler vectorizes: the axpy form where B's
    columns are contiguous, else one dot product per result element."""
    x, y = root.inputs
    a, b = operand(em, x), operand(em, y)
    lc, rc = list(root.attr("lhs_contracting")), list(root.attr("rhs_contracting"))
    lb, rb = list(root.attr("lhs_batch")), list(root.attr("rhs_batch"))
    lf = [d for d in range(len(x.shape)) if d not in lc and d not in lb]
    rf = [d for d in range(len(y.shape)) if d not in rc and d not in rb]
    xs, ys = strides(x.shape), strides(y.shape)
    batch = [f"b{i}" for i in range(len(lb))]
    rows = [f"m{i}" for i in range(len(lf))]
    cols = [f"n{i}" for i in range(len(rf))]
    ks = [f"k{i}" for i in range(len(lc))]
    out_names = batch + rows + cols
    t = c_type(root.dtype)
    n_total = math.prod(y.shape[d] for d in rf)
    work = root.aval.size * math.prod(x.shape[d] for d in lc)
    outer = [(n, x.shape[d]) for n, d in zip(batch + rows, lb + lf, strict=True)]
    a_base = _offset(batch + rows, [xs[d] for d in lb + lf])
    b_base = _offset(batch, [ys[d] for d in rb])
    a_k = _offset(ks, [xs[d] for d in lc])
    b_k = _offset(ks, [ys[d] for d in rc])
    b_n = _offset(cols, [ys[d] for d in rf])
    contiguous_cols = len(rf) == 1 and ys[rf[0]] == 1
    pragma = contraction_pragma(work, outer[0][1] if outer else 1)
    if pragma:
        em.emit(pragma)
    for name, size in outer:
        em.emit(f"for (int64_t {name} = 0; {name} < {size}; {name}++) {{")
        em.push()
    if contiguous_cols:
        # axpy form: stream rows of B, accumulate a row of C in a local array.
        em.emit(f"{t} acc[{n_total}] = {{0}};")
        for name, d in zip(ks, lc, strict=True):
            em.emit(f"for (int64_t {name} = 0; {name} < {x.shape[d]}; {name}++) {{")
            em.push()
        em.emit(f"const {t} av = {a}[{a_base} + {a_k}];")
        em.emit(f"const {t}* brow = {b} + {b_base} + {b_k};")
        em.emit(f"for (int64_t n0 = 0; n0 < {n_total}; n0++) acc[n0] += av * brow[n0];")
        for _ in ks:
            em.pop()
            em.emit("}")
        em.emit(f"for (int64_t n0 = 0; n0 < {n_total}; n0++) {{")
        em.push()
        store_results(em, computation, outputs, root, Index(root.shape, tuple(out_names)), "acc[n0]")
        em.pop()
        em.emit("}")
    else:
        # dot form: one dot product per result element, contracted dimensions innermost.
        for name, d in zip(cols, rf, strict=True):
            em.emit(f"for (int64_t {name} = 0; {name} < {y.shape[d]}; {name}++) {{")
            em.push()
        em.emit(f"{t} acc = 0;")
        for position, (name, d) in enumerate(zip(ks, lc, strict=True)):
            if position == len(ks) - 1:
                em.emit("#pragma omp simd reduction(+:acc)")
            em.emit(f"for (int64_t {name} = 0; {name} < {x.shape[d]}; {name}++) {{")
            em.push()
        em.emit(f"acc += {a}[{a_base} + {a_k}] * {b}[{b_base} + {b_n} + {b_k}];")
        for _ in ks:
            em.pop()
            em.emit("}")
        store_results(em, computation, outputs, root, Index(root.shape, tuple(out_names)), "acc")
        for _ in cols:
            em.pop()
            em.emit("}")
    for _ in outer:
        em.pop()
        em.emit("}")
