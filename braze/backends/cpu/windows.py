"""Kernels for windowed ops: reduce_window (pooling) and the max-pool gradient pair
select_and_scatter_add / select_and_gather_add. Windows are unrolled loops with
compile-time bounds; out-of-range (padding) positions are skipped."""

from __future__ import annotations

from braze.backends.cpu import loops
from braze.backends.cpu.elemental import Emitter, pick
from braze.backends.cpu.loops import (
    close_loops,
    close_parallel,
    loop_nest,
    open_loop,
    open_loops,
    open_parallel,
    parallel_pragma,
    reduction_init,
    store_results,
)
from braze.backends.cstyle import Index, c_type
from braze.ir.dtypes import float32
from braze.ir.graph import Graph, Node
from braze.ir.primitive import Category
from braze.ir.prims.reductions import reduce_max, reduce_sum
from braze.ir.prims.window import (
    nhwc_pool_windows,
    reduce_window,
    scatters_once,
    select_and_gather_add,
    select_and_scatter_add,
    tiling_windows,
)
from braze.passes.operand_views import row_major


def _operand(em: Emitter, node: Node) -> str:
    assert node.op.category is Category.PARAMETER, "windowed ops read their operands from buffers"
    return em.inputs[node.attr("index")]


def _window_positions(em: Emitter, root: Node, out_dims: tuple[str, ...], source_shape) -> tuple[list[str], str]:
    """Open one loop per window dimension; return the input index names and the validity test."""
    names, checks = [], []
    for d, (k, s, (low, high)) in enumerate(
        zip(root.attr("window_dimensions"), root.attr("window_strides"), root.attr("padding"), strict=True)
    ):
        em.emit(f"for (int64_t w{d} = 0; w{d} < {k}; w{d}++) {{")
        em.push()
        position = f"p{d}"
        em.emit(f"const int64_t {position} = {out_dims[d]} * {s} + w{d} - {low};")
        names.append(position)
        if low or high:  # without padding every window lies inside the operand
            checks.append(f"{position} >= 0 && {position} < {source_shape[d]}")
    return names, " && ".join(checks)


def _better(v: str, top: str, dtype) -> str:
    """Whether ``v`` replaces ``top`` as a window's maximum: greater, or NaN unless a NaN is
    already on top. GCC vectorizes this spelling (with & and | it leaves a branch)."""
    return f"!({v} <= {top}) && {top} == {top}" if dtype.is_float else f"{v} > {top}"


def _unrolled_reduce_window(em: Emitter, computation: Graph, outputs: list[str], root: Node, x: str) -> None:
    """NHWC pooling without padding: the window's taps written out, channels innermost, so
    the channel loop is straight-line code that vectorizes."""
    _, kh, kw, _ = root.attr("window_dimensions")
    _, sh, sw, _ = root.attr("window_strides")
    n, oh, ow, c = root.shape
    _, h, w, _ = root.inputs[0].shape
    t = c_type(root.dtype)
    pragma = parallel_pragma(root.aval.size * kh * kw, n * oh)
    if pragma:
        em.emit(pragma.replace("parallel for", "parallel for collapse(2)"))
    open_loops(em, [("bn", n), ("y", oh), ("ox", ow), ("ch", c)])
    em.emit(f"const {t}* window = {x} + ((bn * {h} + y * {sh}) * {w} + ox * {sw}) * {c} + ch;")
    em.emit(f"{t} acc = window[0];")
    for a in range(kh):
        for b in range(kw):
            if a or b:
                em.emit(f"{{ const {t} v = window[{(a * w + b) * c}];")
                if root.attr("kind") == "sum":
                    em.emit("  acc += v; }")
                else:
                    em.emit(f"  acc = {pick(_better('v', 'acc', root.dtype), 'v', 'acc', root.dtype)}; }}")
    store_results(em, computation, outputs, root, Index(root.shape, ("bn", "y", "ox", "ch")), "acc")
    close_loops(em, 4)


