"""A convolution with few input and few output channels (a first layer over grey or RGB
images), vectorized over a whole output row at once.

An NHWC output row with ``o`` channels is ``ow * o`` contiguous values, pixel by pixel. With
``o`` below a vector's lanes, vectors over output channels waste most lanes, and vectors
over output columns leave a transposed tile to scatter at every store (the store, not the
multiply-adds, was most of LeNet's first convolution). Here a vector covers ``lanes``
consecutive values of the row itself. Value ``q`` of an output row is channel ``q % o`` of
pixel ``q // o``; its filter tap (a, b, ci) multiplies input pixel ``q // o + b`` of row
``y + a``. So each image is first expanded, every input value written ``o`` times in a
row (``xe[col * o + co] = x[col, ci]``), after which the input of tap (a, b) for the whole
output row is the expanded row shifted by ``b * o``: a contiguous load. The filter values of
a vector repeat with period P = lcm(lanes, o), so a table holds, per tap, P values
``w[a, b, ci, p % o]``, and a row is computed in chunks of P values (whole vectors). The
results are stored contiguously, with the fused epilogue unrolled over a chunk so that its
per-channel operands (a bias) become constant positions.

The filter gradient of such a layer reads the same expanded rows: dw[a, b, ci, co] sums
``xe[y + a][q + b * o] * g[y][q]`` over the values q of channel co of every cotangent row, so
each tap keeps P/lanes vector accumulators (lane l of vector v belongs to channel
``(v * lanes + l) % o``), folded into channels at the end.
"""

from __future__ import annotations

import math

from braze.backends.cpu.elemental import Emitter
from braze.backends.cpu.loops import (
    close_loops,
    contraction_pragma,
    open_loop,
    open_loops,
    open_thread_block,
    store_results,
)
from braze.backends.cpu.tiles import accumulate
from braze.backends.cstyle import Index, c_type
from braze.ir.graph import Graph, Node

MAX_INPUT_CHANNELS = 4  # each input channel is expanded o times: worth it for a first layer only


def interleaves(em: Emitter, root: Node) -> bool:
    """Whether ``root`` (a conv or its filter gradient) is one these kernels compute: few
    channels in, fewer output channels than lanes, unit column stride and dilation."""
    o, c = root.shape[3], root.inputs[0].shape[3]
    lanes = em.target.lanes(root.dtype.itemsize)
    (_, sw), (_, dw) = root.attr("strides"), root.attr("dilation")
    return root.dtype.is_float and o < lanes and c <= MAX_INPUT_CHANNELS and sw == 1 and dw == 1


def emit_interleaved_conv(em: Emitter, computation: Graph, outputs: list[str], root: Node, x: str, w: str) -> None:
    x_node, w_node = root.inputs
    n, h, wd, c = x_node.shape
    kh, kw, _, o = w_node.shape
    (pt, pb), (pl, pr) = root.attr("padding")
    (sh, _), (dh, _) = root.attr("strides"), root.attr("dilation")
    _, oh, ow, _ = root.shape
    t = c_type(root.dtype)
    lanes = em.target.lanes(root.dtype.itemsize)
    period = math.lcm(lanes, o)
    rows, cols = h + pt + pb, wd + pl + pr
    stride = cols * o + lanes  # a vector of slack: the last chunk's unused lanes read past the row
    em.scratch_buffer(t, "wpat", kh * kw * c * period)
    open_loops(em, [("p", kh * kw * c), ("q", period)])
    em.emit(f"wpat[p * {period} + q] = {w}[p * {o} + q % {o}];")
    close_loops(em, 2)
    pragma = contraction_pragma(root.aval.size * kh * kw * c, n)
    em.scratch_buffer(t, "xe", rows * c * stride, per_thread=True)
    open_thread_block(em, pragma, t, [("xe", rows * c * stride, "xt")])
    open_loop(em, "bn", n)
    _expand(em, root, x, stride)
    open_loop(em, "y", oh)
    total = ow * o
    full = total - total % period
    geometry = (kh, kw, c, o, sh, dh, stride)
    if full:
        open_loop(em, "q0", full, step=period)
        _chunk(em, computation, outputs, root, (lanes, period, period), geometry)
        close_loops(em, 1)
    if total % period:
        em.emit(f"{{ const int64_t q0 = {full};")
        em.push()
        _chunk(em, computation, outputs, root, (lanes, period, total % period), geometry)
        em.pop()
        em.emit("}")
    close_loops(em, 3)


def _expand(em: Emitter, root: Node, x: str, stride: int) -> None:
    """Image bn of ``x`` into the thread's ``xt``, each value written o times. Padding stays
    zero: every image writes the same positions of the thread's buffer."""
    n, h, wd, c = root.inputs[0].shape
    o = root.shape[3]
    (pt, _), (pl, _) = root.attr("padding")
    t = c_type(root.dtype)
    open_loops(em, [("r", h), ("col", wd), ("ci", c)])
    em.emit(f"const {t} v = {x}[((bn * {h} + r) * {wd} + col) * {c} + ci];")
    em.emit(f"{t}* to = xt + ((r + {pt}) * {c} + ci) * {stride} + (col + {pl}) * {o};")
    em.emit(f"for (int64_t co = 0; co < {o}; co++) to[co] = v;")
    close_loops(em, 3)


