"""3x3, stride-1 convolutions by Winograd's minimal filtering F(2x2, 3x3) (Lavin and Gray,
"Fast Algorithms for Convolutional Neural Networks", 2016).

Each 2x2 block of outputs (a tile) is computed from the 4x4 block of inputs under it:
``Y = A^T [(G g G^T) * (B^T d B)] A`` per input and output channel, where the 16 products
of the transformed input ``d`` and filter ``g`` summed over input channels are 16 matrix
products (tiles x input channels times input x output channels). That is 16
multiply-adds per tile and channel pair where the direct convolution does 36: 2.25x
fewer, for transforms that only add and halve. The points 0, 1 and -1 keep the rounding
near the direct sum's (F(4x4, 3x3), 4x fewer, rounds about 10x worse in float32 with its
best points: not taken, so a compiled convolution stays as close to eager as before).

A kernel transforms the filter once, then takes the tiles in blocks that fit the L2
cache: it transforms a block's inputs, multiplies (register tiles over the 16 products),
and transforms the block's outputs as it stores them, with the fused epilogue.

The filter gradient is the same identity read the other way: the loss's derivative by
``g`` is ``G^T [sum over tiles of (A dy A^T) * (B^T d B)] G`` (F(3x3, 2x2): a 2x2 tile of
the cotangent ``dy`` slides over the tile's 4x4 inputs), so its 16 products are matrix
products (input channels x tiles times tiles x output channels) that reduce over the
tiles, each thread into its own copy, added up and transformed once at the end.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING

from braze.backends.cpu.loops import (
    close_loops,
    contraction_pragma,
    open_loop,
    open_loops,
    open_thread_block,
    parallel_pragma,
)
from braze.backends.cpu.tiles import (
    accumulate,
    each_tile,
    load_accumulators,
    register_tile,
    store_accumulators,
    vector_tile,
    zero_accumulators,
)

if TYPE_CHECKING:
    from braze.backends.cpu.contractions import _Conv

TILE = 2  # outputs along each side of a tile
ALPHA = TILE + 2  # inputs along each side of a tile
_HALF = Fraction(1, 2)
B_T = ((1, 0, -1, 0), (0, 1, 1, 0), (0, -1, 1, 0), (0, 1, 0, -1))
G = ((1, 0, 0), (_HALF, _HALF, _HALF), (_HALF, -_HALF, _HALF), (0, 0, 1))
A_T = ((1, 1, 1, 0), (0, 1, -1, -1))
A = tuple(zip(*A_T, strict=True))
G_T = tuple(zip(*G, strict=True))
# The transforms cost per channel what the products cost per pair of channels. Measured on
# ResNet-20's step (Zen 4, AVX-512), against the direct kernels: with 64 channels in and out
# the convolutions took 0.6-0.75x their time, with 32 0.7-1.0x, with 16 1.04-1.24x (not
# taken below 32); the filter gradients, whose sums stay in cache, 0.55x, 0.65x and 0.85x.
MIN_CHANNELS = 32
MIN_FILTER_GRAD_CHANNELS = 16


def fits(p: _Conv, least_channels: int = MIN_CHANNELS) -> bool:
    """Whether the convolution is one this kernel computes: float32, a 3x3 filter, stride 1,
    undilated, whole tiles of output, output channels in whole vectors, and channels enough
    (``least_channels``) for the products to outweigh the transforms."""
    lanes = p.em.target.lanes(4)
    return (
        p.t == "float"
        and not p.pairs
        and (p.kh, p.kw, p.sh, p.sw, p.dh, p.dw) == (3, 3, 1, 1, 1, 1)
        and p.oh % TILE == 0
        and p.ow % TILE == 0
        and p.o % lanes == 0
        and min(p.c, p.o) >= least_channels
    )


def _combination(coefficients: tuple, terms: list[str]) -> str:
    """sum(coefficient * term) in C, without the zero terms and the multiplications by +-1."""
    parts = []
    for coefficient, term in zip(coefficients, terms, strict=True):
        if coefficient == 0:
            continue
        sign = "-" if coefficient < 0 else "+"
        magnitude = abs(Fraction(coefficient))
        parts.append(f"{sign} {term}" if magnitude == 1 else f"{sign} {float(magnitude)!r}f * {term}")
    text = " ".join(parts)
    return text[2:] if text.startswith("+ ") else text


def _transform(
    em, matrix: tuple, read: Callable[[int, int], str], write: Callable[[int, int, str], None], prefix: str
) -> None:
    """out[u][v] = sum over i, j of matrix[u][i] * in[i][j] * matrix[v][j], ``in`` read by
    ``read(i, j)``; ``write(u, v, value)`` emits what becomes of each ``out[u][v]``."""
    rows, columns = len(matrix), len(matrix[0])
    for u in range(rows):
        for j in range(columns):
            value = _combination(matrix[u], [read(i, j) for i in range(columns)])
            em.emit(f"const float {prefix}{u}_{j} = {value};")
    for u in range(rows):
        for v in range(rows):
            write(u, v, _combination(matrix[v], [f"{prefix}{u}_{j}" for j in range(columns)]))


def _if_converted(em) -> None:
    """Let GCC if-convert the kernel's loops (the epilogue's selects vectorize): they use
    named vectors and straight-line transforms, not the plain arrays _padded_copy guards,
    and the one branch, around the rare recomputation of a block, encloses loops."""
    em.keep_branches = False
    em.branches_enclose_loops = True


def _each_tile_of_block(p: _Conv, block: int) -> None:
    """Open the loop over the block ``blk``'s ``count`` tiles, naming each one's image
    ``bn`` and tile row and column ``ty``, ``tx``."""
    em, tiles_y, tiles_x = p.em, p.oh // TILE, p.ow // TILE
    open_loop(em, "tt", "count")
    em.emit(f"const int64_t tp = blk * {block} + tt;")
    em.emit(f"const int64_t bn = tp / {tiles_y * tiles_x}, ty = tp / {tiles_x} % {tiles_y}, tx = tp % {tiles_x};")


def _open_blocks(p: _Conv, block: int, pragma: str | None, slices: list[tuple[str, int, str]]) -> None:
    """The thread block (with its per-thread ``slices``) and the loop over blocks of
    ``block`` tiles, ``count`` of them in the current one; close with close_loops(em, 2)."""
    em, tiles = p.em, p.n * (p.oh // TILE) * (p.ow // TILE)
    open_thread_block(em, pragma, "float", slices)
    open_loop(em, "blk", -(-tiles // block))
    em.emit(f"const int64_t count = {tiles} - blk * {block} < {block} ? {tiles} - blk * {block} : {block};")


def _spaced(block: int, channels: int) -> int:
    """Elements from one product's slice of a block's transformed tiles to the next: a
    cache line more than the slice, so that the 16 slices a transform writes at once do not
    all fall in one set of the L1 cache (they would, a multiple of 4 KiB apart)."""
    return block * channels + 16


def _transform_tiles(p: _Conv, block: int, source: tuple[str, int, int, int], matrix: tuple, target: str) -> None:
    """The block's tiles of ``source`` (a buffer, its rows, columns and channels), each
    ``len(matrix[0])`` values on a side from (2 ty, 2 tx), transformed by ``matrix``:
    target[xi * _spaced(block, channels) + tt * channels + ch], xi the product's position."""
    em = p.em
    buffer, rows, cols, channels = source
    _each_tile_of_block(p, block)
    em.emit(f"const float* src = {buffer} + ((bn * {rows} + ty * {TILE}) * {cols} + tx * {TILE}) * {channels};")
    em.emit("#pragma omp simd")
    open_loop(em, "ch", channels)
    _transform(
        em,
        matrix,
        lambda i, j: f"src[{(i * cols + j) * channels} + ch]",
        lambda u, v, value: em.emit(
            f"{target}[{(u * ALPHA + v) * _spaced(block, channels)} + tt * {channels} + ch] = {value};"
        ),
        target,
    )
    close_loops(em, 2)


