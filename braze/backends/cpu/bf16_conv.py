"""Convolutions of bfloat16 operands accumulated in float32 (what ``autocast`` records), in
the float32 kernels' structure (contractions.py) with ``vdpbf16ps`` as the multiply-add.

``vdpbf16ps`` multiplies pairs of bfloat16 along the reduction axis, so each kernel lays
one operand out in pairs of consecutive reduction indices side by side per output column
(``bf16_dot.paired_tile``) and broadcasts pairs of the other:

- a forward convolution (and the input gradient, a convolution too) reduces over a filter
  row's (column, channel) taps, contiguous in both the input row and the HWIO filter: the
  filter is packed in pairs of taps, an odd count padded with a zero tap, and the input's
  pairs are two adjacent bfloat16 read as one 32-bit value;
- the filter gradient reduces over output pixels: each cotangent row is packed in pairs of
  adjacent pixels, and each input row as the pairs (pixel x, pixel x + stride) of every
  tap, so the broadcast of a pair is one load.

A target without AVX512-BF16 reads the bfloat16 operands widened to float32 into scratch
buffers and runs the float32 kernels: the same values (a bfloat16 product is exact in
float32), not faster.
"""

from __future__ import annotations

from braze.backends.cpu.elemental import Emitter
from braze.backends.cpu.loops import close_loops, open_loop, open_loops, parallel_pragma
from braze.ir.dtypes import bfloat16, float32
from braze.ir.graph import Node
from braze.ir.prims.conv import conv, conv_grad_filter, conv_grad_input

LANES = 16  # float32 lanes of the 512-bit vectors vdpbf16ps works on
MAX_FILTER_GRAD_CHANNELS = 128  # the float32 filter gradient's private copies stay small up to 512 bytes a tap


def conv_reads_bfloat16(node: Node) -> bool:
    """Whether the CPU computes convolution ``node`` (of float32 result) from bfloat16
    operands: the kernels with whole vectors of output channels and undilated columns, the
    ones of the CNNs' layers past the first (a first layer's few channels, and an input
    gradient with fewer than 8 channels, keep their float32 kernels)."""
    if node.op not in (conv, conv_grad_input, conv_grad_filter) or node.dtype is not float32:
        return False
    (_, dw) = node.attr("dilation")
    if node.op is conv_grad_filter:
        channels = node.shape[3]
        return dw == 1 and channels % LANES == 0 and channels <= MAX_FILTER_GRAD_CHANNELS
    return dw == 1 and node.shape[3] % LANES == 0


def multiplies_pairs(em: Emitter, root: Node) -> bool:
    """Whether ``root``'s kernel multiplies its bfloat16 operands with vdpbf16ps (else
    they are widened to float32 first)."""
    return root.inputs[0].dtype is bfloat16 and em.target.bfloat16_dot


def widened(em: Emitter, name: str, source: str, node: Node) -> str:
    """``node``'s bfloat16 values (in buffer ``source``) widened to float32 in scratch
    buffer ``name``."""
    size = node.aval.size
    em.scratch_buffer("float", name, size)
    pragma = parallel_pragma(size, size)
    if pragma:
        em.emit(pragma)
    em.emit(f"for (int64_t i = 0; i < {size}; i++) {name}[i] = braze_from_bf16({source}[i]);")
    return name


def pack_filter_pairs(em: Emitter, w: str, taps: int, depth: int, o: int) -> str:
    """A filter of ``taps`` rows of ``depth`` x ``o`` (HWIO, a row's (column, channel)
    taps flattened) in scratch ``wpack``: per row, pairs of depth side by side for each
    output channel, an odd depth's last pair padded with zero."""
    pairs = -(-depth // 2)
    em.scratch_buffer("uint16_t", "wpack", taps * pairs * o * 2)
    open_loops(em, [("a", taps), ("kp", pairs), ("co", o)])
    em.emit("for (int64_t h = 0; h < 2; h++) {")
    em.emit("  const int64_t k = 2 * kp + h;")
    em.emit(f"  wpack[((a * {pairs} + kp) * {o} + co) * 2 + h] = k < {depth} ? {w}[(a * {depth} + k) * {o} + co] : 0;")
    em.emit("}")
    close_loops(em, 3)
    return "wpack"


def pack_cotangent_row(em: Emitter, name: str, row: str, ow: int, o: int) -> None:
    """Local ``name``: cotangent ``row`` (ow pixels x o channels) as pairs of adjacent
    pixels side by side per channel, an odd last pixel paired with zero."""
    pairs = -(-ow // 2)
    em.emit(f"uint16_t {name}[{pairs * o * 2}] __attribute__((aligned(64)));")
    open_loops(em, [("xp", pairs), ("co", o)])
    em.emit(f"{name}[(xp * {o} + co) * 2] = {row}[2 * xp * {o} + co];")
    em.emit(f"{name}[(xp * {o} + co) * 2 + 1] = 2 * xp + 1 < {ow} ? {row}[(2 * xp + 1) * {o} + co] : 0;")
    close_loops(em, 2)


def pair_input_row(em: Emitter, name: str, row: str, length: int, step: int) -> None:
    """Local ``name``: element i of input ``row`` with the one ``step`` further (the same
    tap of the next output pixel) as one 32-bit pair, for the first ``length`` elements."""
    em.emit(f"uint32_t {name}[{max(length, 1)}] __attribute__((aligned(64)));")
    open_loop(em, "i", length)
    em.emit(f"{name}[i] = (uint32_t){row}[i] | (uint32_t){row}[i + {step}] << 16;")
    close_loops(em, 1)
