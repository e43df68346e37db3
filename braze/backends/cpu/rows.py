"""Row kernels (``passes/row_fusion.py``): a layer norm, a softmax or a layer norm's
gradient, one loop over the rows.

For each row (the last axis of the reductions' input), the reductions run in passes over
the row, a pass for each level of reductions that read earlier ones (a layer norm's mean,
then its variance), each kept in a local scalar that later passes and the results read;
then one pass writes the row's results. The row (a few hundred bytes to a few KiB) stays in
the first-level cache from the first pass to the last, so the input is read from memory
once and nothing per-row is written but the results themselves.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from braze.backends.cpu.elemental import Emitter
from braze.backends.cpu.loops import (
    close_loops,
    compute_scalars,
    open_loop,
    open_loops,
    parallel_pragma,
    reduce_row,
    reduction_init,
)
from braze.backends.cstyle import Index, c_type
from braze.ir.graph import Graph, Node
from braze.ir.primitive import Category
from braze.ir.prims.structural import broadcast_in_dim
from braze.passes.fusion_policy import recomputed_cheaply

# A row's kept values (``_kept_in_row``) live in an array local to the row loop, for rows
# of at most this many bytes: on the stack, one per thread.
_KEPT_ROW_BYTES = 16 << 10


def reduction_levels(computation: Graph) -> tuple[list[list[Node]], dict[int, int]]:
    """The computation's reductions in passes, each after the reductions it reads, and for
    every node the number of passes it waits for (0: it reads no reduction)."""
    level: dict[int, int] = {}
    reductions: list[Node] = []
    for node in computation.nodes():
        below = max((level[id(i)] for i in node.inputs), default=0)
        is_reduction = node.op.category is Category.REDUCTION
        level[id(node)] = below + 1 if is_reduction else below
        if is_reduction:
            reductions.append(node)
    passes: list[list[Node]] = [[] for _ in range(max((level[id(r)] for r in reductions), default=0))]
    for r in reductions:
        passes[level[id(r)] - 1].append(r)
    return passes, level


def _cone(node: Node) -> set[int]:
    """The nodes a row kernel computes at an element to compute ``node`` there: its operands'
    up to the reductions, whose values are the row's scalars by then."""
    seen: set[int] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.op.category is not Category.REDUCTION:
            stack.extend(n.inputs)
    return seen


def _kept_in_row(
    computation: Graph, levels: list[list[Node]], level: dict[int, int], shape: tuple[int, ...], last: list[Node]
) -> dict[int, list[Node]]:
    """By pass, the costly values of the row's shape (a transcendental: a softmax's
    exponentials where they are no result, under ``no_grad``) that the pass's reductions
    read and the results of the last pass (``last``) read again: kept in an array of the
    row as the pass computes them and read back after, not computed again. Only values
    that read a reduction, which row fusion lets be read in their own row alone."""
    if not last:
        return {}
    read_last = set().union(*(_cone(n) for n in last))
    results = {id(n) for n in computation.outputs}  # written by their pass, read back from there
    kept: dict[int, list[Node]] = {}
    for number, passed in enumerate(levels):
        if number == 0:
            continue
        read_here = set().union(*(_cone(r.inputs[0]) for r in passed))
        kept[number] = [
            n
            for n in computation.nodes()
            if level[id(n)] == number
            and id(n) not in results
            and id(n) in read_here
            and id(n) in read_last
            and n.shape == shape
            and n.op.elementwise
            and not recomputed_cheaply(n)
            and shape[-1] * n.dtype.itemsize <= _KEPT_ROW_BYTES
        ]
    return {number: nodes for number, nodes in kept.items() if nodes}