def _register_block(
    em,
    width: int,
    count: int,
    names: str,
    loop: tuple[str, int | str],
    row: str,
    operands: tuple[str, Callable],
    fresh: bool,
) -> None:
    """One register tile of the 16 products' loop over ``xi``: ``names`` declares its first
    row and vector (q0), ``loop`` is the reduction's (name, bound), ``row`` the C pointer
    to its accumulators' row j; ``operands``: the weights' pointer and the scalar of row j
    (vector_tile); ``fresh``: the accumulators start at zero, else from ``row``."""
    em.emit("{")
    em.push()
    em.emit(names)
    em.emit(f"braze_vf32 acc[{width}][{count}];")
    if fresh:
        zero_accumulators(em, "braze_vf32", width, count)
    else:
        load_accumulators(em, width, row)
    open_loop(em, *loop)
    vector_tile(em, "float", width, count, *operands)
    close_loops(em, 1)
    store_accumulators(em, width, row)
    em.pop()
    em.emit("}")


def _each_register_tile(
    em, name: str, total: int, tile: tuple[int, int], vectors: int, body: Callable[[int, str, int, str], None]
) -> None:
    """``body(width, first row, count, first vector)`` for each register tile of ``tile``
    (rows, vectors) over ``total`` rows (loop ``name``) times ``vectors`` vectors."""
    rows, chunk = tile
    each_tile(
        em,
        name,
        total,
        rows,
        lambda width, first: each_tile(em, "qb", vectors, chunk, lambda n, q: body(width, first, n, q)),
    )


