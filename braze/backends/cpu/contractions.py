"""Direct C kernels for dot_general, conv and the conv transposes, each with its fused
epilogue (bias, activation, scaling) applied as results are stored.

Every shape is a compile-time constant. Accumulators live in small local arrays whose
innermost axis is the contiguous one of the operand streamed in the inner loop, so the
compiler vectorizes it (AVX-512 on this machine) without any runtime dispatch.
"""

from __future__ import annotations

import math

from braze.backends.cpu.elemental import Emitter, Index, c_type
from braze.backends.cpu.loops import parallel_pragma
from braze.ir.graph import Graph, Node

CONV_TILE = 8  # output columns accumulated together by the direct convolution


def strides(shape: tuple[int, ...]) -> list[int]:
    result, step = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        result[d] = step
        step *= shape[d]
    return result


def _offset(names: list[str], steps: list[int]) -> str:
    terms = [n if s == 1 else f"{n} * {s}" for n, s in zip(names, steps, strict=True) if s]
    return " + ".join(terms) if terms else "0"


def _store(em: Emitter, computation: Graph, outputs: list[str], root: Node, index: Index, acc: str) -> None:
    """Write every result of the kernel at ``index``; the contraction's value there is ``acc``."""
    em.overrides[id(root)] = lambda _index: acc
    for k, result in enumerate(computation.outputs):
        em.emit(f"{outputs[k]}[{em.linear(index)}] = {em.value(result, index)};")


def _operand(em: Emitter, node: Node) -> str:
    assert node.op == "parameter", "contractions read their operands from buffers"
    return em.inputs[node.attr("index")]


def emit_dot(em: Emitter, computation: Graph, outputs: list[str], root: Node) -> None:
    x, y = root.inputs
    a, b = _operand(em, x), _operand(em, y)
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
    pragma = parallel_pragma(work, outer[0][1] if outer else 1)
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
        _store(em, computation, outputs, root, Index(root.shape, tuple(out_names)), "acc[n0]")
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
        _store(em, computation, outputs, root, Index(root.shape, tuple(out_names)), "acc")
        for _ in cols:
            em.pop()
            em.emit("}")
    for _ in outer:
        em.pop()
        em.emit("}")


def _conv_geometry(root: Node) -> tuple[int, int, int, int, int, int]:
    """(stride h, stride w, padding top, padding left, dilation h, dilation w)."""
    (sh, sw), ((pt, _), (pl, _)), (dh, dw) = root.attr("strides"), root.attr("padding"), root.attr("dilation")
    return sh, sw, pt, pl, dh, dw


def emit_conv(em: Emitter, computation: Graph, outputs: list[str], root: Node) -> None:
    x_node, w_node = root.inputs
    x, w = _operand(em, x_node), _operand(em, w_node)
    n, h, wd, c = x_node.shape
    kh, kw, _, o = w_node.shape
    _, oh, ow, _ = root.shape
    sh, sw, pt, pl, dh, dw = _conv_geometry(root)
    t = c_type(root.dtype)
    tile = min(CONV_TILE, ow)
    pragma = parallel_pragma(root.aval.size * kh * kw * c, n * oh)
    if pragma:
        em.emit(pragma.replace("parallel for", "parallel for collapse(2)"))
    em.emit(f"for (int64_t bn = 0; bn < {n}; bn++) {{")
    em.push()
    em.emit(f"for (int64_t y = 0; y < {oh}; y++) {{")
    em.push()
    em.emit(f"for (int64_t x0 = 0; x0 < {ow}; x0 += {tile}) {{")
    em.push()
    em.emit(f"const int64_t tw = {ow} - x0 < {tile} ? {ow} - x0 : {tile};")
    em.emit(f"{t} acc[{tile}][{o}] = {{{{0}}}};")
    em.emit(f"for (int64_t a = 0; a < {kh}; a++) {{")
    em.push()
    em.emit(f"const int64_t iy = y * {sh} + a * {dh} - {pt};")
    em.emit(f"if (iy < 0 || iy >= {h}) continue;")
    em.emit(f"for (int64_t b = 0; b < {kw}; b++) {{")
    em.push()
    em.emit(f"const {t}* wtap = {w} + (a * {kw} + b) * {c * o};")
    em.emit("for (int64_t j = 0; j < tw; j++) {")
    em.push()
    em.emit(f"const int64_t ix = (x0 + j) * {sw} + b * {dw} - {pl};")
    em.emit(f"if (ix < 0 || ix >= {wd}) continue;")
    em.emit(f"const {t}* px = {x} + ((bn * {h} + iy) * {wd} + ix) * {c};")
    em.emit(f"for (int64_t ci = 0; ci < {c}; ci++) {{")
    em.push()
    em.emit(f"const {t} xv = px[ci];")
    em.emit(f"const {t}* wrow = wtap + ci * {o};")
    em.emit(f"for (int64_t co = 0; co < {o}; co++) acc[j][co] += xv * wrow[co];")
    for _ in range(4):
        em.pop()
        em.emit("}")
    em.emit("for (int64_t j = 0; j < tw; j++) {")
    em.push()
    em.emit(f"for (int64_t co = 0; co < {o}; co++) {{")
    em.push()
    em.emit("const int64_t ox = x0 + j;")
    _store(em, computation, outputs, root, Index(root.shape, ("bn", "y", "ox", "co")), "acc[j][co]")
    for _ in range(5):
        em.pop()
        em.emit("}")