def emit_interleaved_filter_grad(
    em: Emitter, computation: Graph, outputs: list[str], root: Node, x: str, g: str
) -> None:
    x_node, g_node = root.inputs
    n, h, wd, c = x_node.shape
    _, oh, ow, o = g_node.shape
    kh, kw, _, _ = root.shape
    (pt, pb), (pl, pr) = root.attr("padding")
    (sh, _), (dh, _) = root.attr("strides"), root.attr("dilation")
    t, vector = c_type(root.dtype), f"braze_v{root.dtype.short}"
    lanes = em.target.lanes(root.dtype.itemsize)
    period = math.lcm(lanes, o)
    vectors = period // lanes
    rows, cols = h + pt + pb, wd + pl + pr
    stride = cols * o + lanes
    size = kh * kw * c * period
    pragma = contraction_pragma(n * oh * ow * kh * kw * c * o, n)
    em.emit(f"const int64_t copies = {'braze_threads()' if pragma else '1'};")
    em.scratch_buffer(t, "part", size, per_thread=True)
    em.emit(f"memset(part, 0, sizeof({t}) * (size_t)copies * {size});")
    em.scratch_buffer(t, "xe", rows * c * stride, per_thread=True)
    open_thread_block(em, pragma, t, [("xe", rows * c * stride, "xt"), ("part", size, "mine")])
    open_loop(em, "bn", n)
    _expand(em, root, x, stride)
    open_loops(em, [("a", kh), ("ci", c)])
    em.emit(f"{t}* tap = mine + (a * {kw * c} + ci) * {period};")  # tap (a, b, ci) at tap + b * c * period
    accumulators = [(b, v) for b in range(kw) for v in range(vectors)]
    for b, v in accumulators:
        em.emit(f"{vector} acc{b}_{v}; memcpy(&acc{b}_{v}, tap + {b * c * period + v * lanes}, sizeof(acc{b}_{v}));")
    open_loop(em, "y", oh)
    em.emit(f"const {t}* gr = {g} + (bn * {oh} + y) * {ow * o};")
    em.emit(f"const {t}* xr = xt + ((y * {sh} + a * {dh}) * {c} + ci) * {stride};")
    total = ow * o
    full = total - total % period
    if full:
        open_loop(em, "q0", full, step=period)
        for v in range(vectors):
            _filter_taps(em, vector, lanes, kw, o, v, f"q0 + {v * lanes}", lanes)
        close_loops(em, 1)
    for k in range(-(-(total - full) // lanes)):
        start = full + k * lanes
        _filter_taps(em, vector, lanes, kw, o, k % vectors, str(start), min(lanes, total - start))
    close_loops(em, 1)
    for b, v in accumulators:
        em.emit(f"memcpy(tap + {b * c * period + v * lanes}, &acc{b}_{v}, sizeof(acc{b}_{v}));")
    close_loops(em, 4)
    # Fold: lane p of a tap's period is channel p % o; then add the threads' copies.
    open_loops(em, [("a", kh), ("b", kw), ("ci", c), ("co", o)])
    em.emit(f"{t} total = 0;")
    open_loops(em, [("k", "copies"), ("p", period // o)])
    em.emit(f"total += part[k * {size} + ((a * {kw} + b) * {c} + ci) * {period} + p * {o} + co];")
    close_loops(em, 2)
    store_results(em, computation, outputs, root, Index(root.shape, ("a", "b", "ci", "co")), "total")
    close_loops(em, 4)


def _filter_taps(em: Emitter, vector: str, lanes: int, kw: int, o: int, v: int, at: str, count: int) -> None:
    """acc{b}_{v} += (expanded input at ``at`` + b * o) * (cotangent at ``at``) for every
    column tap b; the cotangent vector holds ``count`` values (a row's last, partial vector
    is zero past the row, so the garbage the expanded row has there adds nothing)."""
    em.emit(f"{{ {vector} gv = {{0}}; memcpy(&gv, gr + {at}, {count} * sizeof(gv[0]));")
    for b in range(kw):
        update = accumulate(vector, f"acc{b}_{v}", "xv", "gv")
        em.emit(f"  {{ {vector} xv; memcpy(&xv, xr + {at} + {b * o}, sizeof(xv)); {update} }}")
    em.emit("}")


def _chunk(
    em: Emitter,
    computation: Graph,
    outputs: list[str],
    root: Node,
    widths: tuple[int, int, int],
    geometry: tuple[int, ...],
) -> None:
    """``width`` values of output row y from q0: vectors of accumulators over the taps, then
    the stores, unrolled so that each value's channel is a constant."""
    lanes, period, width = widths
    kh, kw, c, o, sh, dh, stride = geometry
    t, vector = c_type(root.dtype), f"braze_v{root.dtype.short}"
    vectors = -(-width // lanes)
    for k in range(vectors):
        em.emit(f"{vector} acc{k} = {{0}};")
    open_loops(em, [("a", kh), ("b", kw), ("ci", c)])
    em.emit(f"const {t}* xr = xt + ((y * {sh} + a * {dh}) * {c} + ci) * {stride} + q0 + b * {o};")
    em.emit(f"const {t}* wr = wpat + ((a * {kw} + b) * {c} + ci) * {period};")
    for k in range(vectors):
        em.emit(f"{{ {vector} xv, wv; memcpy(&xv, xr + {k * lanes}, sizeof(xv)); ")
        em.emit(f"  memcpy(&wv, wr + {k * lanes}, sizeof(wv)); {accumulate(vector, f'acc{k}', 'xv', 'wv')} }}")
    close_loops(em, 3)
    em.emit(f"{t} staged[{vectors * lanes}];")
    for k in range(vectors):
        em.emit(f"memcpy(staged + {k * lanes}, &acc{k}, sizeof(acc{k}));")
    _, oh, ow, _ = root.shape
    em.emit(f"const int64_t row = (bn * {oh} + y) * {ow * o} + q0;")
    for q in range(width):
        index = Index(root.shape, ("bn", "y", f"(q0 / {o} + {q // o})", str(q % o)), f"row + {q}")
        store_results(em, computation, outputs, root, index, f"staged[{q}]")
