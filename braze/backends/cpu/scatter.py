"""The scatter_add kernel: zeros, then every update window added where its clamped index
puts it, one batch position after another (duplicate indices add up in that order).

Producers fused into the kernel are computed where the loops read them: the indices once
per batch position, the updates once per element. The window's axes are the inner loops,
so a window that is a row of the result (an embedding's gradient) is one contiguous,
vectorizable run of additions.
"""

from __future__ import annotations

from braze.backends.cpu.elemental import Emitter
from braze.backends.cpu.loops import close_loops, open_loops
from braze.backends.cstyle import Index, c_type, wrapping
from braze.backends.cstyle.emitter import clamped_start
from braze.ir.graph import Graph, Node
from braze.ir.prims.indexing import window_axes


def emit_scatter_add(em: Emitter, computation: Graph, outputs: list[str], root: Node) -> None:
    updates, indices = root.inputs
    if computation.outputs != (root,):
        raise NotImplementedError("a scatter_add kernel writes its result only")
    target = outputs[0]
    positions, collapsed = root.attr("update_window_dims"), root.attr("inserted_window_dims")
    index_map = root.attr("scatter_dims_to_operand_dims")
    windows = dict(zip(window_axes(len(root.shape), collapsed), positions, strict=True))
    em.emit(f"memset({target}, 0, sizeof({c_type(root.dtype)}) * {max(root.aval.size, 1)});")
    if not updates.aval.size:
        return
    batch = [(f"b{k}", size) for k, size in enumerate(indices.shape[:-1])]
    open_loops(em, batch)
    names = tuple(name for name, _ in batch)
    starts = {}
    for d in index_map:
        high = root.shape[d] - (updates.shape[windows[d]] if d in windows else 1)
        starts[d] = clamped_start(em, indices, names, index_map.index(d), high)
    window_loops = [(f"w{d}", updates.shape[p]) for d, p in windows.items()]
    open_loops(em, window_loops)
    target_dims = []
    for d in range(len(root.shape)):
        terms = [t for t in (starts.get(d), f"w{d}" if d in windows else None) if t]
        target_dims.append(" + ".join(terms) or "0")
    update_dims, batch_names = [], iter(names)
    for p in range(updates.aval.ndim):
        window = [d for d, q in windows.items() if q == p]
        update_dims.append(f"w{window[0]}" if window else next(batch_names))
    value = em.value(updates, Index(updates.shape, tuple(update_dims)))
    at = em.linear(Index(root.shape, tuple(f"({dim})" for dim in target_dims)))
    em.emit(f"{target}[{at}] = {wrapping(root.dtype, f'{target}[{at}]', '+', value)};")
    close_loops(em, len(window_loops) + len(batch))