def emit_reduce_window(em: Emitter, computation: Graph, outputs: list[str], root: Node) -> None:
    source = root.inputs[0]
    x = _operand(em, source)
    t = c_type(root.dtype)
    kind = root.attr("kind")
    steps = row_major(source.shape)
    if nhwc_pool_windows(root):
        _unrolled_reduce_window(em, computation, outputs, root, x)
        return

    def body(index: Index) -> None:
        em.emit(f"{t} acc = {reduction_init(reduce_sum if kind == 'sum' else reduce_max, root.dtype)};")
        names, valid = _window_positions(em, root, em.dims(index), source.shape)
        offset = " + ".join(f"{n} * {s}" for n, s in zip(names, steps, strict=True)) or "0"
        value = f"{x}[{offset}]"
        if kind == "sum":
            update = f"acc += {value};"
        else:
            nan = f"({value} != {value}) | " if root.dtype.is_float else ""
            update = f"acc = ({nan}({value} > acc)) ? {value} : acc;"
        em.emit(f"if ({valid}) {update}" if valid else update)
        close_loops(em, len(names))
        store_results(em, computation, outputs, root, index, "acc")

    loop_nest(em, root.shape, flat=False, body=body, work=root.aval.size * _window_size(root))


def _window_size(root: Node) -> int:
    size = 1
    for k in root.attr("window_dimensions"):
        size *= k
    return size


def _argmax(em: Emitter, root: Node, operand: Node, out_dims: tuple[str, ...]) -> None:
    """Declare ``best`` (flat operand index of the window's first maximum, -1 if empty)."""
    x = _operand(em, operand)
    t = c_type(operand.dtype)
    steps = row_major(operand.shape)
    em.emit("int64_t best = -1;")
    em.emit(f"{t} top = 0;")
    names, valid = _window_positions(em, root, out_dims, operand.shape)
    offset = " + ".join(f"{n} * {s}" for n, s in zip(names, steps, strict=True)) or "0"
    em.emit(f"if ({valid or 1}) {{")
    em.emit(f"  const int64_t at = {offset};")
    em.emit(f"  const {t} v = {x}[at];")
    better = "(top == top && (v != v || v > top))" if operand.dtype.is_float else "v > top"
    em.emit(f"  if (best < 0 || {better}) {{ best = at; top = v; }}")
    em.emit("}")
    close_loops(em, len(names))


