"""Row fusion: a reduction over the last axis and the kernels that read it per row, one kernel.

A layer norm is a mean, a variance of the centred rows and a normalization that reads both;
a softmax a maximum, a sum of exponentials and a division. Producer fusion makes each
reduction a kernel, and the elementwise work after it another, so each row is read from
memory three to five times. A row kernel runs its reductions one after another over each
row (in one pass those that do not read each other), each seeing the results of the
earlier ones as per-row scalars, then writes the row's results: the row stays in the cache
between the passes. XLA's GPU backend fuses a softmax or a layer norm this way ("row
reductions with an epilogue").

Only a backend whose code generator writes such kernels asks for them
(``FusionPolicy.row_kernels``). A reader of a reduction joins when the merged kernel reads
each row's reductions only in that row: elementwise ops of the row's shape or of the
per-row shape (with or without a trailing 1), reshapes between those and broadcasts of a
per-row value along the row. Anything else (a transpose of the reduced values, a reduction
over another axis) keeps its own kernel, and the refusal says why.
"""

from __future__ import annotations

from dataclasses import dataclass

from braze.ir.graph import Node
from braze.ir.primitive import ROOTS, Category
from braze.ir.prims.structural import broadcast_in_dim, reshape
from braze.passes.fusion_policy import FusionPolicy
from braze.passes.kernel_graph import Group, KernelGraph

_READERS = ("loop", "input", "row")


@dataclass
class RowContext:
    """What the merge must know of the graph: each node's readers, the graph's results and
    the nodes recomputed in every kernel that reads them (never a kernel's result)."""

    users: dict[int, list[Node]]
    outputs: set[int]
    shared: set[int]


def row_shape(group: Group, policy: FusionPolicy) -> tuple[int, ...] | None:
    """The shape whose last axis every reduction of ``group`` reduces (a row kernel's rows),
    or None when the group has no such reductions or holds another kind of root."""
    reductions = [m for m in group.members if m.op.category is Category.REDUCTION]
    if not reductions or group.kind not in _READERS:
        return None
    if any(m.op.category in ROOTS and m.op.category is not Category.REDUCTION for m in group.members):
        return None
    shapes = {r.inputs[0].shape for r in reductions}
    if len(shapes) != 1:
        return None
    (shape,) = shapes
    for r in reductions:
        if r.op not in policy.sibling_reductions or tuple(r.attr("axes")) != (len(shape) - 1,) or len(shape) < 2:
            return None
    return shape


def _per_row(shape: tuple[int, ...], row: tuple[int, ...]) -> bool:
    return shape in (row[:-1], (*row[:-1], 1))


def _reads_own_row(node: Node, row: tuple[int, ...]) -> bool:
    """Whether ``node``, reading per-row values, reads them at its own row only."""
    if node.op.category is Category.REDUCTION:
        return True  # a later reduction of the same rows (row_shape checked its axes)
    if node.op.elementwise:
        return node.shape == row or _per_row(node.shape, row)
    source = node.inputs[0].shape
    if node.op is reshape:
        return _per_row(node.shape, row) and _per_row(source, row)
    if node.op is broadcast_in_dim and _per_row(source, row):
        outer = len(row) - 1
        dims = tuple(node.attr("broadcast_dimensions"))
        return (node.shape == row or _per_row(node.shape, row)) and dims[:outer] == tuple(range(outer))
    return False


def row_refusal(members: list[Node], row: tuple[int, ...], context: RowContext) -> str | None:
    """Why ``members`` cannot be one row kernel over rows of ``row``, or None if they can."""
    inside = {id(m) for m in members}
    depends: dict[int, bool] = {}

    def on_reduction(node: Node) -> bool:
        if id(node) not in depends:
            depends[id(node)] = id(node) in inside and (
                node.op.category is Category.REDUCTION or any(on_reduction(i) for i in node.inputs)
            )
        return depends[id(node)]

    for m in members:
        if on_reduction(m) and not _reads_own_row(m, row):
            return f"row kernel over rows of {row}: {m.op} {m.aval} reads the rows' reductions at other rows"
    for m in members:
        if id(m) in context.shared or m.shape == row or _per_row(m.shape, row):
            continue
        if id(m) in context.outputs or any(id(u) not in inside for u in context.users[id(m)]):
            return f"row kernel over rows of {row}: its result {m.op} {m.aval} is neither rows nor one value per row"
    return None


def merge_rows(
    groups: list[Group], owner: dict[int, Group], kernels: KernelGraph, context: RowContext, policy: FusionPolicy
) -> tuple[list[Group], list[str]]:
    """The groups after row fusion (merged ones gone, ``owner`` and ``kernels`` updated), and
    the refusals' reasons. Each reducing group, in topological order, absorbs its readers one
    at a time while one may join (a reader refused may join later, once the kernel it also
    reads has joined); the reasons are those of the readers left out at the end."""
    removed: set[Group] = set()
    refusals: list[str] = []
    for group in sorted(groups, key=kernels.rank.__getitem__):
        if group in removed or (row := row_shape(group, policy)) is None:
            continue
        other_kinds: set[Group] = set()  # readers that never join, asked once
        while True:
            reasons = []
            for reader in sorted(kernels.readers[group] - other_kinds, key=kernels.rank.__getitem__):
                reason = _refusal(group, reader, row, kernels, context, policy)
                if reason is None:
                    break
                if not reason:
                    other_kinds.add(reader)
                reasons.append(reason)
            else:
                refusals.extend(r for r in reasons if r)
                break
            group.absorb(reader)
            group.kind = "row"
            for m in reader.members:
                if owner.get(id(m)) is reader:
                    owner[id(m)] = group
            kernels.merge(group, reader)
            removed.add(reader)
    return [g for g in groups if g not in removed], refusals


def _refusal(
    group: Group, reader: Group, row: tuple[int, ...], kernels: KernelGraph, context: RowContext, policy: FusionPolicy
) -> str | None:
    """Why ``reader`` may not join the row kernel ``group`` ("" for a kernel of another kind,
    which needs no explanation), or None when it may."""
    if reader.kind not in _READERS or (reader.kind != "loop" and row_shape(reader, policy) != row):
        return ""  # other roots, or reductions of other rows: kernels of their own
    if len(group.members) + len(reader.members) > policy.max_fused_ops:
        return f"row kernel over rows of {row} would hold more than {policy.max_fused_ops} ops"
    if any(p is not group and kernels.depends_on(p, group) for p in kernels.producers[reader]):
        root = reader.members[0]
        return f"row kernel over rows of {row}: its reader {root.op} {root.aval} also reads a kernel that reads it"
    seen = {id(m) for m in group.members}
    return row_refusal(group.members + [m for m in reader.members if id(m) not in seen], row, context)
