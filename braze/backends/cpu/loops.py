"""Loop-nest drivers for elementwise (loop) kernels and reduction (input) kernels.

Shapes are compile-time constants in the generated C, so loop bounds and strides are
literals the compiler can vectorize. A kernel whose nodes never need per-dimension
indices runs one flat loop; otherwise one loop per dimension. The outermost loop runs on
all cores (OpenMP) when the kernel is big enough to repay the fork.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

from braze.backends.cpu.elemental import Emitter, pick
from braze.backends.cstyle import Index, Split, c_literal, c_type
from braze.backends.cstyle.emitter import reshape_groups
from braze.ir.graph import Graph, Node
from braze.ir.primitive import Category, Primitive
from braze.ir.prims.reductions import reduce_prod, reduce_sum
from braze.ir.prims.sources import iota
from braze.ir.prims.structural import broadcast_in_dim, concatenate, pad, reshape, rev, slice_, transpose

# A parallel region pays for waking the other threads where they have slept past their
# short spin (see executable.openmp_defaults): tens of microseconds on a virtual machine,
# and for moving its data between the cores' caches. So only kernels that do about as much
# run in parallel: 2^16 elements of an elementwise kernel, 2^20 multiply-adds of a
# contraction. With threads that slept at once, 2^18 and 2^22 were best (the jitted LeNet
# step: 3.2 ms with 2^15 for both, 2.65 ms with those); with the short spin, on a 2-core
# Xeon, these took LeNet's step from 4.35 to 3.2-3.7 ms and nanoGPT's from 32.3 to
# 27.3-30.5 ms (2^14 and 2^18: no better).
PARALLEL_MIN_ELEMENTS = 1 << 16
PARALLEL_MIN_MACS = 1 << 20
_NEEDS_DIMS = frozenset({transpose, rev, slice_, pad, concatenate, iota})


def needs_dims(computation: Graph) -> bool:
    for node in computation.nodes():
        if node.op in _NEEDS_DIMS:
            return True
        if node.op is broadcast_in_dim and node.inputs[0].shape:
            return True
    return False


# Results at least this many times the target's last-level cache are written with
# non-temporal stores: they leave the cache before anything reads them, so reading each
# line in before overwriting it would only double the memory traffic (CNN first layer,
# 349 MB, with a 32 MiB L3: 81 -> 69 ms). At twice the L3 the CNN's 87 MB input gradient
# gained nothing and the pooling gradient reading it after lost 6 ms.
STREAM_CACHE_MULTIPLE = 4


def streams(em: Emitter, result_bytes: int) -> bool:
    """Whether a result of ``result_bytes`` is written with non-temporal stores."""
    return result_bytes >= STREAM_CACHE_MULTIPLE * em.target.l3_bytes


def open_parallel(em: Emitter, pragma: str | None, fenced: bool) -> None:
    """Before two loops to run in parallel as one (``pragma`` from parallel_pragma, or None
    to run them serially). ``fenced``: the loops store with braze_stream, so they go in a
    parallel region whose threads each fence their stores once, after their share; end
    with close_parallel."""
    if fenced:
        if pragma:
            em.emit("#pragma omp parallel")
        em.emit("{")
        em.push()
        if pragma:
            em.emit(pragma.replace("parallel for", "for collapse(2)"))
    elif pragma:
        em.emit(pragma.replace("parallel for", "parallel for collapse(2)"))


def open_thread_block(em: Emitter, pragma: str | None, t: str, slices: list[tuple[str, int, str]]) -> None:
    """A parallel region when ``pragma`` is set (else a plain block) whose threads each take,
    for every (buffer, size, name) of ``slices``, ``size`` elements of the per-thread scratch
    ``buffer`` as ``name``, then share the loop that follows; close it with close_loops(em,
    1) after that loop."""
    if pragma:
        em.emit("#pragma omp parallel")
    em.emit("{")
    em.push()
    for buffer, size, name in slices:
        em.emit(f"{t}* {name} = {buffer} + (size_t)braze_thread() * {size};")
    if pragma:
        em.emit("#pragma omp for schedule(static)")


def close_parallel(em: Emitter, fenced: bool) -> None:
    if fenced:
        em.emit("braze_fence();")
        close_loops(em, 1)


def open_loop(em: Emitter, name: str, bound: int | str, start: int | str = 0, step: int = 1) -> None:
    increment = f"{name}++" if step == 1 else f"{name} += {step}"
    em.emit(f"for (int64_t {name} = {start}; {name} < {bound}; {increment}) {{")
    em.push()


def open_loops(em: Emitter, loops: list[tuple[str, int]]) -> None:
    """Open one loop per (name, bound), outermost first."""
    for name, bound in loops:
        open_loop(em, name, bound)


def store_results(
    em: Emitter, computation: Graph, outputs: list[str], root: Node, index: Index, value: str, skip: Node | None = None
) -> None:
    """Write every result of a kernel (but ``skip``, one the kernel computes otherwise) at
    ``index``, where its root (a contraction or a windowed op) has the C value ``value``:
    the fused epilogue is computed from it."""
    em.overrides[id(root)] = lambda _index: value
    for k, result in enumerate(computation.outputs):
        if result is not skip:
            em.emit(f"{outputs[k]}[{em.linear(index)}] = {em.value(result, index)};")


def close_loops(em: Emitter, count: int) -> None:
    for _ in range(count):
        em.pop()
        em.emit("}")


def parallel_pragma(work: int, outer: int, minimum: int | None = None, simd: bool = False) -> str | None:
    """The OpenMP pragma of a loop nest doing ``work`` over ``outer`` iterations of its
    outer loop (``simd``: that loop is the nest's only one), or None where one thread does
    it faster."""
    if work < (PARALLEL_MIN_ELEMENTS if minimum is None else minimum) or outer < 2:
        return None
    return f"#pragma omp parallel for{' simd' if simd else ''} schedule(static)"


def contraction_pragma(macs: int, outer: int) -> str | None:
    """parallel_pragma for a kernel doing ``macs`` multiply-adds."""
    return parallel_pragma(macs, outer, PARALLEL_MIN_MACS)


def loop_nest(
    em: Emitter,
    shape: tuple[int, ...],
    flat: bool,
    body: Callable[[Index], None],
    work: int = 0,
    parallel: bool = True,
    splits: tuple[int, ...] = (),
    inner: int = 1,
) -> None:
    """Emit loops over every element of ``shape`` around ``body`` (``work``: operations in
    all); the innermost loop (of a nest of two or more) split into one loop per range
    between the positions ``splits``, each with a body of its own, and each range whose
    length ``inner`` divides run as two loops, the inner one over ``inner`` elements (the
    body's index of that dimension a ``Split``).

    Inside a parallel region the kernel's pointers lose ``restrict`` (GCC outlines the
    region into a function reading them from a struct), so loops that read many inputs and
    write several results (AdamW's update of four parameters: sixteen arrays) were not
    vectorized: GCC could not prove the stores leave the inputs alone, and has too few
    run-time alias checks to try. Every result is written at its own element and never read
    by the kernel, so the innermost loops of a parallel nest are marked ``simd`` (the
    vectorizer's cost model still decides). So are those of a nest too small for threads:
    a kernel writing over a donated parameter has no ``restrict`` either (emit_kernel), and
    AdamW's update of four small parameters ran scalar, ten times slower per element than
    that of four large ones. ``parallel`` False: the body's elements depend on each other."""
    total = math.prod(shape)
    work = max(work, total) if parallel else 0
    if not shape:
        em.emit("{")
        em.push()
        body(Index((), (), "0"))
        em.pop()
        em.emit("}")
        return
    simd = "#pragma omp simd" if parallel else None
    if flat or len(shape) == 1:  # a pad of a vector keeps its one loop
        pragma = parallel_pragma(work, total, simd=True) or simd
        if pragma:
            em.emit(pragma)
        em.emit(f"for (int64_t i = 0; i < {total}; i++) {{")
        em.push()
        body(Index(shape, ("i",) if len(shape) == 1 else None, "i"))
        em.pop()
        em.emit("}")
        return
    names = tuple(f"i{d}" for d in range(len(shape)))
    pragma = parallel_pragma(work, shape[0])
    if pragma:
        em.emit(pragma)
    for name, size in zip(names[:-1], shape[:-1], strict=True):
        em.emit(f"for (int64_t {name} = 0; {name} < {size}; {name}++) {{")
        em.push()
    last = names[-1]
    for start, end in _stretches(shape[-1], splits):
        if inner > 1 and (end - start) % inner == 0:
            outer, within = f"{last}q", f"{last}r"
            open_loop(em, outer, (end - start) // inner)
            if simd:
                em.emit(simd)
            open_loop(em, within, inner)
            body(Index(shape, (*names[:-1], Split(((outer, (end - start) // inner), (within, inner)), start))))
            close_loops(em, 2)
            continue
        if simd:
            em.emit(simd)
        open_loop(em, last, end, start)
        body(Index(shape, names))
        close_loops(em, 1)
    close_loops(em, len(shape) - 1)


def _stretches(size: int, splits: tuple[int, ...]) -> list[tuple[int, int]]:
    """The ranges [start, end) that the positions ``splits`` cut [0, size) into."""
    return list(itertools.pairwise([0, *(b for b in sorted(set(splits)) if 0 < b < size), size]))


def compute_scalars(em: Emitter, computation: Graph) -> None:
    """Scalar arithmetic (Adam's bias corrections) computed once, before a kernel's loops."""
    for node in computation.nodes():
        if node.shape == () and node.op.elementwise:
            em.value(node, Index((), (), "0"))


def emit_loop_kernel(em: Emitter, computation: Graph, outputs: list[str]) -> None:
    """Each result written at every element of its shape (results of one shape share a loop)."""
    flat = not needs_dims(computation)
    compute_scalars(em, computation)
    by_shape: dict[tuple[int, ...], list[int]] = {}
    for k, out in enumerate(computation.outputs):
        by_shape.setdefault(out.shape, []).append(k)
    for shape, positions in by_shape.items():

        def body(index: Index, positions=positions) -> None:
            # Every result computed before any is stored: a result may replace a donated
            # parameter that another one reads (emit._writes_in_place_safely).
            values = [em.value(computation.outputs[k], index) for k in positions]
            for k, value in zip(positions, values, strict=True):
                em.emit(f"{outputs[k]}[{em.linear(index)}] = {value};")

        splits = _operand_boundaries(computation, shape)
        inner = 1 if flat else _reshape_split(computation, shape, splits, em.target.lanes(4))
        # A loop writing several results moves that many times one result's memory (AdamW's
        # moments of four 128 x 384 parameters: eight results and twelve inputs of 49,152
        # elements), so its work counts each result.
        work = math.prod(shape) * len(positions)
        loop_nest(em, shape, flat, body, work=work, splits=splits, inner=inner)


def _reshape_split(computation: Graph, shape: tuple[int, ...], splits: tuple[int, ...], lanes: int) -> int:
    """The size of the innermost dimension that a reshape in the kernel merges into the
    last dimension of a range of the innermost loop (the heads of attention's output merged
    into channels, each head's 32 values): the loop runs over it as an inner loop (1: no
    split). Only sizes of whole vectors, which the inner loop fills."""
    if len(shape) < 2:
        return 1
    lengths = {end - start for start, end in _stretches(shape[-1], splits)}
    found = 1
    for node in computation.nodes():
        if node.op is not reshape or not node.shape or node.shape[-1] not in lengths:
            continue
        groups = reshape_groups(node.inputs[0].shape, node.shape)
        if not groups or groups[-1][1] != [len(node.shape) - 1] or len(groups[-1][0]) < 2:
            continue
        size = node.inputs[0].shape[groups[-1][0][-1]]
        if size % lanes == 0:
            found = max(found, size)
    return found


# A loop split at more places than this would repeat its body more than it gains.
_MAX_SPLITS = 8


def _operand_boundaries(computation: Graph, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Where the pads and concatenates of ``shape`` in a loop kernel change from one operand
    (or the padding) to the next along the last axis. Split there, each loop has a range in
    which every such choice is the same, which the C compiler sees from the loop's bounds:
    the branches fold away and the loop vectorizes (the gradient of the GPT's query, key
    and value split, three pads added, ran at 5 ns an element with them)."""
    found: set[int] = set()
    for node in computation.nodes() if len(shape) >= 2 else ():
        if node.shape != shape:
            continue
        if node.op is pad and node.attr("interior")[-1] == 0:
            low = node.attr("low")[-1]
            found |= {low, low + node.inputs[0].shape[-1]}
        elif node.op is concatenate and node.attr("dimension") == len(shape) - 1:
            found |= set(itertools.accumulate(part.shape[-1] for part in node.inputs))
    inside = tuple(sorted(b for b in found if 0 < b < shape[-1]))
    return inside if len(inside) <= _MAX_SPLITS else ()


def _combine(kind: Primitive, acc: str, value: str, dtype) -> str:
    if kind is reduce_sum:
        return f"{acc} + {value}"
    if kind is reduce_prod:  # in the element type, as NumPy multiplies: no product escapes its overflow
        return f"{acc} * {value}"
    # reduce_max; NaN wins, as a blend of bits where the C type is float or double
    nan = f"({value} != {value}) | " if dtype.is_float else ""
    if dtype.is_float and dtype.itemsize in (4, 8):
        return pick(f"{nan}({value} > {acc})", value, acc, dtype)
    return f"({nan}({value} > {acc})) ? {value} : {acc}"


def reduction_init(op: Primitive, dtype) -> str:
    if op is reduce_sum:
        return c_literal(0, dtype)
    if op is reduce_prod:
        return c_literal(1, dtype)
    if dtype.is_float:
        return c_literal(float("-inf"), dtype)
    if dtype.kind == "b":
        return "0"
    return "INT64_MIN" if dtype.itemsize == 8 else "INT32_MIN"


def emit_reduction_kernel(em: Emitter, computation: Graph, outputs: list[str], root: Node) -> None:
    """A reduction with its producers fused in; results of the input's shape (a producer
    that others read too) are written from the same loop, and so are sibling reductions of
    the same operation, axes and input shape (sums that sibling fusion merged), each into
    its own accumulators."""
    source = root.inputs[0]
    axes = set(root.attr("axes"))
    shape = source.shape
    dtype = root.dtype
    reduced = [k for k, o in enumerate(computation.outputs) if o.op.category is Category.REDUCTION]
    for k in reduced:
        other = computation.outputs[k]
        if (other.op, set(other.attr("axes")), other.inputs[0].shape, other.dtype) != (root.op, axes, shape, dtype):
            raise NotImplementedError("the reductions of one kernel share their operation, axes, input shape and type")
    targets = [outputs[k] for k in reduced]
    sources = [computation.outputs[k].inputs[0] for k in reduced]
    extras = [k for k in range(len(computation.outputs)) if k not in reduced]
    if any(computation.outputs[k].shape != shape for k in extras):
        raise NotImplementedError("a reduction kernel writes extra results only of its input's shape")
    init = reduction_init(root.op, dtype)
    # GCC 12 at -O3 if-converted and vectorized two sums of selects accumulated into their
    # results together (a sort's gradient, one-hot scattered, and the count beside it) and
    # lost some of the terms, with AVX2 and with AVX-512 (fuzz program 9673); one sum alone
    # was right. Sibling reductions keep their branches.
    em.keep_branches = em.keep_branches or len(targets) > 1

    def element(index: Index) -> list[str]:
        for k in extras:
            em.emit(f"{outputs[k]}[{em.linear(index)}] = {em.value(computation.outputs[k], index)};")
        return [em.value(s, index) for s in sources]

    period = _period(em, computation, root, axes)
    if period:
        _periodic_sum(em, root, targets, element, period)
        return
    results, count = targets, root.aval.size
    # A float sum accumulates in double, as the twin's does (reduce_sum's _sum_impl): where
    # the loops add into a result across more than one row (an axis reduced other than the
    # innermost: a bias gradient), they add into double slots, rounded into the results at
    # the end (float slots lost the digits a float running sum loses: [1e8, 1, -1e8] summed
    # to 0). Still vectorized; converting each element to double is what it costs (a
    # (768, 512) sum over axis 0, in cache, one thread: 25 -> 55 us; (4096, 384): 5% more).
    wide = root.op is reduce_sum and dtype.is_float and dtype.itemsize < 8 and bool(axes - {len(shape) - 1})
    if wide:
        targets = [f"wide{k}" for k in range(len(results))]
        for name in targets:
            if count <= _LOCAL_SUMS:
                em.emit(f"double {name}[{count}];")
            else:
                em.scratch_buffer("double", name, count, temporary=True)
        init = "0"
    slot_type = "double" if wide else c_type(dtype)
    em.emit(f"for (int64_t k = 0; k < {count}; k++) {{ {' '.join(f'{t}[k] = {init};' for t in targets)} }}")
    names = tuple(f"i{d}" for d in range(len(shape)))
    kept = [d for d in range(len(shape)) if d not in axes]
    kept_linear = "0"
    for d in kept:
        kept_linear = names[d] if kept_linear == "0" else f"({kept_linear}) * {shape[d]} + {names[d]}"
    inner_reduced = bool(shape) and (len(shape) - 1) in axes
    outer = shape[:-1] if inner_reduced else shape
    parallel = bool(shape) and 0 not in axes and parallel_pragma(math.prod(shape), shape[0])
    if parallel:
        em.emit(str(parallel))
    elif outer and 0 in axes and root.op is reduce_sum and not extras and root.aval.size <= 4096:
        # The leading axis is summed away (a bias gradient): each thread sums its rows into
        # a private copy of the small result, and OpenMP adds the copies. (Not when it is
        # the only axis: its loop is then the accumulator's, after the declaration.)
        pragma = parallel_pragma(math.prod(shape), shape[0])
        if pragma:
            em.emit(f"{pragma} reduction(+:{', '.join(f'{t}[:{root.aval.size}]' for t in targets)})")
    for name, size in zip(names, outer, strict=False):
        em.emit(f"for (int64_t {name} = 0; {name} < {size}; {name}++) {{")
        em.push()

    if inner_reduced:
        reduce_row(em, root, [f"{t}[{kept_linear}]" for t in targets], names, element, slot_type)
    else:
        for target, value in zip(targets, element(Index(shape, names)), strict=True):
            slot = f"{target}[{kept_linear}]"
            em.emit(f"{slot} = {_combine(root.op, slot, value, dtype)};")
    for _ in outer:
        em.pop()
        em.emit("}")
    if wide:
        rounded = " ".join(f"{r}[k] = ({c_type(dtype)}){t}[k];" for r, t in zip(results, targets, strict=True))
        em.emit(f"for (int64_t k = 0; k < {count}; k++) {{ {rounded} }}")


# A float sum's double slots (emit_reduction_kernel) are a local array up to this many (on
# the stack, 32 KiB; the OpenMP reduction's private copies too), a scratch buffer past it.
_LOCAL_SUMS = 4096


def _splits_rows(em: Emitter, root: Node, row: int) -> bool:
    """Whether a reduction over the innermost axis (a softmax's max and sum, a layer norm's
    moments) runs split into a vector of partial results: float sums and maxima of rows
    of at least two vectors. A product keeps its one left-to-right chain (its overflow is
    NumPy's)."""
    return root.op is not reduce_prod and root.dtype.is_float and row >= 2 * em.target.lanes(root.dtype.itemsize)


def reduce_row(
    em: Emitter,
    root: Node,
    slots: list[str],
    names: tuple[str, ...],
    element: Callable[[Index], list[str]],
    slot_type: str | None = None,
) -> None:
    """Combine one row of ``root``'s input (its innermost axis, at loop names ``names``) into
    each of ``slots``: C lvalues holding what is reduced so far, one per value ``element``
    gives (reductions of ``root``'s operation and type), of C type ``slot_type`` (default:
    the result's; ``double`` for a float sum's slots that keep summing over more rows). In
    a block of its own, so that a kernel reducing its rows several times over declares its
    accumulators in each."""
    shape, dtype = root.inputs[0].shape, root.dtype
    slot_type = slot_type or c_type(dtype)
    em.emit("{")
    em.push()
    if _splits_rows(em, root, shape[-1]):
        _split_row_reduction(em, root, slots, names, element, slot_type)
    else:
        t = "double" if root.op is reduce_sum and dtype.is_float else c_type(dtype)
        accumulators = [f"acc{k}" for k in range(len(slots))]
        for acc, slot in zip(accumulators, slots, strict=True):
            em.emit(f"{t} {acc} = {slot};")
        last = names[-1]
        em.emit(f"for (int64_t {last} = 0; {last} < {shape[-1]}; {last}++) {{")
        em.push()
        for acc, value in zip(accumulators, element(Index(shape, names)), strict=True):
            em.emit(f"{acc} = {_combine(root.op, acc, value, dtype)};")
        close_loops(em, 1)
        for acc, slot in zip(accumulators, slots, strict=True):
            em.emit(f"{slot} = ({slot_type}){acc};")
    close_loops(em, 1)


def _split_row_reduction(
    em: Emitter,
    root: Node,
    slots: list[str],
    names: tuple[str, ...],
    element: Callable[[Index], list[str]],
    slot_type: str,
) -> None:
    """One row's reduction (into each of ``slots``) as a vector's worth of partial results,
    lane j taking the row's elements j, j + lanes, ...: the producers' elementwise work (an
    exp) vectorizes with it, and the partial sums (in double, as every float sum) are
    independent chains instead of one add after another (a softmax's exp and sum: 1.8 ms a
    layer of the GPT step). At the end of the row the partials are combined pairwise, lane
    j with lane j + half, then the halves again (vector operations, where combining them
    one after another in lane order was a chain of 16 dependent adds or selects a row: on
    the GPT's 64-wide attention rows, a third of the softmax's time)."""
    shape, dtype = root.inputs[0].shape, root.dtype
    lanes = em.target.lanes(dtype.itemsize)
    t = "double" if root.op is reduce_sum else c_type(dtype)
    row, last = shape[-1], names[-1]
    full = row - row % lanes
    parts = [f"part{k}" for k in range(len(slots))]
    init = reduction_init(root.op, dtype)
    em.emit(" ".join(f"{t} {part}[{lanes}];" for part in parts))
    em.emit(f"for (int64_t j = 0; j < {lanes}; j++) {{ {' '.join(f'{part}[j] = {init};' for part in parts)} }}")
    em.emit(f"for (int64_t base = 0; base < {full}; base += {lanes}) {{")
    em.push()
    em.emit("#pragma omp simd")
    em.emit(f"for (int64_t j = 0; j < {lanes}; j++) {{")
    em.push()
    em.emit(f"const int64_t {last} = base + j;")
    for part, value in zip(parts, element(Index(shape, names)), strict=True):
        em.emit(f"{part}[j] = {_combine(root.op, f'{part}[j]', value, dtype)};")
    close_loops(em, 2)
    if row % lanes:
        em.emit(f"for (int64_t {last} = {full}; {last} < {row}; {last}++) {{")
        em.push()
        for part, value in zip(parts, element(Index(shape, names)), strict=True):
            slot = f"{part}[{last} - {full}]"
            em.emit(f"{slot} = {_combine(root.op, slot, value, dtype)};")
        close_loops(em, 1)
    half = lanes // 2
    while half:
        combined = " ".join(
            f"{part}[j] = {_combine(root.op, f'{part}[j]', f'{part}[j + {half}]', dtype)};" for part in parts
        )
        em.emit(f"for (int64_t j = 0; j < {half}; j++) {{ {combined} }}")
        half //= 2
    for part, slot in zip(parts, slots, strict=True):
        em.emit(f"{slot} = ({slot_type})({_combine(root.op, f'({t}){slot}', f'{part}[0]', dtype)});")


# At most this many accumulators for a periodic sum (the period of its kept axis in vectors).
_PERIODIC_MAX = 256


def _period(em: Emitter, computation: Graph, root: Node, axes: set[int]) -> int | None:
    """For a float sum over every axis but the last (a bias gradient, NHWC) whose producers
    read their inputs at the element itself, summed as a flat array whose values repeat the
    kept axis: its period in whole (double) vectors; None for any other reduction."""
    shape = root.inputs[0].shape
    if root.op is not reduce_sum or not root.dtype.is_float or len(shape) < 2 or needs_dims(computation):
        return None
    if axes != set(range(len(shape) - 1)):
        return None
    period = math.lcm(shape[-1], em.target.lanes(8))
    return period if period <= _PERIODIC_MAX and math.prod(shape) >= 4 * period else None


def _periodic_sum(
    em: Emitter, root: Node, targets: list[str], element: Callable[[Index], list[str]], period: int
) -> None:
    """``target[c] = sum of a flat array at c, c + C, c + 2C, ...`` for each of ``targets``
    (one array each, all of one shape): the arrays are summed in blocks of P = lcm(C, lanes)
    elements into P accumulators each (whole vectors, so the loop vectorizes; threads sum
    their blocks into private copies), folded into C at the end. The kept axis innermost
    made the plain loop nest add into C memory slots one element at a time, on one thread
    (0.3 ms for LeNet's first bias gradient)."""
    shape = root.inputs[0].shape
    kept, total = shape[-1], math.prod(shape)
    full = total - total % period
    accumulators = [f"acc{k}" for k in range(len(targets))]
    em.emit("{")
    em.push()
    for acc in accumulators:  # as every float sum: long runs of float adds drift
        em.emit(f"double {acc}[{period}];")
        em.emit(f"for (int64_t j = 0; j < {period}; j++) {acc}[j] = 0;")
    pragma = parallel_pragma(total, full // period)
    if pragma:
        em.emit(f"{pragma} reduction(+:{', '.join(f'{acc}[:{period}]' for acc in accumulators)})")
    em.emit(f"for (int64_t base = 0; base < {full}; base += {period}) {{")
    em.push()
    em.emit(f"for (int64_t j = 0; j < {period}; j++) {{")
    em.push()
    em.emit("const int64_t l = base + j;")
    for acc, value in zip(accumulators, element(Index(shape, None, "l")), strict=True):
        em.emit(f"{acc}[j] += {value};")
    em.pop()
    em.emit("}")
    em.pop()
    em.emit("}")
    if total % period:
        em.emit(f"for (int64_t l = {full}; l < {total}; l++) {{")
        em.push()
        for acc, value in zip(accumulators, element(Index(shape, None, "l")), strict=True):
            em.emit(f"{acc}[l - {full}] += {value};")
        em.pop()
        em.emit("}")
    for acc, target in zip(accumulators, targets, strict=True):  # folded in double too, then rounded once
        em.emit(f"for (int64_t j = {kept}; j < {period}; j++) {acc}[j % {kept}] += {acc}[j];")
        em.emit(f"for (int64_t j = 0; j < {kept}; j++) {target}[j] = ({c_type(root.dtype)}){acc}[j];")
    em.pop()
    em.emit("}")