def emit_winograd_conv(p: _Conv) -> None:
    """The VALID convolution of the padded ``p.x`` with the HWIO filter ``p.other``."""
    em, c, o = p.em, p.c, p.o
    lanes = em.target.lanes(4)
    _if_converted(em)
    tiles = p.n * (p.oh // TILE) * (p.ow // TILE)
    products = ALPHA * ALPHA
    work = tiles * products * c * o
    rows, chunk = register_tile(em, tiles, o // lanes, work)
    # A block's transformed inputs and products take an eighth of L2, beside the filter's.
    per_tile = products * (c + o) * 4
    block = rows * max(1, min(em.target.l2_bytes // 8 // (per_tile * rows), -(-tiles // (rows * 2 * em.target.cores))))
    # Temporaries: every call transforms the filter and each block's tiles before reading
    # them. The products of a last, partial block read rows of wv past its tiles (left by an
    # earlier block or another kernel) into rows of wm that no output reads.
    em.scratch_buffer("float", "wino_u", products * c * o, temporary=True)
    em.scratch_buffer("float", "wino_v", products * _spaced(block, c), per_thread=True, temporary=True)
    em.scratch_buffer("float", "wino_m", products * _spaced(block, o), per_thread=True, temporary=True)

    # The filter, transformed: wino_u[(xi * c + ci) * o + co].
    open_loop(em, "ci", c)
    em.emit("#pragma omp simd")
    open_loop(em, "co", o)
    _transform(
        em,
        G,
        lambda a, b: f"{p.other}[(({a * 3 + b}) * {c} + ci) * {o} + co]",
        lambda u, v, value: em.emit(f"wino_u[({u * ALPHA + v} * {c} + ci) * {o} + co] = {value};"),
        "g",
    )
    close_loops(em, 2)

    slices = [("wino_v", products * _spaced(block, c), "wv"), ("wino_m", products * _spaced(block, o), "wm")]
    _open_blocks(p, block, contraction_pragma(work, -(-tiles // block)), slices)
    _transform_tiles(p, block, (p.x, p.rows, p.cols, c), B_T, "wv")

    # The 16 products: wm[xi] (block x o) = wv[xi] (block x c) @ wino_u[xi] (c x o).
    open_loop(em, "xi", products)

    def register_block(width: int, first_row: str, count: int, first_vector: str) -> None:
        operands = (
            f"wino_u + (xi * {c} + ci) * {o} + q0 * {lanes}",
            lambda j: f"wv[xi * {_spaced(block, c)} + (t0 + {j}) * {c} + ci]",
        )
        names = f"const int64_t t0 = {first_row}, q0 = {first_vector};"
        row = f"wm + xi * {_spaced(block, o)} + (t0 + j) * {o} + q0 * {lanes}"
        _register_block(em, width, count, names, ("ci", c), row, operands, fresh=True)

    _each_register_tile(em, "rb", block, (rows, chunk), o // lanes, register_block)
    close_loops(em, 1)

    # The block's outputs, transformed and stored with the epilogue; ``wild`` counts those
    # that are not finite.
    em.emit("int64_t wild = 0;")
    _each_tile_of_block(p, block)
    em.emit("#pragma omp simd reduction(+:wild)")
    open_loop(em, "co", o)

    def place(u: int, v: int) -> str:
        return f"const int64_t oy = ty * {TILE} + {u}, ox = tx * {TILE} + {v};"

    store = _counting_store(p, place, ("bn", "oy", "ox", "co"))
    _transform(em, A_T, lambda i, j: f"wm[{(i * ALPHA + j) * _spaced(block, o)} + tt * {o} + co]", store, "m")
    close_loops(em, 2)
    _recompute_directly(p, block)
    close_loops(em, 2)  # the blocks, the thread block


def _counting_store(
    p: _Conv, place: Callable[[int, int], str], names: tuple[str, str, str, str]
) -> Callable[[int, int, str], None]:
    """_transform's ``write`` for a kernel's results: each value ``out[u][v]`` stored with
    the epilogue at ``names``, which ``place(u, v)`` declares in C, and counted in ``wild``
    when it is not finite."""

    def store(u: int, v: int, value: str) -> None:
        em = p.em
        em.emit("{")
        em.push()
        em.emit(place(u, v))
        em.emit(f"const float y = {value};")
        em.emit("wild += (y - y) != (y - y);")
        p.store(names, "y")
        em.pop()
        em.emit("}")

    return store


def _recompute_directly(p: _Conv, block: int) -> None:
    """A block with an infinity or a NaN among its outputs is computed again, output by
    output, as the direct sum: the transforms subtract inputs that the sum only adds, so an
    infinite input gives a NaN (inf - inf) where the direct sum and eager mode give the
    infinity; rare enough that a scalar loop does."""
    em, c, o = p.em, p.c, p.o
    em.emit("if (wild) {")
    em.push()
    _each_tile_of_block(p, block)
    em.emit(f"const float* src = {p.x} + ((bn * {p.rows} + ty * {TILE}) * {p.cols} + tx * {TILE}) * {c};")
    open_loop(em, "u", TILE)
    open_loop(em, "v", TILE)
    open_loop(em, "co", o)
    em.emit("float y = 0;")
    open_loop(em, "a", 3)
    open_loop(em, "b", 3)
    open_loop(em, "ci", c)
    tap = f"src[((u + a) * {p.cols} + v + b) * {c} + ci]"
    em.emit(accumulate("float", "y", tap, f"{p.other}[((a * 3 + b) * {c} + ci) * {o} + co]"))
    close_loops(em, 3)
    em.emit(f"const int64_t oy = ty * {TILE} + u, ox = tx * {TILE} + v;")
    p.store(("bn", "oy", "ox", "co"), "y")
    close_loops(em, 4)
    em.pop()
    em.emit("}")


def emit_winograd_filter_grad(p: _Conv) -> None:
    """The HWIO gradient of the filter of the VALID convolution of the padded ``p.x``, from
    its cotangent ``p.other`` (n, oh, ow, o)."""
    em, c, o = p.em, p.c, p.o
    lanes = em.target.lanes(4)
    _if_converted(em)
    tiles = p.n * (p.oh // TILE) * (p.ow // TILE)
    products = ALPHA * ALPHA
    size = products * c * o
    work = tiles * size
    # A register tile is loaded from and stored to the thread's sums once per block: three
    # quarters of the registers, as the direct filter gradient (contractions.py) takes.
    rows, chunk = register_tile(em, c, o // lanes, work, share=3 / 4)
    # A block's transformed inputs and cotangents take half of L2, beside the sums: one
    # product's share of them stays in L1 while its register tiles pass over it. Measured
    # on Zen 4 (1 MiB of L2): blocks of a half and of a quarter of L2 alike, an eighth 1.2x
    # slower, smaller ones up to 1.5x.
    block = max(1, min(em.target.l2_bytes // 2 // (products * (c + o) * 4), -(-tiles // em.target.cores)))
    pragma = contraction_pragma(work, -(-tiles // block))
    # Temporaries: each block's tiles are transformed before the sums over them (to
    # ``count``) read them, and the sums are zeroed below.
    em.scratch_buffer("float", "wino_v", products * _spaced(block, c), per_thread=True, temporary=True)
    em.scratch_buffer("float", "wino_p", products * _spaced(block, o), per_thread=True, temporary=True)
    em.scratch_buffer("float", "wino_s", size, per_thread=True, temporary=True)
    em.emit(f"const int64_t copies = {'braze_threads()' if pragma else '1'};")
    em.emit(f"memset(wino_s, 0, sizeof(float) * (size_t)copies * {size});")
    slices = [
        ("wino_v", products * _spaced(block, c), "wv"),
        ("wino_p", products * _spaced(block, o), "wp"),
        ("wino_s", size, "ws"),
    ]
    _open_blocks(p, block, pragma, slices)
    _transform_tiles(p, block, (p.x, p.rows, p.cols, c), B_T, "wv")

    # The block's 2x2 cotangent tiles, transformed: wp[xi * _spaced(block, o) + tt * o + co].
    _transform_tiles(p, block, (p.other, p.oh, p.ow, o), A, "wp")

    # The 16 products, summed over the block's tiles: ws[xi] (c x o) += wv[xi]^T @ wp[xi].
    open_loop(em, "xi", products)

    def register_block(width: int, first_row: str, count: int, first_vector: str) -> None:
        operands = (
            f"wp + xi * {_spaced(block, o)} + tt * {o} + q0 * {lanes}",
            lambda j: f"wv[xi * {_spaced(block, c)} + tt * {c} + c0 + {j}]",
        )
        names = f"const int64_t c0 = {first_row}, q0 = {first_vector};"
        row = f"ws + (xi * {c} + c0 + j) * {o} + q0 * {lanes}"
        _register_block(em, width, count, names, ("tt", "count"), row, operands, fresh=False)

    _each_register_tile(em, "cb", c, (rows, chunk), o // lanes, register_block)
    close_loops(em, 3)  # the products, the blocks, the thread block
    _store_filter_grad(p, size)


def _store_filter_grad(p: _Conv, size: int) -> None:
    """The threads' sums added up, transformed back to 3x3 taps and stored with the
    epilogue; an input channel with a tap that is not finite is computed again by the
    direct sum (see _recompute_directly)."""
    em, c, o = p.em, p.c, p.o
    final = parallel_pragma(size, c)
    if final:
        em.emit(final)
    open_loop(em, "cc", c)
    em.emit("int64_t wild = 0;")
    em.emit("#pragma omp simd reduction(+:wild)")
    open_loop(em, "co", o)
    for xi in range(ALPHA * ALPHA):
        em.emit(f"float s{xi} = 0;")
        em.emit(f"for (int64_t k = 0; k < copies; k++) s{xi} += wino_s[k * {size} + ({xi * c} + cc) * {o} + co];")

    store = _counting_store(p, lambda u, v: f"const int64_t a = {u}, b = {v};", ("a", "b", "cc", "co"))
    _transform(em, G_T, lambda i, j: f"s{i * ALPHA + j}", store, "m")
    close_loops(em, 1)
    em.emit("if (wild) {")
    em.push()
    open_loops(em, [("a", 3), ("b", 3), ("co", o)])
    em.emit("float y = 0;")
    open_loops(em, [("bn", p.n), ("oy", p.oh), ("ox", p.ow)])
    x = f"{p.x}[((bn * {p.rows} + oy + a) * {p.cols} + ox + b) * {c} + cc]"
    em.emit(accumulate("float", "y", x, f"{p.other}[((bn * {p.oh} + oy) * {p.ow} + ox) * {o} + co]"))
    close_loops(em, 3)
    p.store(("a", "b", "cc", "co"), "y")
    close_loops(em, 3)
    em.pop()
    em.emit("}")
    close_loops(em, 1)
