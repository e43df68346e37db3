"""dot_general as a batched GEMM: C[b, m, n] = sum over k of A[b, m, k] B[b, k, n].

Every product whose batch, free and contracting dimensions each collapse to one stride (all
of a transformer's: ``x @ W`` over (batch, time, channels), the weight gradient contracting
batch and time together, the 4-D attention products, the transposed operands of the
backward pass) runs as register-tiled micro-kernels in the GotoBLAS arrangement: each
task, a block of rows of one batch sized so that its rows of A stay in the L2 cache (or,
where a few rows would be split only to give every core work, all of them and a group of
B's column panels), copies those rows into depth-major row tiles where A is read across
its rows and a tile could not prefetch them (a weight gradient's transposed activations
with a narrow tile), then sweeps its column panels of B, each one register tile wide: it
copies the panel into its own thread's buffer, rows contiguous and padded to whole
vectors (the panel is then reused by every row tile of the block from its own core's
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
from braze.backends.cpu.loops import (
    close_loops,
    contraction_pragma,
    open_loop,
    open_loops,
    open_thread_block,
    store_results,
)
from braze.backends.cpu.target import CACHE_LINE
from braze.backends.cpu.tiles import (
    accumulate,
    each_tile,
    operand,
    register_tiles,
    vector_tile,
    zero_accumulators,
)
from braze.backends.cstyle import Index, c_type, unflatten
from braze.ir.dtypes import bfloat16, float32, float64
from braze.ir.graph import Graph, Node
from braze.ir.primitive import Category
from braze.ir.prims.linalg import dot_general
from braze.passes.operand_views import View, row_major, strided_view


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


def gemm_layout(root: Node, views: tuple[View | None, ...] | None = None) -> Gemm | None:
    """``root`` (a dot_general) as a batched GEMM, or None where one of its dimension groups
    does not collapse to a single stride; its operands are read from memory as ``views``
    (``operand_views``), row-major where none are given."""
    x, y = root.inputs
    xs, ys = (view.strides for view in views) if views else (row_major(x.shape), row_major(y.shape))
    lc, rc = list(root.attr("lhs_contracting")), list(root.attr("rhs_contracting"))
    lb, rb = list(root.attr("lhs_batch")), list(root.attr("rhs_batch"))
    lf = [d for d in range(len(x.shape)) if d not in lc and d not in lb]
    rf = [d for d in range(len(y.shape)) if d not in rc and d not in rb]
    pairs = [(i, j) for i, j in zip(lc, rc, strict=True) if x.shape[i] != 1]
    rows, cols = _collapse(lf, x.shape, xs), _collapse(rf, y.shape, ys)
    a_depth = _collapse([i for i, _ in pairs], x.shape, xs)
    b_depth = _collapse([j for _, j in pairs], y.shape, ys)
    if rows is None or cols is None or a_depth is None or b_depth is None:
        return None
    batch = tuple((x.shape[i], xs[i], ys[j]) for i, j in zip(lb, rb, strict=True) if x.shape[i] != 1)
    return Gemm(batch, rows[0], cols[0], a_depth[0], rows[1], a_depth[1], b_depth[1], cols[1])


# Products of fewer columns run as plain loops (a register tile would be mostly padding).
MIN_GEMM_COLUMNS = 8


def kernel_views(root: Node) -> tuple[View, ...]:
    """A product's operands as its kernel reads them: each a parameter of the kernel, or a
    view of one through the movement ops the fusion let it read through (operand_views)."""
    views = tuple(strided_view(operand, lambda _: True) for operand in root.inputs)
    for view in views:
        assert view is not None and view.source.op.category is Category.PARAMETER, "a product reads buffers"
    return views  # type: ignore[return-value]


def float_gemm(root: Node, views: tuple[View, ...]) -> Gemm | None:
    """The layout of ``root`` (a dot_general) where ``emit_dot`` gives it to ``_tiled_gemm``
    with float32 or float64 operands of its own type read as ``views``: the products that
    may read through movement ops (``CpuFusionPolicy.reads_operand_views``); the others
    read their operands from buffers."""
    if root.op is not dot_general or root.dtype not in (float32, float64):
        return None
    if any(operand.dtype != root.dtype for operand in root.inputs):
        return None
    layout = gemm_layout(root, views)
    return layout if layout is not None and layout.n >= MIN_GEMM_COLUMNS else None


def emit_dot(em: Emitter, computation: Graph, outputs: list[str], root: Node) -> None:
    views = kernel_views(root)  # views of parameters only where float_gemm took them
    layout = gemm_layout(root, views) if root.dtype.is_float else None
    tiled = layout is not None and layout.n >= MIN_GEMM_COLUMNS
    if tiled and em.target.bfloat16_dot and root.inputs[0].dtype is bfloat16:
        from braze.backends.cpu.bf16_dot import emit_bfloat16_dot  # it builds on this module

        emit_bfloat16_dot(em, computation, outputs, root, layout)
    elif tiled:
        _tiled_gemm(em, computation, outputs, root, layout, views)
    else:
        _loop_dot(em, computation, outputs, root)


def _operand_pointer(em: Emitter, view: View) -> str:
    """The C address of a product's operand: its parameter's, past the view's offset."""
    base = em.inputs[view.source.attr("index")]
    return f"({base} + {view.offset})" if view.offset else base


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


