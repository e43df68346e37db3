"""Matrix products of bfloat16 operands accumulated in float32 (what ``autocast`` records).

With AVX512-BF16 (``target.bfloat16_dot``) the register tile multiplies with
``vdpbf16ps``: each instruction takes 16 pairs of bfloat16 from B (two consecutive k of
one column side by side) and one pair of A broadcast, adding both products into each
float32 lane, twice the multiply-adds of a float32 FMA. B (each batch's) is packed once
per call in that pair layout, its columns padded to whole vectors and an odd depth padded with a zero k
(the scratch buffer's padding stays zero between calls). Without the instruction the
operands are widened to float32 as they are read and packed, and multiplied as float32:
the same values (a product of two bfloat16 is exact in float32), half the bytes read.

``vdpbf16ps`` treats subnormal inputs and results as zero (DAZ, FTZ), a difference of at
most 2^-126 per product from a float32 product of the same values.
"""

from __future__ import annotations

from collections.abc import Callable

from braze.backends.cpu.elemental import Emitter
from braze.backends.cpu.gemm import MIN_GEMM_COLUMNS, Gemm, batch_offset, gemm_layout, result_index
from braze.backends.cpu.loops import close_loops, contraction_pragma, open_loop, parallel_pragma, store_results
from braze.backends.cpu.tiles import each_tile, operand, register_tile, vector_tile, zero_accumulators
from braze.ir.dtypes import bfloat16
from braze.ir.graph import Graph, Node
from braze.ir.prims.linalg import dot_general

LANES = 16  # float32 lanes of the 512-bit vectors vdpbf16ps works on

# Declared before the first kernel that uses it (a library without such a kernel does not
# pay for parsing <immintrin.h>).
_HELPER = """\
#ifndef BRAZE_DPBF16
#define BRAZE_DPBF16
#include <immintrin.h>
static inline braze_vf32 braze_dpbf16(braze_vf32 acc, uint32_t pair, __m512bh w) {
  return (braze_vf32)_mm512_dpbf16_ps((__m512)acc, (__m512bh)_mm512_set1_epi32((int)pair), w);
}
static inline uint32_t braze_pair(const uint16_t* p) {  /* p[0] the low half: the even k */
  uint32_t v;
  memcpy(&v, p, sizeof(v));
  return v;
}
#endif
"""


def declare_helpers(em: Emitter) -> None:
    """Declare vdpbf16ps's helpers before the kernel that ``em`` emits."""
    em.preamble.append(_HELPER)


def paired_tile(em: Emitter, rows: int, vectors: int, weights: str, pair: Callable[[int], str]) -> None:
    """acc[j][q] += the products of reduction pair ``pair(j)`` (two bfloat16 in a uint32,
    the even k low) with the q-th 16 columns' pairs from ``weights`` (uint16_t, pairs of k
    side by side per column), both products summed into each float32 lane."""
    update = "acc[{j}][{q}] = braze_dpbf16(acc[{j}][{q}], s, w{q});"
    vector_tile(em, "uint32_t", rows, vectors, weights, pair, ("__m512bh", 2 * LANES), update)


def reads_bfloat16(node: Node) -> bool:
    """Whether the CPU computes contraction ``node`` from bfloat16 operands: a matrix
    product the tiled GEMM kernel takes (at least 8 columns)."""
    if node.op is not dot_general:
        return False
    layout = gemm_layout(node)
    return layout is not None and layout.n >= MIN_GEMM_COLUMNS


