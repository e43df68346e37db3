"""Direct C kernels for dot_general, conv and the conv transposes, each with its fused
epilogue (bias, activation, scaling) applied as results are stored.

Every shape is a compile-time constant. Accumulators live in small local arrays whose
innermost axis is the contiguous one of the operand streamed in the inner loop, so the
compiler vectorizes it without any runtime dispatch. Vector widths and register tiles come
from the CPU target (``em.target``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from braze.backends.cpu import loops
from braze.backends.cpu.bf16_conv import (
    multiplies_pairs,
    pack_cotangent_row,
    pack_filter_pairs,
    pair_input_row,
    widened,
)
from braze.backends.cpu.bf16_dot import declare_helpers, paired_tile
from braze.backends.cpu.elemental import Emitter
from braze.backends.cpu.gemm import emit_dot
from braze.backends.cpu.interleaved import emit_interleaved_conv, emit_interleaved_filter_grad, interleaves
from braze.backends.cpu.loops import (
    close_loops,
    close_parallel,
    contraction_pragma,
    open_loop,
    open_loops,
    open_parallel,
    open_thread_block,
    parallel_pragma,
    store_results,
)
from braze.backends.cpu.tiles import (
    accumulate,
    each_tile,
    load_accumulators,
    operand,
    register_tile,
    store_accumulators,
    vector_tile,
    zero_accumulators,
)
from braze.backends.cpu.winograd import (
    MIN_CHANNELS,
    MIN_FILTER_GRAD_CHANNELS,
    emit_winograd_conv,
    emit_winograd_filter_grad,
    fits,
)
from braze.backends.cstyle import Index, c_type
from braze.ir.dtypes import bfloat16
from braze.ir.graph import Graph, Node
from braze.ir.prims.conv import conv, conv_grad_filter, conv_grad_input
from braze.ir.prims.linalg import dot_general


def _conv_geometry(root: Node) -> tuple[int, int, int, int, int, int]:
    """(stride h, stride w, padding top, padding left, dilation h, dilation w)."""
    (sh, sw), ((pt, _), (pl, _)), (dh, dw) = root.attr("strides"), root.attr("padding"), root.attr("dilation")
    return sh, sw, pt, pl, dh, dw


def _landing(size: int, offset: int, step: int, bound: int) -> tuple[int, int]:
    """[start, end) of the positions i in [0, size) with offset + i * step in [0, bound)."""
    start = max(0, -(offset // step))
    return start, max(start, min(size, (bound - 1 - offset) // step + 1))


def _zero_border(
    em: Emitter,
    t: str,
    name: str,
    size: tuple[int, int, int],
    landed_rows: tuple[int, int],
    landed_cols: tuple[int, int],
) -> None:
    """Zero image ``cn`` of the (rows, cols, C) padded buffer ``name`` outside the rows and
    columns its copy lands in, [r0, r1) x [c0, c1)."""
    rows, cols, c = size
    r0, r1 = landed_rows if landed_rows[0] < landed_rows[1] else (0, 0)
    c0, c1 = landed_cols if landed_cols[0] < landed_cols[1] else (0, 0)
    image = f"{name} + cn * {rows * cols * c}"
    for start, end in ((0, r0), (r1, rows)):
        if end > start:
            em.emit(f"memset({image} + {start * cols * c}, 0, sizeof({t}) * {(end - start) * cols * c});")
    if r1 > r0 and (c0 > 0 or c1 < cols):
        open_loop(em, "zy", r1, start=r0)
        for start, end in ((0, c0), (c1, cols)):
            if end > start:
                em.emit(f"memset({image} + (zy * {cols} + {start}) * {c}, 0, sizeof({t}) * {(end - start) * c});")
        close_loops(em, 1)


def _padded_copy(
    em: Emitter,
    t: str,
    name: str,
    source: str,
    shape,
    rows: int,
    cols: int,
    top: int,
    left: int,
    row_step: int = 1,
    col_step: int = 1,
    channel_major: bool = False,
) -> None:
    """``name``: a zeroed (N, rows, cols, C) buffer with source[n, y, x] placed at
    (top + y * row_step, left + x * col_step); padding and stride dilation become zeros,
    so the convolution loops need no bounds checks. ``channel_major`` lays it out
    (N, rows, C, cols) instead, so that a row of one channel is contiguous, with a vector
    of slack at the end for a vector load running past the last row. Without dilation the
    copy zeroes its border itself on every call, so the buffer is a temporary
    (Emitter.scratch_buffer) that the kernels share; a dilated one is zeroed once."""
    n, h, w, c = shape
    slack = em.target.lanes(4) if channel_major else 0
    bordered = row_step == col_step == 1 and not channel_major
    em.scratch_buffer(t, name, n * rows * cols * c + slack, temporary=bordered)
    pragma = parallel_pragma(n * h * w * c, n)
    if pragma:
        em.emit(pragma)
    # The copy's range as loop bounds, not a test in the loop: a branch would keep the
    # whole kernel from if-conversion. The convolutions after it keep that protection
    # unless they accumulate in named vectors (_direct_conv): GCC 12 at -O3 miscompiled
    # a strided gradient's loops over plain arrays once if-converted (fuzz program 203).
    em.keep_branches = True
    open_loop(em, "cn", n)
    first_row, end_row = _landing(h, top, row_step, rows)
    first_col, end_col = _landing(w, left, col_step, cols)
    if bordered:
        _zero_border(em, t, name, (rows, cols, c), (top + first_row, top + end_row), (left + first_col, left + end_col))
    open_loop(em, "cy", end_row, start=first_row)
    em.emit(f"const int64_t ry = {top} + cy * {row_step};")
    open_loop(em, "cx", end_col, start=first_col)
    em.emit(f"const int64_t rx = {left} + cx * {col_step};")
    em.emit(f"const {t}* from = {source} + ((cn * {h} + cy) * {w} + cx) * {c};")
    if channel_major:
        em.emit(
            f"for (int64_t ch = 0; ch < {c}; ch++) {name}[((cn * {rows} + ry) * {c} + ch) * {cols} + rx] = from[ch];"
        )
    else:
        em.emit(f"memcpy({name} + ((cn * {rows} + ry) * {cols} + rx) * {c}, from, sizeof({t}) * {c});")
    close_loops(em, 3)


@dataclass
class _Conv:
    """A convolution kernel to emit. ``x``: the (padded) input, (n, rows, cols, c), or
    (n, rows, c, cols) for the narrow kernel; ``other``: the HWIO filter of a forward
    convolution, or the cotangent (n, oh, ow, o) of a filter gradient; (n, oh, ow): the
    output pixels; ``o``: output channels; strides and dilation of the filter's taps.
    ``pairs``: the operands are bfloat16, multiplied in pairs with vdpbf16ps (bf16_conv.py);
    ``t`` is the accumulators' type. ``placed``: (row step, first row, column step, first
    column) of the result's pixels this kernel computes, where it computes one phase of a
    strided input gradient (_phases_of_strided_grad_input); None, all of them."""

    em: Emitter
    computation: Graph
    outputs: list[str]
    root: Node
    t: str
    x: str
    other: str
    rows: int
    cols: int
    n: int
    oh: int
    ow: int
    o: int
    kh: int
    kw: int
    c: int
    sh: int
    sw: int
    dh: int
    dw: int
    pairs: bool = False
    placed: tuple[int, int, int, int] | None = None

    @property
    def operand_type(self) -> str:
        return "uint16_t" if self.pairs else self.t

    def store(self, names: tuple[str, str, str, str], value: str) -> None:
        store_results(self.em, self.computation, self.outputs, self.root, Index(self.root.shape, names), value)


def _direct_conv(p: _Conv, w_hwoi: str | None = None, live_rows: tuple[int, int] | None = None) -> None:
    """A VALID convolution of the (already padded) ``x`` with HWIO ``w`` into ``root``'s shape.
    Rows of ``x`` outside ``live_rows`` (lo, hi) are padding zeros, whose taps are skipped.

    The accumulators of a register tile live in locals, with a contiguous axis innermost so
    that it vectorizes: output channels when there are at least 8; else, output columns
    when there are few input channels; else input channels (reading ``w_hwoi``, the
    filter laid out HWOI), finishing each output with a horizontal sum.
    """
    if p.o < 8 and p.c >= 8 and w_hwoi is not None:
        _deep_conv(p, w_hwoi)
        return
    em, computation, outputs, root, t = p.em, p.computation, p.outputs, p.root, p.t
    x, w, x_rows, x_cols = p.x, p.other, p.rows, p.cols
    n, oh, ow, o, kh, kw, c, sh, sw, dh, dw = p.n, p.oh, p.ow, p.o, p.kh, p.kw, p.c, p.sh, p.sw, p.dh, p.dw
    lanes = em.target.lanes(root.dtype.itemsize)
    wide = o >= 8
    vectors = o // lanes if wide and o % lanes == 0 else 0  # vectors of output channels, when whole
    assert vectors and dw == 1 or not p.pairs, "bfloat16 pairs need whole vectors of channels, undilated columns"
    if p.pairs:
        w = pack_filter_pairs(em, w, kh, kw * c, o)
    if vectors:
        tile, chunk = register_tile(em, ow, vectors, root.aval.size * kh * kw * c)
        # Named vectors leave the loop vectorizer only the epilogue, which if-conversion
        # lets it vectorize (its NaN-aware sign and selects): 0.8 of the 1.9 ms of a
        # ResNet input gradient ran as scalar branches without it.
        if not p.pairs:  # bfloat16 pairs (bf16_conv.py) keep whatever protection they had
            em.keep_branches = False
    else:
        # plain arrays of accumulators, where GCC keeps fewer of them in registers
        tile = min(ow, max(1, int(em.target.vector_registers * 3 / 8) // -(-o // lanes))) if wide else min(ow, 16)
    results = computation.outputs
    streamed = (
        p.placed is None
        and vectors > 0
        and len(results) == 1
        and results[0].dtype == root.dtype
        and root.dtype.itemsize == 4
        and loops.streams(em, root.aval.size * 4)
    )
    pragma = contraction_pragma(root.aval.size * kh * kw * c, n * oh)
    open_parallel(em, pragma, fenced=streamed)
    open_loop(em, "bn", n)
    open_loop(em, "y", oh)
    first_tap, taps = 0, kh
    if live_rows is not None and dh == 1:
        lo, hi = live_rows
        em.emit(f"const int64_t a_lo = {lo} - y * {sh} > 0 ? {lo} - y * {sh} : 0;")
        em.emit(f"const int64_t a_hi = {hi} - y * {sh} < {kh} ? {hi} - y * {sh} : {kh};")
        first_tap, taps = "a_lo", "a_hi"

    def open_taps(width: int) -> None:
        """The loops over the filter's taps; ``xr`` and ``wt`` point at a tap's input and weights."""
        open_loop(em, "a", taps, start=first_tap)
        pixel = f"(bn * {x_rows} + y * {sh} + a * {dh}) * {x_cols} + x0 * {sw}"
        if p.pairs:  # a filter row's taps in pairs
            em.emit(f"const uint16_t* xr = {x} + ({pixel}) * {c};")
            em.emit(f"const uint16_t* wt = {w} + a * {-(-kw * c // 2) * o * 2};")
            open_loop(em, "ci", kw * c // 2)
        elif vectors and dw == 1:
            # With undilated columns a filter row's (column, channel) taps are one
            # contiguous run in both the input row and the filter: one flat loop.
            em.emit(f"const {t}* xr = {x} + ({pixel}) * {c};")
            em.emit(f"const {t}* wt = {w} + a * {kw * c * o};")
            open_loop(em, "ci", kw * c)
        else:
            open_loop(em, "b", kw)
            em.emit(f"const {t}* xr = {x} + ({pixel} + b * {dw}) * {c};")
            em.emit(f"const {t}* wt = {w} + (a * {kw} + b) * {c * o};")
            open_loop(em, "ci", c)

    def store(width: int, channels: int, first: str, value: str) -> None:
        """Store ``channels`` output channels from ``first`` of ``width`` columns; ``value``
        reads accumulator (j, cc)."""
        open_loop(em, "j", width)
        open_loop(em, "cc", channels)
        em.emit(f"const int64_t ox = x0 + j, co = {first} + cc;")
        pixel = ("y", "ox")
        if p.placed:
            row_step, first_row, column_step, first_column = p.placed
            em.emit(f"const int64_t py = y * {row_step} + {first_row}, px = ox * {column_step} + {first_column};")
            pixel = ("py", "px")
        index = Index(root.shape, ("bn", *pixel, "co"))
        if streamed:
            em.overrides[id(root)] = lambda _index: value
            em.emit(f"staged[j][co] = {em.value(computation.outputs[0], index)};")
        else:
            store_results(em, computation, outputs, root, index, value)
        close_loops(em, 2)

    def channel_chunk(width: int, count: int, first: str) -> None:
        """``count`` vectors of output channels from vector ``first`` over a column tile, in
        named vectors that stay in registers."""
        em.emit("{")
        em.push()
        em.emit(f"const int64_t q0 = {first};")
        em.emit(f"braze_v{root.dtype.short} acc[{width}][{count}];")
        zero_accumulators(em, f"braze_v{root.dtype.short}", width, count)
        open_taps(width)
        if p.pairs:
            weights = f"wt + (ci * {o} + q0 * {lanes}) * 2"
            paired_tile(em, width, count, weights, lambda j: f"braze_pair(xr + {j * sw * c} + 2 * ci)")
            close_loops(em, 1)
            if kw * c % 2:  # the last tap alone: its pair's upper half (and the filter's) is zero
                em.emit(f"{{ const int64_t ci = {kw * c // 2};")
                paired_tile(em, width, count, weights, lambda j: f"(uint32_t)xr[{j * sw * c} + 2 * ci]")
                em.emit("}")
            close_loops(em, 1)
        else:
            vector_tile(em, t, width, count, f"wt + ci * {o} + q0 * {lanes}", lambda j: f"xr[{j * sw * c} + ci]")
            close_loops(em, 2 if dw == 1 else 3)
        store(width, count * lanes, f"q0 * {lanes}", f"((const {t}*)acc)[j * {count * lanes} + cc]")
        em.pop()
        em.emit("}")

    def block(width: int, start: str) -> None:
        """One tile of output columns: explicit vectors over output channels when they fill
        whole vectors (so they stay in registers), else plain arrays with the contiguous
        axis innermost."""
        em.emit("{")
        em.push()
        em.emit(f"const int64_t x0 = {start};")
        if streamed:
            # The tile's results are contiguous in the output: staged in a local block,
            # then written past the cache.
            em.emit(f"float staged[{width}][{o}] __attribute__((aligned(64)));")
        if vectors:
            each_tile(em, "qb", vectors, chunk, lambda count, first: channel_chunk(width, count, first))
        else:
            em.emit(f"{t} acc{f'[{width}][{o}]' if wide else f'[{o}][{width}]'};")
            em.emit("memset(acc, 0, sizeof(acc));")
            open_taps(width)
            if wide:
                open_loop(em, "j", width)
                em.emit(f"const {t} xv = xr[j * {sw * c} + ci];")
                update = accumulate(t, "acc[j][co]", "xv", f"wt[ci * {o} + co]")
                em.emit(f"for (int64_t co = 0; co < {o}; co++) {update}")
            else:
                em.emit("#pragma GCC unroll 32")
                open_loop(em, "co", o)
                em.emit(f"const {t} wv = wt[ci * {o} + co];")
                update = accumulate(t, "acc[co][j]", f"xr[j * {sw * c} + ci]", "wv")
                em.emit(f"for (int64_t j = 0; j < {width}; j++) {update}")
            close_loops(em, 4)
            store(width, o, "0", "acc[j][cc]" if wide else "acc[cc][j]")
        if streamed:
            em.emit(f"braze_stream({outputs[0]} + ((bn * {oh} + y) * {ow} + x0) * {o}, &staged[0][0], {width * o});")
        em.pop()
        em.emit("}")

    each_tile(em, "xb", ow, tile, block)
    close_loops(em, 2)
    close_parallel(em, fenced=streamed)


def _deep_conv(p: _Conv, w_hwoi: str) -> None:
    """Few output channels, many input channels: per output pixel, one vector of partial
    sums per output channel over the contiguous input channels."""
    em, root, t, x, x_rows, x_cols = p.em, p.root, p.t, p.x, p.rows, p.cols
    n, oh, ow, o, kh, kw, c, sh, sw, dh, dw = p.n, p.oh, p.ow, p.o, p.kh, p.kw, p.c, p.sh, p.sw, p.dh, p.dw
    pragma = contraction_pragma(root.aval.size * kh * kw * c, n * oh)
    if pragma:
        em.emit(pragma.replace("parallel for", "parallel for collapse(2)"))
    open_loop(em, "bn", n)
    open_loop(em, "y", oh)
    open_loop(em, "ox", ow)
    em.emit(f"{t} acc[{o}][{c}];")
    em.emit("memset(acc, 0, sizeof(acc));")
    open_loop(em, "a", kh)
    open_loop(em, "b", kw)
    em.emit(f"const {t}* xr = {x} + ((bn * {x_rows} + y * {sh} + a * {dh}) * {x_cols} + ox * {sw} + b * {dw}) * {c};")
    em.emit(f"const {t}* wt = {w_hwoi} + (a * {kw} + b) * {c * o};")
    em.emit("#pragma GCC unroll 32")
    open_loop(em, "co", o)
    em.emit(f"for (int64_t ci = 0; ci < {c}; ci++) {accumulate(t, 'acc[co][ci]', 'xr[ci]', f'wt[co * {c} + ci]')}")
    close_loops(em, 3)
    open_loop(em, "co", o)
    em.emit(f"{t} total = 0;")
    em.emit(f"for (int64_t ci = 0; ci < {c}; ci++) total += acc[co][ci];")
    p.store(("bn", "y", "ox", "co"), "total")
    close_loops(em, 4)


def _narrow_conv(p: _Conv, live_rows: tuple[int, int] | None = None) -> None:
    """A stride-1 VALID convolution with few output channels over a channel-major input:
    a vector of output columns, one vector accumulator per output channel, each filter
    tap a broadcast scalar. Lanes past the row's end compute garbage that is never stored
    (lanes never mix). A register tile of several output rows shares each tap's broadcast
    weights and gives the multiply-adds independent chains (one row of LeNet's second
    layer gradient, 6 channels, kept 6 chains for 2 FMA units of 4 cycles' latency); the
    last tile of an image repeats its last row where the rows run out (same values). Rows
    of ``x`` outside ``live_rows`` (lo, hi) are padding zeros: a tile skips the filter rows
    that read only those (a fifth of the taps of LeNet's second layer gradient)."""
    em, root, x, w, rows, cols = p.em, p.root, p.x, p.other, p.rows, p.cols
    n, oh, ow, o, kh, kw, c, dh, dw = p.n, p.oh, p.ow, p.o, p.kh, p.kw, p.c, p.dh, p.dw
    lanes = em.target.lanes(4)
    work = root.aval.size * kh * kw * c
    most = max(1, min(oh, (em.target.vector_registers - 4) // o))
    tiles = [most, max(1, most // 2)] if most > 1 else [1]
    tile = tiles[em.choice("row tile", len(tiles), work)]
    pragma = contraction_pragma(work, n * oh)
    if pragma:
        em.emit(pragma.replace("parallel for", "parallel for collapse(2)"))
    open_loop(em, "bn", n)
    open_loop(em, "yt", -(-oh // tile))
    for r in range(tile):
        em.emit(f"const int64_t y{r} = yt * {tile} + {r} < {oh} ? yt * {tile} + {r} : {oh - 1};")
    first_tap, taps = 0, kh
    if live_rows is not None and dh == 1:
        lo, hi = live_rows
        last = f"(yt * {tile} + {tile - 1} < {oh} ? yt * {tile} + {tile - 1} : {oh - 1})"
        em.emit(f"const int64_t a_lo = {lo} - {last} > 0 ? {lo} - {last} : 0;")
        em.emit(f"const int64_t a_hi = {hi} - yt * {tile} < {kh} ? {hi} - yt * {tile} : {kh};")
        first_tap, taps = "a_lo", "a_hi"
    open_loop(em, "x0", ow, step=lanes)
    em.emit(f"braze_vf32 acc[{tile}][{o}];")
    zero_accumulators(em, "braze_vf32", tile, o)
    open_loop(em, "a", taps, start=first_tap)
    open_loop(em, "b", kw)
    open_loop(em, "ci", c)
    for r in range(tile):
        start = f"{x} + ((bn * {rows} + y{r} + a * {dh}) * {c} + ci) * {cols} + x0 + b * {dw}"
        em.emit(f"braze_vf32 xv{r};")
        em.emit(f"memcpy(&xv{r}, {start}, sizeof(xv{r}));")
    em.emit(f"const float* wt = {w} + ((a * {kw} + b) * {c} + ci) * {o};")
    for co in range(o):
        updates = " ".join(
            accumulate("braze_vf32", f"acc[{r}][{co}]", f"xv{r}", "wv", scalar_b=True) for r in range(tile)
        )
        em.emit(f"{{ const float wv = wt[{co}]; {updates} }}")
    close_loops(em, 3)
    em.emit(f"const int64_t width = {ow} - x0 < {lanes} ? {ow} - x0 : {lanes};")
    for r in range(tile):
        open_loop(em, "j", "width")
        open_loop(em, "co", o)
        em.emit(f"const int64_t ox = x0 + j, y = y{r};")
        p.store(("bn", "y", "ox", "co"), f"acc[{r}][co][j]")
        close_loops(em, 2)
    close_loops(em, 3)


def _winograd(p: _Conv, emit: Callable[[_Conv], None], least_channels: int = MIN_CHANNELS) -> bool:
    """Emit ``p`` by Winograd's F(2x2, 3x3) (winograd.py) where it fits and the autotuner
    has not found the direct kernel quicker on this host; whether it did."""
    if not fits(p, least_channels) or p.em.choice("winograd", 2, p.n * p.oh * p.ow * p.kh * p.kw * p.c * p.o):
        return False
    emit(p)
    return True


def _operands(em: Emitter, root: Node) -> tuple[str, str, bool]:
    """The buffers of ``root``'s two operands, and whether the kernel multiplies them as
    bfloat16 pairs; bfloat16 operands the target cannot multiply are widened to float32."""
    names = [operand(em, node) for node in root.inputs]
    pairs = multiplies_pairs(em, root)
    if pairs:
        declare_helpers(em)
    elif root.inputs[0].dtype is bfloat16:
        names = [widened(em, f"wide{i}", names[i], node) for i, node in enumerate(root.inputs)]
    return names[0], names[1], pairs


def emit_conv(em: Emitter, computation: Graph, outputs: list[str], root: Node) -> None:
    x_node, w_node = root.inputs
    x, w, pairs = _operands(em, root)
    if interleaves(em, root):
        emit_interleaved_conv(em, computation, outputs, root, x, w)
        return
    n, h, wd, c = x_node.shape
    kh, kw, _, o = w_node.shape
    (pt, pb), (pl, pr) = root.attr("padding")
    t = c_type(root.dtype)
    source, rows, cols = x, h + pt + pb, wd + pl + pr
    if pt or pb or pl or pr:
        _padded_copy(em, "uint16_t" if pairs else t, "xpad", x, x_node.shape, rows, cols, pt, pl)
        source = "xpad"
    (sh, sw), (dh, dw), (_, oh, ow, _) = root.attr("strides"), root.attr("dilation"), root.shape
    geometry = (rows, cols, n, oh, ow, o, kh, kw, c, sh, sw, dh, dw)
    conv = _Conv(em, computation, outputs, root, t, source, w, *geometry, pairs=pairs)
    if not _winograd(conv, emit_winograd_conv):
        _direct_conv(conv, live_rows=(pt, pt + h) if pt or pb else None)


def emit_conv_grad_input(em: Emitter, computation: Graph, outputs: list[str], root: Node) -> None:
    """dx is a VALID, stride-1 convolution of the stride-dilated, padded cotangent with the
    spatially flipped, transposed filter."""
    g_node, w_node = root.inputs
    g, w, pairs = _operands(em, root)
    _, h, wd, c = root.shape
    kh, kw, _, o = w_node.shape
    sh, sw, pt, pl, dh, dw = _conv_geometry(root)
    t = c_type(root.dtype)
    source_t = "uint16_t" if pairs else t
    rows, cols = h + (kh - 1) * dh, wd + (kw - 1) * dw
    top, left = (kh - 1) * dh - pt, (kw - 1) * dw - pl
    narrow = c < 8 and o >= 8 and root.dtype.itemsize == 4 and not pairs
    n = root.shape[0]
    if (sh > 1 or sw > 1) and dh == dw == 1 and not pairs and not narrow:
        _phases_of_strided_grad_input(em, computation, outputs, root, g, w)
        return
    _padded_copy(em, source_t, "gpad", g, g_node.shape, rows, cols, top, left, sh, sw, channel_major=narrow)
    em.scratch_buffer(source_t, "wflip", kh * kw * c * o)
    em.scratch_buffer(source_t, "wflip_oi", kh * kw * c * o)
    open_loops(em, [("a", kh), ("b", kw), ("ci", c), ("co", o)])
    em.emit(f"const {source_t} v = {w}[((({kh - 1} - a) * {kw} + ({kw - 1} - b)) * {c} + ci) * {o} + co];")
    em.emit(f"wflip[((a * {kw} + b) * {o} + co) * {c} + ci] = v;")
    em.emit(f"wflip_oi[((a * {kw} + b) * {c} + ci) * {o} + co] = v;")
    close_loops(em, 4)
    # dx's output channels are the forward input's (c), its input channels the cotangent's (o).
    geometry = (rows, cols, n, h, wd, c, kh, kw, o, 1, 1, dh, dw)
    conv = _Conv(em, computation, outputs, root, t, "gpad", "wflip", *geometry, pairs=pairs)
    live_rows = (max(0, top), min(rows, top + (g_node.shape[1] - 1) * sh + 1))
    if sh == sw == 1 and _winograd(conv, emit_winograd_conv):
        return
    if narrow:
        _narrow_conv(conv, live_rows)
    else:
        _direct_conv(conv, w_hwoi="wflip_oi", live_rows=live_rows)


def _phases(size: int, taps: int, step: int, pad: int) -> list[tuple[int, int, int, int]]:
    """Along one axis of a strided input gradient: per phase f (the pixels f, f + step,
    ...), (f, its pixels, its taps, s) where the taps are first + step * k for k below
    ``taps`` (first = (f + pad) % step), and pixel u of the phase reads the cotangent at
    u + k' + s for its reversed taps k' = taps - 1 - k."""
    phases = []
    for f in range(min(step, size)):
        first = (f + pad) % step
        own = len(range(first, taps, step))
        phases.append((f, len(range(f, size, step)), own, (f + pad - first) // step - own + 1))
    return phases


def _phases_of_strided_grad_input(
    em: Emitter, computation: Graph, outputs: list[str], root: Node, g: str, w: str
) -> None:
    """The input gradient of a strided convolution as one stride-1 convolution per phase of
    its pixels (each pixel whose row is f modulo the stride, and column likewise, meets
    the same taps): of the cotangent, padded but not dilated, with those taps of the
    filter, reversed and transposed. The dilated cotangent's zeros (three quarters of the
    products at stride 2) are never multiplied. A phase that meets no tap (most of them,
    with a filter narrower than the stride: a 1x1 projection's) stores the epilogue of zero."""
    g_node, w_node = root.inputs
    n, h, wd, c = root.shape
    _, gh, gw, o = g_node.shape
    kh, kw = w_node.shape[:2]
    sh, sw, pt, pl, _, _ = _conv_geometry(root)
    t = c_type(root.dtype)
    row_phases = [p for p in _phases(h, kh, sh, pt) if p[1]]
    column_phases = [p for p in _phases(wd, kw, sw, pl) if p[1]]
    for fy, u, _, _ in row_phases:
        for fx, v, _, _ in column_phases:
            if not _taps_of(row_phases, fy) or not _taps_of(column_phases, fx):
                _store_epilogue_of_zero(em, computation, outputs, root, u, v, (sh, fy, sw, fx))
    row_phases = [p for p in row_phases if p[2]]
    column_phases = [p for p in column_phases if p[2]]
    if not row_phases or not column_phases:
        return
    top = max(0, *(-s for *_, s in row_phases))
    left = max(0, *(-s for *_, s in column_phases))
    rows = max(top + gh, *(u + k - 1 + s + top for _, u, k, s in row_phases))
    cols = max(left + gw, *(v + k - 1 + s + left for _, v, k, s in column_phases))
    cotangent = g  # padded where a phase's taps reach past it
    if (rows, cols, top, left) != (gh, gw, 0, 0):
        _padded_copy(em, t, "gsub", g, g_node.shape, rows, cols, top, left)
        cotangent = "gsub"
    em.keep_branches = True  # as _padded_copy has it: plain arrays of accumulators keep their branches
    for fy, u, taps_y, sy in row_phases:
        for fx, v, taps_x, sx in column_phases:
            filters = f"wsub{fy}_{fx}"
            em.scratch_buffer(t, filters, taps_y * taps_x * o * c)
            open_loops(em, [("k", taps_y), ("l", taps_x), ("co", o), ("ci", c)])
            a = f"{(fy + pt) % sh + sh * (taps_y - 1)} - {sh} * k"
            b = f"{(fx + pl) % sw + sw * (taps_x - 1)} - {sw} * l"
            source = f"{w}[((({a}) * {kw} + {b}) * {c} + ci) * {o} + co]"
            em.emit(f"{filters}[((k * {taps_x} + l) * {o} + co) * {c} + ci] = {source};")
            close_loops(em, 4)
            start = f"({cotangent} + {((sy + top) * cols + sx + left) * o})"
            geometry = (rows, cols, n, u, v, c, taps_y, taps_x, o, 1, 1, 1, 1)
            phase = _Conv(em, computation, outputs, root, t, start, filters, *geometry, placed=(sh, fy, sw, fx))
            _direct_conv(phase)


def _taps_of(phases: list[tuple[int, int, int, int]], first: int) -> int:
    return next(taps for f, _, taps, _ in phases if f == first)


def _store_epilogue_of_zero(
    em: Emitter, computation: Graph, outputs: list[str], root: Node, rows: int, cols: int, placed: tuple[int, ...]
) -> None:
    """Store the results at the ``rows`` x ``cols`` pixels of one phase (``placed``: row
    step, first row, column step, first column) where the gradient is zero."""
    n, c = root.shape[0], root.shape[3]
    row_step, first_row, column_step, first_column = placed
    open_parallel(em, parallel_pragma(n * rows * cols * c, n * rows), fenced=False)
    open_loops(em, [("bn", n), ("y", rows), ("x", cols), ("co", c)])
    em.emit(f"const int64_t py = y * {row_step} + {first_row}, px = x * {column_step} + {first_column};")
    store_results(
        em, computation, outputs, root, Index(root.shape, ("bn", "py", "px", "co")), f"({c_type(root.dtype)})0"
    )
    close_loops(em, 4)


def emit_conv_grad_filter(em: Emitter, computation: Graph, outputs: list[str], root: Node) -> None:
    """dw[a, b] = x_windows(a, b)^T @ g, by the kernel that suits the shapes."""
    x_node, g_node = root.inputs
    x, g, pairs = _operands(em, root)
    if interleaves(em, root):
        emit_interleaved_filter_grad(em, computation, outputs, root, x, g)
        return
    n, h, wd, c = x_node.shape
    _, oh, ow, o = g_node.shape
    kh, kw, _, _ = root.shape
    sh, sw, pt, pl, dh, dw = _conv_geometry(root)
    (_, pb), (_, pr) = root.attr("padding")
    t = c_type(root.dtype)
    source, rows, cols = x, h + pt + pb, wd + pl + pr
    if pt or pb or pl or pr:
        _padded_copy(em, "uint16_t" if pairs else t, "xpad", x, x_node.shape, rows, cols, pt, pl)
        source = "xpad"
    geometry = (rows, cols, n, oh, ow, o, kh, kw, c, sh, sw, dh, dw)
    p = _Conv(em, computation, outputs, root, t, source, g, *geometry, pairs=pairs)
    if pairs:
        _split_filter_grad(p)
    elif _winograd(p, emit_winograd_filter_grad, MIN_FILTER_GRAD_CHANNELS):
        return
    elif c == 1 and sw == 1 and kh * kw <= 25 and o < 8 and root.dtype.itemsize == 4:
        _row_filter_grad(p)
    elif o % em.target.lanes(root.dtype.itemsize) == 0 and o * root.dtype.itemsize <= 512 and dw == 1:
        _split_filter_grad(p)  # up to 128 float32 output channels: private copies stay small
    else:
        _blocked_filter_grad(p)


def _blocked_filter_grad(p: _Conv) -> None:
    """A block of input channels times all output channels accumulated in locals, one
    filter tap per thread."""
    em, t, n, oh, ow, o, kh, kw, c = p.em, p.t, p.n, p.oh, p.ow, p.o, p.kh, p.kw, p.c
    vectors = -(-o // em.target.lanes(p.root.dtype.itemsize))
    block = min(c, max(1, em.target.vector_registers // 2 // vectors))
    pragma = contraction_pragma(n * oh * ow * o * kh * kw * c, kh * kw)
    if pragma:
        em.emit(pragma.replace("parallel for", "parallel for collapse(2)"))
    open_loop(em, "a", kh)
    open_loop(em, "b", kw)

    def channels(width: int, start: str) -> None:
        em.emit("{")
        em.push()
        em.emit(f"const int64_t c0 = {start};")
        em.emit(f"{t} acc[{width}][{o}];")
        em.emit("memset(acc, 0, sizeof(acc));")
        open_loop(em, "bn", n)
        open_loop(em, "y", oh)
        em.emit(
            f"const {t}* xr = {p.x} + ((bn * {p.rows} + y * {p.sh} + a * {p.dh}) * {p.cols} + b * {p.dw}) * {c} + c0;"
        )
        em.emit(f"const {t}* gr = {p.other} + (bn * {oh} + y) * {ow * o};")
        open_loop(em, "xo", ow)
        em.emit("#pragma GCC unroll 32")
        open_loop(em, "ci", width)
        em.emit(f"const {t} xv = xr[xo * {p.sw * c} + ci];")
        em.emit(f"for (int64_t co = 0; co < {o}; co++) {accumulate(t, 'acc[ci][co]', 'xv', f'gr[xo * {o} + co]')}")
        close_loops(em, 4)
        open_loop(em, "ci", width)
        open_loop(em, "co", o)
        em.emit("const int64_t cc = c0 + ci;")
        p.store(("a", "b", "cc", "co"), "acc[ci][co]")
        close_loops(em, 2)
        em.pop()
        em.emit("}")

    each_tile(em, "cb", c, block, channels)
    close_loops(em, 2)


def _split_filter_grad(p: _Conv) -> None:
    """Filter gradient as one GEMM per filter row, dw[a] (taps x out channels) = sum over
    output pixels of x-window rows times cotangent rows, with the reduction split across
    threads: each thread sums its share of output rows into a private copy of the filter
    (so every pass over an output row finds its inputs in cache), and the copies are added
    at the end. A register tile holds several (column, channel) taps times vectors of
    output channels, which come straight from the cotangent row."""
    em, t, n, oh, ow, o, kh, kw, c = p.em, p.t, p.n, p.oh, p.ow, p.o, p.kh, p.kw, p.c
    lanes = em.target.lanes(p.root.dtype.itemsize)
    # Measured with 32 registers: 24 accumulators (a bigger share than a forward
    # convolution's: the tile is loaded and stored once per two output rows).
    size = kh * kw * c * o
    tile, chunk = register_tile(em, kw * c, o // lanes, n * oh * ow * size, share=3 / 4)
    pragma = contraction_pragma(n * oh * ow * size, n * oh)
    em.emit(f"const int64_t copies = {'braze_threads()' if pragma else '1'};")
    em.scratch_buffer(t, "part", size, per_thread=True)
    em.emit(f"memset(part, 0, sizeof({t}) * (size_t)copies * {size});")
    open_thread_block(em, pragma, t, [("part", size, "mine")])
    # Output rows in pairs: a register tile is loaded from and stored to the private copy
    # once per two rows. An odd last row pairs with itself, its second pass empty.
    rows = n * oh
    open_loop(em, "rp", (rows + 1) // 2)
    source_t = p.operand_type
    for r in range(2):
        em.emit(f"const int64_t rr{r} = rp * 2 + {r} < {rows} ? rp * 2 + {r} : rp * 2;")
        em.emit(f"const int64_t bn{r} = rr{r} / {oh}, y{r} = rr{r} % {oh};")
        em.emit(f"const {source_t}* gr{r} = {p.other} + rr{r} * {ow * o};")
        if p.pairs:
            pack_cotangent_row(em, f"gq{r}", f"gr{r}", ow, o)
    em.emit(f"const int64_t columns1 = rp * 2 + 1 < {rows} ? {ow} : 0;")
    # bfloat16: the output pixels in pairs, an odd last one alone (see bf16_conv.py)
    paired_length = (ow // 2 * 2 - 2) * p.sw * c + kw * c if ow > 1 else 0
    open_loop(em, "a", kh)
    for r in range(2):
        row = f"(bn{r} * {p.rows} + y{r} * {p.sh} + a * {p.dh}) * {p.cols * c}"
        em.emit(f"const {source_t}* xr{r} = {p.x} + {row};")
        if p.pairs:
            pair_input_row(em, f"xq{r}", f"xr{r}", paired_length, p.sw * c)
    em.emit(f"{t}* dst = mine + a * {kw * c * o};")

    def paired_pixels(width: int, count: int, r: int) -> None:
        """The register tile's products over row r's output pixels, two at a time."""
        weights = f"gq{r} + (xp * {o} + q0 * {lanes}) * 2"
        open_loop(em, "xp", ow // 2 if r == 0 else "columns1 / 2")
        paired_tile(em, width, count, weights, lambda j: f"xq{r}[xp * {2 * p.sw * c} + r0 + {j}]")
        close_loops(em, 1)
        if ow % 2:  # the last pixel alone: its pair's upper half (and the cotangent's) is zero
            em.emit(f"if ({'1' if r == 0 else 'columns1'}) {{ const int64_t xp = {ow // 2};")
            at = f"{(ow - 1) * p.sw * c} + r0"
            paired_tile(em, width, count, weights, lambda j: f"(uint32_t)xr{r}[{at} + {j}]")
            em.emit("}")

    def taps(width: int, start: str, count: int, first: str) -> None:
        em.emit("{")
        em.push()
        em.emit(f"const int64_t r0 = {start}, q0 = {first};")
        em.emit(f"braze_v{p.root.dtype.short} acc[{width}][{count}];")
        load_accumulators(em, width, f"dst + (r0 + j) * {o} + q0 * {lanes}")
        for r, columns in ((0, ow), (1, "columns1")):
            if p.pairs:
                paired_pixels(width, count, r)
                continue
            open_loop(em, "xo", columns)
            vector_tile(
                em,
                t,
                width,
                count,
                f"gr{r} + xo * {o} + q0 * {lanes}",
                lambda j, r=r: f"xr{r}[xo * {p.sw * c} + r0 + {j}]",
            )
            close_loops(em, 1)
        store_accumulators(em, width, f"dst + (r0 + j) * {o} + q0 * {lanes}")
        em.pop()
        em.emit("}")

    each_tile(
        em,
        "rb",
        kw * c,
        tile,
        lambda width, start: each_tile(
            em, "qb", o // lanes, chunk, lambda count, first: taps(width, start, count, first)
        ),
    )
    close_loops(em, 3)
    pragma = parallel_pragma(size, kh)
    if pragma:
        em.emit(pragma)
    open_loops(em, [("a", kh), ("b", kw), ("cc", c), ("co", o)])
    em.emit(f"const int64_t at = ((a * {kw} + b) * {c} + cc) * {o} + co;")
    em.emit(f"{t} total = 0;")
    em.emit(f"for (int64_t k = 0; k < copies; k++) total += part[k * {size} + at];")
    p.store(("a", "b", "cc", "co"), "total")
    close_loops(em, 4)


def _row_filter_grad(p: _Conv) -> None:
    """Filter gradient of a one-channel input with few output channels (LeNet's first
    layer): for each output channel, one vector accumulator per filter tap, streaming
    along image rows, so every multiply-add is a full vector and the accumulators never
    leave registers (the taps are taken in groups that fit the target's registers: all 25
    of a 5x5 filter with 32, three groups with 16). A row's last partial block is a full
    block ending at the row's end whose already-counted lanes get a zero cotangent."""
    em, t, n, oh, ow, o, kh, kw = p.em, p.t, p.n, p.oh, p.ow, p.o, p.kh, p.kw
    sh, dh, dw, cols = p.sh, p.dh, p.dw, p.cols
    taps = kh * kw
    lanes = em.target.lanes(4)
    groups = -(-taps // (em.target.vector_registers - 4))
    starts = list(range(0, ow - lanes + 1, lanes))
    if ow % lanes and ow >= lanes:
        starts.append(ow - lanes)
    em.emit(f"{t} total[{o}][{taps}];")
    pragma = contraction_pragma(n * oh * ow * taps * o, o)
    if pragma:
        em.emit(pragma)
    open_loop(em, "co", o)

    def group(width: int, first: str) -> None:
        em.emit("{")
        em.push()
        em.emit(f"const int64_t k0 = {first};")
        em.emit(f"braze_vf32 acc[{width}];")
        em.emit(f"{t} tail[{width}];")
        em.emit("memset(acc, 0, sizeof(acc));")
        em.emit("memset(tail, 0, sizeof(tail));")
        open_loop(em, "r", n * oh)
        em.emit(f"const int64_t bn = r / {oh}, y = r % {oh};")
        em.emit(f"const {t}* grow = {p.other} + r * {ow * o} + co;")
        em.emit(f"const {t}* xbase = {p.x} + (bn * {p.rows} + y * {sh}) * {cols};")
        tap = f"(k0 + k) / {kw} * {dh * cols} + (k0 + k) % {kw} * {dw}"
        for block_start in starts:
            fresh = lanes if block_start % lanes == 0 else ow - (starts[-2] + lanes if len(starts) > 1 else 0)
            em.emit("{")
            em.push()
            em.emit("braze_vf32 gv;")
            lane_value = f"lane >= {lanes - fresh} ? grow[({block_start} + lane) * {o}] : 0"
            em.emit(f"for (int lane = 0; lane < {lanes}; lane++) gv[lane] = {lane_value};")
            em.emit("#pragma GCC unroll 32")
            open_loop(em, "k", width)
            em.emit("braze_vf32 xv;")
            em.emit(f"memcpy(&xv, xbase + {tap} + {block_start}, sizeof(xv));")
            em.emit(accumulate("braze_vf32", "acc[k]", "xv", "gv"))
            close_loops(em, 1)
            em.pop()
            em.emit("}")
        if ow < lanes:
            open_loop(em, "xt", ow)
            open_loop(em, "k", width)
            em.emit(accumulate(t, "tail[k]", f"xbase[{tap} + xt]", f"grow[xt * {o}]"))
            close_loops(em, 2)
        close_loops(em, 1)
        open_loop(em, "k", width)
        em.emit(f"{t} s = tail[k];")
        em.emit(f"for (int lane = 0; lane < {lanes}; lane++) s += acc[k][lane];")
        em.emit("total[co][k0 + k] = s;")
        close_loops(em, 1)
        em.pop()
        em.emit("}")

    each_tile(em, "kg", taps, -(-taps // groups), group)
    close_loops(em, 1)
    open_loop(em, "a", kh)
    open_loop(em, "b", kw)
    open_loop(em, "co", o)
    em.emit("const int64_t zero = 0;")
    p.store(("a", "b", "zero", "co"), f"total[co][a * {kw} + b]")
    close_loops(em, 3)


CONTRACTION_EMITTERS = {
    dot_general: emit_dot,
    conv: emit_conv,
    conv_grad_input: emit_conv_grad_input,
    conv_grad_filter: emit_conv_grad_filter,
}