def emit_conv_grad_input(em: Emitter, computation: Graph, outputs: list[str], root: Node) -> None:
    g_node, w_node = root.inputs
    g, w = _operand(em, g_node), _operand(em, w_node)
    n, oh, ow, o = g_node.shape
    kh, kw, c, _ = w_node.shape
    _, h, wd, _ = root.shape
    sh, sw, pt, pl, dh, dw = _conv_geometry(root)
    t = c_type(root.dtype)
    pragma = parallel_pragma(root.aval.size * kh * kw * o, n * h)
    if pragma:
        em.emit(pragma.replace("parallel for", "parallel for collapse(2)"))
    em.emit(f"for (int64_t bn = 0; bn < {n}; bn++) {{")
    em.push()
    em.emit(f"for (int64_t iy = 0; iy < {h}; iy++) {{")
    em.push()
    em.emit(f"for (int64_t ix = 0; ix < {wd}; ix++) {{")
    em.push()
    em.emit(f"{t} acc[{c}] = {{0}};")
    em.emit(f"for (int64_t a = 0; a < {kh}; a++) {{")
    em.push()
    em.emit(f"const int64_t ty = iy + {pt} - a * {dh};")
    em.emit(f"if (ty < 0 || ty % {sh} != 0 || ty / {sh} >= {oh}) continue;")
    em.emit(f"for (int64_t b = 0; b < {kw}; b++) {{")
    em.push()
    em.emit(f"const int64_t tx = ix + {pl} - b * {dw};")
    em.emit(f"if (tx < 0 || tx % {sw} != 0 || tx / {sw} >= {ow}) continue;")
    em.emit(f"const {t}* grow = {g} + ((bn * {oh} + ty / {sh}) * {ow} + tx / {sw}) * {o};")
    em.emit(f"const {t}* wtap = {w} + (a * {kw} + b) * {c * o};")
    em.emit(f"for (int64_t ci = 0; ci < {c}; ci++) {{")
    em.push()
    em.emit(f"{t} s = 0;")
    em.emit("#pragma omp simd reduction(+:s)")
    em.emit(f"for (int64_t co = 0; co < {o}; co++) s += grow[co] * wtap[ci * {o} + co];")
    em.emit("acc[ci] += s;")
    for _ in range(3):
        em.pop()
        em.emit("}")
    em.emit(f"for (int64_t ci = 0; ci < {c}; ci++) {{")
    em.push()
    _store(em, computation, outputs, root, Index(root.shape, ("bn", "iy", "ix", "ci")), "acc[ci]")
    for _ in range(4):
        em.pop()
        em.emit("}")


def emit_conv_grad_filter(em: Emitter, computation: Graph, outputs: list[str], root: Node) -> None:
    x_node, g_node = root.inputs
    x, g = _operand(em, x_node), _operand(em, g_node)
    n, h, wd, c = x_node.shape
    _, oh, ow, o = g_node.shape
    kh, kw, _, _ = root.shape
    sh, sw, pt, pl, dh, dw = _conv_geometry(root)
    t = c_type(root.dtype)
    pragma = parallel_pragma(g_node.aval.size * kh * kw * c, kh * kw)
    if pragma:
        em.emit(pragma.replace("parallel for", "parallel for collapse(2)"))
    em.emit(f"for (int64_t a = 0; a < {kh}; a++) {{")
    em.push()
    em.emit(f"for (int64_t b = 0; b < {kw}; b++) {{")
    em.push()
    em.emit(f"{t} acc[{c}][{o}];")
    em.emit("memset(acc, 0, sizeof(acc));")
    em.emit(f"for (int64_t bn = 0; bn < {n}; bn++) {{")
    em.push()
    em.emit(f"for (int64_t y = 0; y < {oh}; y++) {{")
    em.push()
    em.emit(f"const int64_t iy = y * {sh} + a * {dh} - {pt};")
    em.emit(f"if (iy < 0 || iy >= {h}) continue;")
    em.emit(f"for (int64_t xo = 0; xo < {ow}; xo++) {{")
    em.push()
    em.emit(f"const int64_t ix = xo * {sw} + b * {dw} - {pl};")
    em.emit(f"if (ix < 0 || ix >= {wd}) continue;")
    em.emit(f"const {t}* px = {x} + ((bn * {h} + iy) * {wd} + ix) * {c};")
    em.emit(f"const {t}* grow = {g} + ((bn * {oh} + y) * {ow} + xo) * {o};")
    em.emit(f"for (int64_t ci = 0; ci < {c}; ci++) {{")
    em.push()
    em.emit(f"const {t} xv = px[ci];")
    em.emit(f"for (int64_t co = 0; co < {o}; co++) acc[ci][co] += xv * grow[co];")
    for _ in range(4):
        em.pop()
        em.emit("}")
    em.emit(f"for (int64_t ci = 0; ci < {c}; ci++) {{")
    em.push()
    em.emit(f"for (int64_t co = 0; co < {o}; co++) {{")
    em.push()
    _store(em, computation, outputs, root, Index(root.shape, ("a", "b", "ci", "co")), "acc[ci][co]")
    for _ in range(4):
        em.pop()
        em.emit("}")


CONTRACTION_EMITTERS = {
    "dot_general": emit_dot,
    "conv": emit_conv,
    "conv_grad_input": emit_conv_grad_input,
    "conv_grad_filter": emit_conv_grad_filter,
}