def _tiled_select_and_scatter(
    em: Emitter, computation: Graph, outputs: list[str], root: Node, src: str, x: str, out: str
) -> None:
    """Each window's cotangent goes to its first maximum, and every other element of the
    window gets 0: one pass that writes each output element once (through the fused
    epilogue, when windows cover the operand exactly), branch-free over the contiguous
    channels so it vectorizes; rows and columns no window covers get zeros. A fused bias
    gradient (a sum over every axis but the channels) adds up each stored element in
    per-channel double sums, one copy per thread."""
    _, kh, kw, _ = root.attr("window_dimensions")
    n, h, w, c = root.shape
    oh, ow = h // kh, w // kw
    t = c_type(root.dtype)
    offsets = [(a * w + b) * c for a in range(kh) for b in range(kw)]
    if h % kh:
        open_loop(em, "bn", n)
        em.emit(f"memset({out} + (bn * {h} + {oh * kh}) * {w * c}, 0, sizeof({t}) * {h % kh * w * c});")
        close_loops(em, 1)
    summed = next((r for r in computation.outputs if r.op is reduce_sum), None)
    stored = [r for r in computation.outputs if r is not summed]
    epilogue = len(stored) != 1 or stored[0] is not root
    assert not epilogue or scatters_once(root), "an epilogue needs windows that cover the operand"
    result = stored[-1] if stored else None
    streamed = (
        len(stored) == 1
        and result.dtype == float32
        and c % em.target.lanes(4) == 0
        and kh * kw * c * 4 <= 64 << 10  # the staged window, on the stack
        and loops.streams(em, result.aval.size * 4)
    )
    pragma = parallel_pragma(root.aval.size, n * oh)
    if summed is not None:
        em.emit(f"double bias[{c}];")
        em.emit("memset(bias, 0, sizeof(bias));")
        pragma = pragma and f"{pragma} reduction(+:bias[:{c}])"
    open_parallel(em, pragma, fenced=streamed)
    open_loop(em, "bn", n)
    open_loop(em, "wy", oh)
    open_loop(em, "wx", ow)
    em.emit(f"const int64_t at = ((bn * {h} + wy * {kh}) * {w} + wx * {kw}) * {c};")
    em.emit(f"const {t}* g = {src} + ((bn * {oh} + wy) * {ow} + wx) * {c};")
    if streamed:  # each window's taps staged, then written past the cache
        em.emit(f"float staged[{kh * kw}][{c}] __attribute__((aligned(64)));")
    open_loop(em, "ch", c)
    em.emit(f"const {t} gv = g[ch];")
    em.emit(f"{t} top = {x}[at + ch];")
    em.emit("int best = 0;")
    for i, offset in enumerate(offsets[1:], start=1):
        # (tap/take: names the elemental emitter's v1, l1, d1 temporaries never use)
        em.emit(f"const {t} tap{i} = {x}[at + {offset} + ch];")
        em.emit(f"const int take{i} = {_better(f'tap{i}', 'top', root.dtype)};")
        em.emit(f"best = take{i} ? {i} : best;")
        em.emit(f"top = {pick(f'take{i}', f'tap{i}', 'top', root.dtype)};")
    window_values = []
    for i, offset in enumerate(offsets):
        selected = pick(f"best == {i}", "gv", f"({t})0", root.dtype)
        index = Index(root.shape, ("bn", f"(wy * {kh} + {i // kw})", f"(wx * {kw} + {i % kw})", "ch"))
        em.overrides[id(root)] = lambda _index, selected=selected: selected
        if summed is not None:
            window_values.append(em.value(summed.inputs[0], index))
        if streamed:
            em.emit(f"staged[{i}][ch] = {em.value(result, index)};")
        elif epilogue:
            store_results(em, computation, outputs, root, index, selected, skip=summed)
        else:
            em.emit(f"{out}[at + {offset} + ch] = {selected};")
    if summed is not None:  # the window's few values added in its type, the running sums in double
        em.emit(f"bias[ch] += {' + '.join(window_values)};")
    close_loops(em, 1)
    for i, offset in enumerate(offsets if streamed else []):
        em.emit(f"braze_stream({outputs[computation.outputs.index(result)]} + at + {offset}, staged[{i}], {c});")
    close_loops(em, 1)
    row = f"{out} + (bn * {h} + wy * {kh}"
    for a in range(kh if w % kw else 0):
        em.emit(f"memset({row} + {a}) * {w * c} + {ow * kw * c}, 0, sizeof({t}) * {w % kw * c});")
    close_loops(em, 2)
    close_parallel(em, fenced=streamed)
    if summed is not None:
        total = outputs[computation.outputs.index(summed)]
        em.emit(f"for (int64_t ch = 0; ch < {c}; ch++) {total}[ch] = ({c_type(summed.dtype)})bias[ch];")


def emit_select_and_scatter(em: Emitter, computation: Graph, outputs: list[str], root: Node) -> None:
    source, operand = root.inputs
    src = _operand(em, source)
    if tiling_windows(root):
        out = outputs[computation.outputs.index(root)] if root in computation.outputs else ""
        _tiled_select_and_scatter(em, computation, outputs, root, src, _operand(em, operand), out)
        return
    out = outputs[computation.outputs.index(root)]
    em.emit(f"memset({out}, 0, sizeof({c_type(root.dtype)}) * {root.aval.size});")

    def body(index: Index) -> None:
        _argmax(em, root, operand, em.dims(index))
        em.emit(f"if (best >= 0) {out}[best] += {src}[{em.linear(index)}];")

    # Overlapping windows may scatter into one element from two threads; disjoint ones
    # (pooling with stride >= window, the usual case) run in parallel.
    disjoint = all(s >= k for s, k in zip(root.attr("window_strides"), root.attr("window_dimensions"), strict=True))
    loop_nest(em, source.shape, flat=False, body=body, parallel=disjoint)


def emit_select_and_gather(em: Emitter, computation: Graph, outputs: list[str], root: Node) -> None:
    tangents, operand = root.inputs
    tan = _operand(em, tangents)
    out = outputs[computation.outputs.index(root)]
    t = c_type(root.dtype)

    def body(index: Index) -> None:
        _argmax(em, root, operand, em.dims(index))
        em.emit(f"{out}[{em.linear(index)}] = best >= 0 ? {tan}[best] : ({t})0;")

    loop_nest(em, root.shape, flat=False, body=body, work=root.aval.size * _window_size(root))


WINDOW_EMITTERS = {
    reduce_window: emit_reduce_window,
    select_and_scatter_add: emit_select_and_scatter,
    select_and_gather_add: emit_select_and_gather,
}