def emit_bfloat16_dot(em: Emitter, computation: Graph, outputs: list[str], root: Node, g: Gemm) -> None:
    """C[b, m, n] = sum over k of A[b, m, k] B[b, k, n] on bfloat16 operands laid out as
    ``g`` with vdpbf16ps: each batch's B packed in pairs of k, the tasks a batch's register
    tile of rows each (the batches and row tiles of attention's 4-D products together)."""
    assert all(i.dtype is bfloat16 for i in root.inputs) and em.target.bfloat16_dot
    declare_helpers(em)
    a, b = operand(em, root.inputs[0]), operand(em, root.inputs[1])
    rows, n, depth, batches = g.m, g.n, g.k, g.batches
    width = -(-n // LANES) * LANES
    panel = -(-depth // 2) * width * 2
    em.scratch_buffer("uint16_t", "bpack", batches * panel)
    pragma = parallel_pragma(batches * depth * n, batches * depth)
    if pragma:
        em.emit(pragma)
    open_loop(em, "pb", batches * depth)
    em.emit(f"const int64_t bi = pb / {depth}, k = pb % {depth};")
    em.emit(f"const uint16_t* from = {b} + {batch_offset(g.batch, 'bi', 1)} + k * {g.b_k};")
    open_loop(em, "j", n)
    em.emit(f"bpack[bi * {panel} + ((k >> 1) * {width} + j) * 2 + (k & 1)] = from[j * {g.b_col}];")
    close_loops(em, 2)
    vectors = width // LANES
    # The float32 kernel's register tiles: an accumulator holds 16 columns here too.
    tile_rows, tile_vectors = register_tile(em, rows, vectors, rows * n * depth * batches)

    def pair(i: int, high: bool) -> str:
        low = f"(uint32_t)am[(m0 + {i}) * {g.a_row} + (2 * kp) * {g.a_k}]"
        if not high:
            return low
        return f"({low} | (uint32_t)am[(m0 + {i}) * {g.a_row} + (2 * kp + 1) * {g.a_k}] << 16)"

    def step(tile: int, chunk: int, high: bool) -> None:
        paired_tile(em, tile, chunk, f"bm + (kp * {width} + q0 * {LANES}) * 2", lambda i: pair(i, high))

    def row_tile(tile: int) -> None:
        """The tile of rows from m0 of batch bi."""
        em.emit(f"const uint16_t* am = {a} + {batch_offset(g.batch, 'bi', 0)};")
        em.emit(f"const uint16_t* bm = bpack + bi * {panel};")

        def column_chunk(chunk: int, first: str) -> None:
            em.emit("{")
            em.push()
            em.emit(f"const int64_t q0 = {first};")
            em.emit(f"braze_vf32 acc[{tile}][{chunk}];")
            zero_accumulators(em, "braze_vf32", tile, chunk)
            open_loop(em, "kp", depth // 2)
            step(tile, chunk, True)
            close_loops(em, 1)
            if depth % 2:  # the last k alone: its pair's upper half (and B's) is zero
                em.emit(f"{{ const int64_t kp = {depth // 2};")
                step(tile, chunk, False)
                em.emit("}")
            em.emit(
                f"const int64_t columns = {n} - q0 * {LANES} < {chunk * LANES} ? {n} - q0 * {LANES} : {chunk * LANES};"
            )
            open_loop(em, "i", tile)
            open_loop(em, "jj", "columns")
            em.emit(f"const int64_t m = m0 + i, col = q0 * {LANES} + jj;")
            value = f"((const float*)acc)[i * {chunk * LANES} + jj]"
            store_results(em, computation, outputs, root, result_index(root, g), value)
            close_loops(em, 2)
            em.pop()
            em.emit("}")

        each_tile(em, "qb", vectors, tile_vectors, column_chunk)

    full = rows // tile_rows
    work = rows * n * depth * batches
    if full:
        pragma = contraction_pragma(work, batches * full)
        if pragma:
            em.emit(pragma)
        open_loop(em, "task", batches * full)
        em.emit(f"const int64_t bi = task / {full}, m0 = task % {full} * {tile_rows};")
        row_tile(tile_rows)
        close_loops(em, 1)
    if rows % tile_rows:  # each batch's last rows
        pragma = contraction_pragma(work, batches)
        if pragma:
            em.emit(pragma)
        open_loop(em, "bi", batches)
        em.emit(f"const int64_t m0 = {full * tile_rows};")
        row_tile(rows % tile_rows)
        close_loops(em, 1)