def _rows_in_half_l2(em: Emitter, g: Gemm, itemsize: int) -> int:
    """How many rows of A (each ``g.k`` deep) fit in half the target's L2 cache."""
    return em.target.l2_bytes // 2 // max(1, g.k * itemsize)


def row_blocks(em: Emitter, g: Gemm, tile_rows: int, itemsize: int) -> int:
    """Rows of A per task: as many whole row tiles as keep the block's rows of A within half
    the target's L2 cache (the other half holds a panel of B and the results), in blocks
    of equal size, at least one per core where there are fewer batches than cores, and as
    many tasks in all as make whole rounds of the cores where the tiles allow (7 tasks on
    2 cores leave one core idle for an eighth of the kernel)."""
    fitting = max(1, _rows_in_half_l2(em, g, itemsize))
    tiles = -(-g.m // tile_rows)
    blocks = -(-tiles // max(1, fitting // tile_rows))
    if g.batches < em.target.cores:
        blocks = max(blocks, -(-em.target.cores // g.batches))
    while (g.batches * blocks) % em.target.cores and blocks < tiles:
        blocks += 1
    return -(-tiles // min(blocks, tiles)) * tile_rows


# Below this many row tiles a core, a panel of B packed on every core (each task packs the
# panels it reads) costs more than reading all of A's rows on each: a packed panel is read
# once by each row tile, so its copy costs about one more tile's reads.
_FEW_ROW_TILES = 16


def column_groups(em: Emitter, g: Gemm, rows: int, panels: int, itemsize: int) -> int:
    """Column panels' groups, one per core, where the cores would otherwise split few rows
    only to have work: fewer batches than cores, rows of A that fit one block and make
    fewer than _FEW_ROW_TILES tiles a core, and whole panels of B that divide among the
    cores. Split by rows, every task packs every panel of B; split by columns, each packs
    its own (the GPT's four 128 x 512 weight gradients, whose 768-deep panels are then
    packed once instead of twice: 2.3 -> 2.1 ms a step on two Zen 4 cores). 1: rows only."""
    cores = em.target.cores
    one_block = g.m <= _rows_in_half_l2(em, g, itemsize)
    few_rows = -(-g.m // rows) < _FEW_ROW_TILES * cores
    split = cores > 1 and g.batches < cores and one_block and few_rows and panels and panels % cores == 0
    return cores if split else 1


def result_index(root: Node, g: Gemm) -> Index:
    """Element (batch ``bi``, row ``m``, column ``col``) of ``root``'s result, laid out as
    its batch, lhs-free and rhs-free dimensions."""
    lb = len(root.attr("lhs_batch"))
    rb = len(root.inputs[0].shape) - len(root.attr("lhs_contracting"))
    shape = root.shape
    dims = (*unflatten("bi", shape[:lb]), *unflatten("m", shape[lb:rb]), *unflatten("col", shape[rb:]))
    return Index(shape, dims, f"(bi * {g.m} + m) * {g.n} + col")


_TRANSPOSE_BLOCK = 16  # depths per block of a transposing copy: a cache line of float32


def _pack_panel(em: Emitter, y: Node, b: str, g: Gemm, t: str, chunk: int, lanes: int, widen: str) -> None:
    """Copy the column panel at vector ``q0`` of this task's batch of B into the thread's
    ``bp``, its rows contiguous and ``chunk`` vectors wide (the last panel's columns past B's
    zeroed), so a tile sweeping the depth reads one stream instead of a cache line per row
    of B. Each task packs the panels it reads itself: packed by all threads into one shared
    copy, half of every task's panel came from the other core's cache, which on a Xeon cost
    more than the product's arithmetic."""
    row = chunk * lanes  # a packed row: the panel's vectors
    em.emit(f"const {c_type(y.dtype)}* from = {b} + {batch_offset(g.batch, 'bi', 1)} + q0 * {lanes * g.b_col};")
    em.emit(f"const int64_t columns = {g.n} - q0 * {lanes} < {row} ? {g.n} - q0 * {lanes} : {row};")
    copy = f"bp[kk * {row} + c] = {widen}(from[kk * {g.b_k} + c * {g.b_col}]);"
    if g.b_col == 1:
        open_loop(em, "kk", g.k)
        open_loop(em, "c", "columns")
        em.emit(copy)
        close_loops(em, 2)
    else:
        # B's columns run along the depth (g @ W^T): the copy transposes, sixteen depths of
        # every column at a time, so it reads whole cache lines (a column at a time, one
        # read per line: five times slower).
        open_loop(em, "k0", g.k, step=_TRANSPOSE_BLOCK)
        em.emit(f"const int64_t k1 = k0 + {_TRANSPOSE_BLOCK} < {g.k} ? k0 + {_TRANSPOSE_BLOCK} : {g.k};")
        open_loop(em, "c", "columns")
        open_loop(em, "kk", "k1", start="k0")
        em.emit(copy)
        close_loops(em, 3)
    open_loop(em, "kk", g.k)
    open_loop(em, "c", row, start="columns")
    em.emit(f"bp[kk * {row} + c] = 0;")
    close_loops(em, 2)


def _pack_rows(em: Emitter, g: Gemm, t: str, tile_rows: int, widen: str) -> None:
    """Copy this task's rows r0..r1 of A into ``at``, one register tile of rows at a time,
    depth-major (a tile's rows of one k side by side), so the tile's broadcasts read one
    contiguous stream whatever A's layout; tile by tile, so the copy writes one stream."""

    def tiles(rows: int, start: str, bound: str) -> None:
        open_loop(em, "m0", bound, start=start, step=tile_rows)
        em.emit(f"{t}* to = at + (m0 - r0) * {g.k};")
        open_loops(em, [("k", g.k), ("ii", rows)])
        em.emit(f"to[k * {rows} + ii] = {widen}(am[(m0 + ii) * {g.a_row} + k * {g.a_k}]);")
        close_loops(em, 3)

    tiles(tile_rows, "r0", f"r1 - {tile_rows - 1}")
    if g.m % tile_rows:
        tiles(g.m % tile_rows, str(g.m - g.m % tile_rows), "r1")


def _prefetch_ahead(em: Emitter, g: Gemm, x: Node) -> None:
    """Declare ``ahead``: A's rows one cache line past this tile's, which the tile
    prefetches (into L2) at each depth it reads. Read in place across adjacent rows, a
    cache line of one depth serves two or three tiles, and the first of them meets it cold:
    on a weight gradient, whose activations were written long before, that is a miss to
    memory at every depth (rows 2 KiB apart, a stride the hardware prefetcher does not
    follow across pages), and the tile stalls on each. The GPT's 512 x 128 gradient from
    operands out of cache: 0.60 ms in place, 0.50 ms with the tiles before prefetching,
    0.58 ms packed (its four in a step: 2.5 -> 2.15 ms). The last tiles prefetch their own
    rows, so the address stays in A."""
    line = CACHE_LINE // x.dtype.itemsize
    em.emit(f"const {c_type(x.dtype)}* ahead = am + (m0 + {line} < {g.m} ? m0 + {line} : m0);")


# Depths ahead at which a tile reading A across its rows prefetches its own line into L1.
_L1_PREFETCH_DEPTHS = 8


def _prefetch_depth(em: Emitter, g: Gemm) -> None:
    """Prefetch, at depth ``k``, the tiles' next lines of A: that of the rows past the tile
    into L2 (``_prefetch_ahead``), and the tile's own line ``_L1_PREFETCH_DEPTHS`` depths on
    into L1. A's rows of one depth lie a row of A from the last depth's, a power-of-two
    stride on a transformer (2 KiB for the 512-wide activations) whose lines fall in one or
    two L1 sets, so the lines the last tile read are gone when the next reads them, and each
    depth waited on L2. On an Intel Xeon (AVX-512) the GPT's weight gradients, operands in
    cache: 512 x 128 0.39 -> 0.31 ms, 128 x 512 0.31 -> 0.29 ms, 128 x 384 0.22 -> 0.21 ms.
    The last depths prefetch their own line again, so the address stays in A."""
    em.emit(f"__builtin_prefetch(ahead + k * {g.a_k}, 0, 2);")
    depth = f"(k + {_L1_PREFETCH_DEPTHS} < {g.k} ? k + {_L1_PREFETCH_DEPTHS} : k)"
    em.emit(f"__builtin_prefetch(am + m0 + {depth} * {g.a_k}, 0, 3);")


def _within_half_l1(em: Emitter, elements: int, itemsize: int) -> bool:
    return elements * itemsize <= em.target.l1d_bytes // 2


def _tiled_gemm(
    em: Emitter, computation: Graph, outputs: list[str], root: Node, g: Gemm, views: tuple[View, ...]
) -> None:
    x, y = root.inputs
    a, b = (_operand_pointer(em, view) for view in views)
    t = c_type(root.dtype)
    # bfloat16 operands (without vdpbf16ps) are widened to float32 as they are packed or read
    widen = "braze_from_bf16" if x.dtype is bfloat16 else ""
    lanes = em.target.lanes(root.dtype.itemsize)
    width = -(-g.n // lanes) * lanes
    vectors = width // lanes
    batches = g.batches
    work = root.aval.size * g.k
    # The predicted tile, untimed: three quarters of the registers, 6 x 2 vectors on AVX2
    # (BLIS's Haswell tile), as packed operands leave nothing for timing to find; the
    # runner-up (12 x 1, a broadcast per multiply-add) was up to twice as slow, and on a
    # busy host the autotuner picked it for half the step's products.
    tile_rows, tile_vectors = register_tiles(em.target, g.m, vectors, 3 / 4)[0]
    panel_width = tile_vectors * lanes
    # B is read in place where its rows are already one panel, or where a panel's sweep
    # over the depth stays within half the L1 cache (an attention head's 64 x 64): packing
    # those cost more than it saved (48 heads' 64 x 32 by 32 x 64 products: 72 -> 43 GFLOP/s).
    itemsize = root.dtype.itemsize
    in_place = g.b_col == 1 and g.n == width and not widen
    packed = not (in_place and (g.n <= panel_width or _within_half_l1(em, g.k * g.b_k, itemsize)))
    # A's rows are copied into depth-major tiles where A is read across its rows and a
    # tile's sweep over the depth spans more than half the L1 cache: there a tile's values
    # of one depth lie a row of A from the last depth's (2 KiB on a weight gradient),
    # strides that fall in a few L1 sets (on a Zen 3 core the weight gradient went from 45
    # to 76 GFLOP/s). Rows read along their depth run faster in place, and so do adjacent
    # rows read across (a weight gradient's transposed activations) where a tile reads at
    # least four cache lines of B a depth, so that A's one line (from L2) adds at most a
    # quarter: there the tile prefetches A's rows ahead (``_prefetch_ahead``). On a Zen 4
    # core the GPT's 512 x 128 weight gradient went from 0.58 to 0.50 ms with AVX-512's
    # 6 x 4 vector tile (four lines a depth), and from 0.58 to 0.72 ms with AVX2's 6 x 2
    # (one line a depth: A's doubled what the tile read), which stays packed.
    across = g.a_k != 1 and not _within_half_l1(em, g.k * g.a_k, itemsize)
    wide_tile = panel_width * itemsize >= 4 * CACHE_LINE
    prefetching = across and g.a_row == 1 and wide_tile and not widen
    rows_packed = bool(widen) or (across and not prefetching)
    full_panels = vectors // tile_vectors if vectors % tile_vectors == 0 else 0
    groups = column_groups(em, g, tile_rows, full_panels, itemsize)
    block = row_blocks(em, g, tile_rows, itemsize) if groups == 1 else g.m
    blocks = -(-g.m // block)
    pragma = contraction_pragma(work, batches * blocks * groups)
    slices = []
    if packed:
        slices.append(("bpack", g.k * panel_width, "bp"))
    if rows_packed:
        slices.append(("apack", block * g.k, "at"))
    for buffer, size, _ in slices:
        em.scratch_buffer(t, buffer, size, per_thread=True, temporary=True)  # each call packs what it reads
    if slices:
        open_thread_block(em, pragma, t, slices)
    elif pragma:
        em.emit(pragma)
    open_loop(em, "task", batches * blocks * groups)
    em.emit(f"const int64_t bi = task / {blocks * groups}, r0 = task / {groups} % {blocks} * {block};")
    em.emit(f"const int64_t r1 = r0 + {block} < {g.m} ? r0 + {block} : {g.m};")
    em.emit(f"const {c_type(x.dtype)}* am = {a} + {batch_offset(g.batch, 'bi', 0)};")
    if not packed:
        em.emit(f"const {t}* bm = {b} + {batch_offset(g.batch, 'bi', 1)};")
    if rows_packed:
        _pack_rows(em, g, t, tile_rows, widen)
    full_chunks_fit = (vectors - vectors % tile_vectors) * lanes <= g.n

    def row_tile(rows: int, chunk: int, first: str) -> None:
        em.emit(f"braze_v{root.dtype.short} acc[{rows}][{chunk}];")
        zero_accumulators(em, f"braze_v{root.dtype.short}", rows, chunk)
        if rows_packed:
            em.emit(f"const {t}* as = at + (m0 - r0) * {g.k};")
        elif prefetching:
            _prefetch_ahead(em, g, x)
        open_loop(em, "k", g.k)
        if prefetching:
            _prefetch_depth(em, g)
        # A panel's rows are chunk vectors wide (the last panel, narrower, is packed so).
        panel = f"bp + k * {chunk * lanes}" if packed else f"bm + k * {g.b_k} + q0 * {lanes}"
        scalar = (
            (lambda i: f"as[k * {rows} + {i}]")
            if rows_packed
            else (lambda i: f"am[(m0 + {i}) * {g.a_row} + k * {g.a_k}]")
        )
        vector_tile(em, t, rows, chunk, panel, scalar)
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
        if packed:
            _pack_panel(em, y, b, g, t, chunk, lanes, widen)
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

    if groups == 1:
        each_tile(em, "qb", vectors, tile_vectors, column_panel)
    else:
        span = vectors // groups  # whole panels
        em.emit(f"const int64_t first_panel = task % {groups} * {span};")
        open_loop(em, "qb", f"first_panel + {span}", start="first_panel", step=tile_vectors)
        column_panel(tile_vectors, "qb")
        close_loops(em, 1)
    close_loops(em, 2 if slices else 1)


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
    xs, ys = row_major(x.shape), row_major(y.shape)
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
        em.emit(f"for (int64_t n0 = 0; n0 < {n_total}; n0++) {accumulate(t, 'acc[n0]', 'av', 'brow[n0]')}")
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
        em.emit(accumulate(t, "acc", f"{a}[{a_base} + {a_k}]", f"{b}[{b_base} + {b_n} + {b_k}]"))
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
