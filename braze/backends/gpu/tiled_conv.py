"""Convolutions and their gradients as implicit matrix products, through the tiles of
tiled.py (with their fused epilogue: bias, activation).

With NHWC images and HWIO filters, each of the three is a product whose output is
row-major in its own array:

- conv: out[(n, oh, ow), o] = x-patches[(n, oh, ow), (kh, kw, c)] @ w[(kh, kw, c), o]
- conv_grad_filter: dw[(kh, kw, c), o] = x-patches[(kh, kw, c), (n, oh, ow)] @ g[(n, oh, ow), o]
- conv_grad_input: dx[(n, ih, iw), c] = g-taps[(n, ih, iw), (kh, kw, o)] @ w[(kh, kw, o), c]

The patches are never built: a tile's element is read from x (or g) at its tap. A conv
tap in the padding loads a zero that is still multiplied, as the reference's padded input
is (0 * inf is NaN there too); a conv_grad_input tap that no forward output reaches adds
nothing, as the reference, which scatters g @ w, never forms that product.
"""

from __future__ import annotations

import math

from braze.backends.cstyle import Index
from braze.backends.gpu.elemental import GpuEmitter
from braze.backends.gpu.tiled import TiledProduct
from braze.ir.graph import Node
from braze.ir.prims.conv import conv, conv_grad_filter, conv_grad_input


def conv_matrices(node: Node) -> tuple[int, int, int]:
    """(m, n, k) of ``node``'s product."""
    b = node.inputs[1]  # w (kh, kw, c, o) of conv and dx, g (n, oh, ow, o) of dw
    k = (*b.shape[:2], b.shape[3]) if node.op is conv_grad_input else b.shape[:3]
    return math.prod(node.shape[:3]), node.shape[3], math.prod(k)


def is_tiled_conv(node: Node) -> bool:
    """A convolution whose product has a matrix of outputs (as for dot_general, a column or
    a row of them reuses no operand element across a tile)."""
    if node.op not in (conv, conv_grad_filter, conv_grad_input):
        return False
    m, n, _ = conv_matrices(node)
    return m > 1 and n > 1


class TiledConv(TiledProduct):
    """conv, conv_grad_filter or conv_grad_input: operand elements at their taps."""

    @property
    def skips_outside(self) -> bool:  # type: ignore[override]
        return self.node.op is conv_grad_input

    @property
    def taps(self) -> tuple[int, int, int, int, int, int]:
        """(sh, sw, dh, dw, top padding, left padding)."""
        (sh, sw), (dh, dw), ((pt, _), (pl, _)) = (self.node.attr(a) for a in ("strides", "dilation", "padding"))
        return sh, sw, dh, dw, pt, pl

    def shape(self) -> tuple[int, int, int, int]:
        return (1, *conv_matrices(self.node))

    def operand(self, emitter: GpuEmitter, side: int, batch: str, free: str, k: str) -> tuple[Index, list[str]]:
        a, b = self.node.inputs
        op = self.node.op
        sh, sw, dh, dw, pt, pl = self.taps
        if side == 1:  # w or g, whose last dimension is the product's columns but for dx
            if op is not conv_grad_input:
                return Index(b.shape, None, f"({k}) * {b.shape[3]} + {free}"), []
            kh, kw, o = emitter.dims(Index((*b.shape[:2], b.shape[3]), None, k))
            return Index(b.shape, (kh, kw, free, o)), []
        if op is conv_grad_input:  # dx at (n, ih, iw) from g at ((ih + p - kh*d) / s, ...)
            n, ih, iw = emitter.dims(Index(self.node.shape[:3], None, free))
            kh, kw, o = emitter.dims(Index((*b.shape[:2], b.shape[3]), None, k))
            th = emitter.let("int64_t", f"{ih} + {pt} - {kh} * {dh}", "th")
            tw = emitter.let("int64_t", f"{iw} + {pl} - {kw} * {dw}", "tw")
            oh, ow = f"({th} / {sh})", f"({tw} / {sw})"
            inside = [f"{th} >= 0", f"{tw} >= 0", f"{th} % {sh} == 0", f"{tw} % {sw} == 0"]
            inside += [f"{oh} < {a.shape[1]}", f"{ow} < {a.shape[2]}"]
            return Index(a.shape, (n, oh, ow, o)), inside
        pixels, taps = (free, k) if op is conv else (k, free)
        g_shape = self.node.shape if op is conv else b.shape  # (n, oh, ow, ...)
        n, oh, ow = emitter.dims(Index(g_shape[:3], None, pixels))
        w_shape = b.shape if op is conv else self.node.shape  # (kh, kw, c, ...)
        kh, kw, c = emitter.dims(Index(w_shape[:3], None, taps))
        ih = emitter.let("int64_t", f"{oh} * {sh} + {kh} * {dh} - {pt}", "ih")
        iw = emitter.let("int64_t", f"{ow} * {sw} + {kw} * {dw} - {pl}", "iw")
        inside = [f"{ih} >= 0", f"{ih} < {a.shape[1]}", f"{iw} >= 0", f"{iw} < {a.shape[2]}"]
        return Index(a.shape, (n, ih, iw, c)), inside
