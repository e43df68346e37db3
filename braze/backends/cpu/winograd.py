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
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING

from braze.backends.cpu.loops import close_loops, contraction_pragma, open_loop, open_thread_block
from braze.backends.cpu.tiles import each_tile, register_tile, store_accumulators, vector_tile

if TYPE_CHECKING:
    from braze.backends.cpu.contractions import _Conv

TILE = 2  # outputs along each side of a tile
ALPHA = TILE + 2  # inputs along each side of a tile
_HALF = Fraction(1, 2)
B_T = ((1, 0, -1, 0), (0, 1, 1, 0), (0, -1, 1, 0), (0, 1, 0, -1))
G = ((1, 0, 0), (_HALF, _HALF, _HALF), (_HALF, -_HALF, _HALF), (0, 0, 1))
A_T = ((1, 1, 1, 0), (0, 1, -1, -1))
# The transforms cost per channel what the products cost per pair of channels. Measured on
# ResNet-20's step (Zen 4, AVX-512): with 64 channels in and out the convolutions took
# 0.60-0.67x the direct kernel's time, with 32 0.77-0.88x, with 16 1.09x: not taken below 32.
MIN_CHANNELS = 32


def fits(p: _Conv) -> bool:
    """Whether the convolution is one this kernel computes: float32, a 3x3 filter, stride 1,
    undilated, whole tiles of output, output channels in whole vectors, and channels enough
    for the products to outweigh the transforms."""
    lanes = p.em.target.lanes(4)
    return (
        p.t == "float"
        and not p.pairs
        and (p.kh, p.kw, p.sh, p.sw, p.dh, p.dw) == (3, 3, 1, 1, 1, 1)
        and p.oh % TILE == 0
        and p.ow % TILE == 0
        and p.o % lanes == 0
        and min(p.c, p.o) >= MIN_CHANNELS
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


def emit_winograd_conv(p: _Conv) -> None:
    """The VALID convolution of the padded ``p.x`` with the HWIO filter ``p.other``."""
    em, c, o = p.em, p.c, p.o
    lanes = em.target.lanes(4)
    em.keep_branches = False  # named vectors and straight-line transforms (see _padded_copy)
    tiles_y, tiles_x = p.oh // TILE, p.ow // TILE
    tiles = p.n * tiles_y * tiles_x
    products = ALPHA * ALPHA
    work = tiles * products * c * o
    rows, chunk = register_tile(em, tiles, o // lanes, work)
    # A block's transformed inputs and products take an eighth of L2, beside the filter's.
    per_tile = products * (c + o) * 4
    block = rows * max(1, min(em.target.l2_bytes // 8 // (per_tile * rows), -(-tiles // (rows * 2 * em.target.cores))))
    blocks = -(-tiles // block)
    em.scratch_buffer("float", "wino_u", products * c * o)
    em.scratch_buffer("float", "wino_v", products * block * c, per_thread=True)
    em.scratch_buffer("float", "wino_m", products * block * o, per_thread=True)

    # The filter, transformed: wino_u[(xi * c + ci) * o + co], xi the product's position.
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

    open_thread_block(
        em,
        contraction_pragma(work, blocks),
        "float",
        [("wino_v", products * block * c, "wv"), ("wino_m", products * block * o, "wm")],
    )
    open_loop(em, "blk", blocks)
    em.emit(f"const int64_t count = {tiles} - blk * {block} < {block} ? {tiles} - blk * {block} : {block};")

    def each_tile_of_block() -> None:
        open_loop(em, "tt", "count")
        em.emit(f"const int64_t tp = blk * {block} + tt;")
        em.emit(f"const int64_t bn = tp / {tiles_y * tiles_x}, ty = tp / {tiles_x} % {tiles_y}, tx = tp % {tiles_x};")

    # The block's inputs, transformed: wv[(xi * block + tt) * c + ci].
    each_tile_of_block()
    em.emit(f"const float* src = {p.x} + ((bn * {p.rows} + ty * {TILE}) * {p.cols} + tx * {TILE}) * {c};")
    em.emit("#pragma omp simd")
    open_loop(em, "ci", c)
    _transform(
        em,
        B_T,
        lambda i, j: f"src[{(i * p.cols + j) * c} + ci]",
        lambda u, v, value: em.emit(f"wv[({u * ALPHA + v} * {block} + tt) * {c} + ci] = {value};"),
        "d",
    )
    close_loops(em, 2)

    # The 16 products: wm[xi] (block x o) = wv[xi] (block x c) @ wino_u[xi] (c x o).
    open_loop(em, "xi", products)

    def register_block(width: int, first_row: str, count: int, first_vector: str) -> None:
        em.emit("{")
        em.push()
        em.emit(f"const int64_t t0 = {first_row}, q0 = {first_vector};")
        em.emit(f"braze_vf32 acc[{width}][{count}];")
        em.emit("memset(acc, 0, sizeof(acc));")
        open_loop(em, "ci", c)
        vector_tile(
            em,
            "float",
            width,
            count,
            f"wino_u + (xi * {c} + ci) * {o} + q0 * {lanes}",
            lambda j: f"wv[(xi * {block} + t0 + {j}) * {c} + ci]",
        )
        close_loops(em, 1)
        store_accumulators(em, width, f"wm + (xi * {block} + t0 + j) * {o} + q0 * {lanes}")
        em.pop()
        em.emit("}")

    each_tile(
        em,
        "rb",
        block,
        rows,
        lambda width, first: each_tile(em, "qb", o // lanes, chunk, lambda n, q: register_block(width, first, n, q)),
    )
    close_loops(em, 1)

    # The block's outputs, transformed and stored with the epilogue; ``wild`` counts those
    # that are not finite.
    em.emit("int64_t wild = 0;")
    each_tile_of_block()
    em.emit("#pragma omp simd reduction(+:wild)")
    open_loop(em, "co", o)

    def store(u: int, v: int, value: str) -> None:
        em.emit("{")
        em.push()
        em.emit(f"const int64_t oy = ty * {TILE} + {u}, ox = tx * {TILE} + {v};")
        em.emit(f"const float y = {value};")
        em.emit("wild += (y - y) != (y - y);")
        p.store(("bn", "oy", "ox", "co"), "y")
        em.pop()
        em.emit("}")

    _transform(em, A_T, lambda i, j: f"wm[({i * ALPHA + j} * {block} + tt) * {o} + co]", store, "m")
    close_loops(em, 2)
    _recompute_directly(p, each_tile_of_block)
    close_loops(em, 2)  # the blocks, the thread block


def _recompute_directly(p: _Conv, each_tile_of_block: Callable[[], None]) -> None:
    """A block with an infinity or a NaN among its outputs is computed again, output by
    output, as the direct sum: the transforms subtract inputs that the sum only adds, so an
    infinite input gives a NaN (inf - inf) where the direct sum and eager mode give the
    infinity; rare enough that a scalar loop does."""
    em, c, o = p.em, p.c, p.o
    em.emit("if (wild) {")
    em.push()
    each_tile_of_block()
    em.emit(f"const float* src = {p.x} + ((bn * {p.rows} + ty * {TILE}) * {p.cols} + tx * {TILE}) * {c};")
    open_loop(em, "u", TILE)
    open_loop(em, "v", TILE)
    open_loop(em, "co", o)
    em.emit("float y = 0;")
    open_loop(em, "a", 3)
    open_loop(em, "b", 3)
    open_loop(em, "ci", c)
    em.emit(f"y += src[((u + a) * {p.cols} + v + b) * {c} + ci] * {p.other}[((a * 3 + b) * {c} + ci) * {o} + co];")
    close_loops(em, 3)
    em.emit(f"const int64_t oy = ty * {TILE} + u, ox = tx * {TILE} + v;")
    p.store(("bn", "oy", "ox", "co"), "y")
    close_loops(em, 4)
    em.pop()
    em.emit("}")