def emit_row_kernel(em: Emitter, computation: Graph, outputs: list[str]) -> None:
    """Each row's reductions pass by pass, then its results. A result of the row's shape
    that a pass can compute (a softmax's exponentials, read by its sum) is written in
    that pass and read back after, not computed again (an exp costs more than a load);
    a costly value that is no result is kept so too, in an array of the row
    (``_kept_in_row``)."""
    levels, level = reduction_levels(computation)
    shape = levels[0][0].inputs[0].shape
    for r in (r for passed in levels for r in passed):
        if r.inputs[0].shape != shape or tuple(r.attr("axes")) != (len(shape) - 1,):
            raise NotImplementedError(f"a row kernel reduces the last axis of {shape}, not {r.op} {r.aval}")
    compute_scalars(em, computation)
    names = tuple(f"i{d}" for d in range(len(shape)))
    outer = shape[:-1]
    rows = [k for k, o in enumerate(computation.outputs) if o.shape != shape]
    whole = [k for k in range(len(outputs)) if k not in rows]
    early = {k: level[id(computation.outputs[k])] for k in whole if level[id(computation.outputs[k])] < len(levels)}
    last = [computation.outputs[k] for k in whole if k not in early]
    kept = _kept_in_row(computation, levels, level, shape, last)
    # As a reduction kernel: the passes over a row in the cache cost less than a first read.
    pragma = parallel_pragma(math.prod(shape), outer[0])
    if pragma:
        em.emit(pragma)
    open_loops(em, list(zip(names[:-1], outer, strict=True)))
    # Where a value that a pass writes lives, as the C of its element at an index: a result
    # in its output, a kept value in an array of the row.
    place: dict[int, Callable[[Index], str]] = {}
    for k in early:
        place[id(computation.outputs[k])] = lambda index, name=outputs[k]: f"{name}[{em.linear(index)}]"
    for n in (n for nodes in kept.values() for n in nodes):
        name = em.fresh("kept")
        em.emit(f"{c_type(n.dtype)} {name}[{shape[-1]}];")
        place[id(n)] = lambda index, name=name: f"{name}[{em.dims(index)[-1]}]"
    for number, passed in enumerate(levels):
        by_kind: dict[tuple, list[Node]] = {}
        for r in passed:
            by_kind.setdefault((r.op, r.dtype), []).append(r)
        keeping = kept.get(number, [])
        written = [computation.outputs[k] for k, at in early.items() if at == number] + keeping
        for reductions in by_kind.values():
            slots = [em.fresh("row") for _ in reductions]
            for r, slot in zip(reductions, slots, strict=True):
                em.emit(f"{c_type(r.dtype)} {slot} = {reduction_init(r.op, r.dtype)};")

            def element(index: Index, reductions: list[Node] = reductions, written: list[Node] = written) -> list[str]:
                for n in written:
                    em.emit(f"{place[id(n)](index)} = {em.value(n, index)};")
                return [em.value(r.inputs[0], index) for r in reductions]

            reduce_row(em, reductions[0], slots, names, element)
            for n in keeping:  # the first loop of the pass wrote the whole row
                em.overrides[id(n)] = place[id(n)]
            written, keeping = [], []  # the first loop of the pass wrote them
            for r, slot in zip(reductions, slots, strict=True):
                em.overrides[id(r)] = lambda _index, slot=slot: slot
        # Read back only what reads reductions: row fusion lets those be read in their own
        # row alone, which is written by now; anything else may be read at a later row.
        for k in (k for k, at in early.items() if at == number and at > 0):
            em.overrides[id(computation.outputs[k])] = place[id(computation.outputs[k])]
    for k in rows:
        result = computation.outputs[k]
        kept_one = len(result.shape) == len(shape)  # one value per row, with a trailing 1
        index = Index(result.shape, (*names[:-1], "0") if kept_one else names[:-1])
        em.emit(f"{outputs[k]}[{em.linear(index)}] = {em.value(result, index)};")
    if any(k not in early for k in whole):
        _hoist_row_constants(em, computation, [computation.outputs[k] for k in whole if k not in early], shape, names)
        em.emit("#pragma omp simd")
        open_loop(em, names[-1], shape[-1])
        index = Index(shape, names)
        for k in (k for k in whole if k not in early):
            em.emit(f"{outputs[k]}[{em.linear(index)}] = {em.value(computation.outputs[k], index)};")
        close_loops(em, 1)
    close_loops(em, len(outer))


def _row_constants(computation: Graph, results: list[Node], shape: tuple[int, ...]) -> list[Node]:
    """The nodes that ``results`` read, of the row's shape, whose value is the same all
    along a row: broadcasts of a row's reductions or of scalars, and arithmetic on them."""
    last = len(shape) - 1
    nodes = computation.nodes()
    constant: set[int] = set()
    for node in nodes:
        if node.shape != shape:
            continue
        if node.op is broadcast_in_dim:
            dims = tuple(node.attr("broadcast_dimensions"))
            if last not in dims or node.inputs[0].shape[dims.index(last)] == 1:
                constant.add(id(node))
        elif node.op.elementwise and node.inputs and all(id(i) in constant or i.shape == () for i in node.inputs):
            constant.add(id(node))  # an op without operands (iota, random bits) varies
    needed: set[int] = set()
    stack = list(results)
    while stack:
        node = stack.pop()
        if id(node) not in needed:
            needed.add(id(node))
            if id(node) not in constant:
                stack.extend(node.inputs)
    return [n for n in nodes if id(n) in constant and id(n) in needed]


def _hoist_row_constants(
    em: Emitter, computation: Graph, results: list[Node], shape: tuple[int, ...], names: tuple[str, ...]
) -> None:
    """Compute once per row, before its last loop, what ``results`` read that does not vary
    along the row (a layer norm's 1 / sqrt(var + eps)): in a parallel kernel GCC computed
    it again at every element, for fear that a store had changed the scalars it reads (see
    ``loops.loop_nest``), and left the loop scalar (8x slower)."""
    start = Index(shape, (*names[:-1], "0"))
    for node in _row_constants(computation, results, shape):
        name = em.value(node, start)
        em.overrides[id(node)] = lambda _index, name=name: name
