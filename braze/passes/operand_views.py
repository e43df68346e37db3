"""A chain of movement ops as a strided view of the value below it.

A slice, a reshape or a transpose moves no element's value: where the value it reads lies
in memory with a stride per dimension, each of its elements lies at an offset plus a
stride per dimension of its own, found from the strides below it (a reshape only where the
dimensions it merges are laid out one inside the other, as NumPy's reshape of a view). A
kernel that reads its operands from memory (a matrix product) may then read through the
chain in place of a copy that it would otherwise need written out first: nanoGPT's
queries, keys and values are slices of one product's result, split into heads by a reshape
and a transpose, and each attention product reads them where that product wrote them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from braze.ir.graph import Node
from braze.ir.prims.structural import reshape, slice_, transpose
from braze.passes.kernel_graph import Group

if TYPE_CHECKING:
    from braze.passes.fusion_policy import FusionPolicy

VIEW_OPS = frozenset({slice_, reshape, transpose})


@dataclass(frozen=True)
class View:
    """Element ``(i0, i1, ...)`` of a view lies at ``offset + sum(i_d * strides[d])`` in the
    row-major buffer of ``source``."""

    source: Node
    offset: int
    strides: tuple[int, ...]


def row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The strides (in elements) of a row-major array of ``shape``."""
    strides, step = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = step
        step *= shape[d]
    return tuple(strides)


def strided_view(node: Node, through: Callable[[Node], bool]) -> View | None:
    """``node`` as a view of the first value down its chain of movement ops that is not
    ``through`` (a node ``through`` accepts is read through, the others from memory), or
    None where a reshape in the chain cannot be a view."""
    if node.op not in VIEW_OPS or not through(node):
        return View(node, 0, row_major(node.shape))
    below = strided_view(node.inputs[0], through)
    if below is None:
        return None
    if node.op is transpose:
        return View(below.source, below.offset, tuple(below.strides[p] for p in node.attr("permutation")))
    if node.op is slice_:
        starts, steps = node.attr("start_indices"), node.attr("strides")
        offset = below.offset + sum(s * b for s, b in zip(starts, below.strides, strict=True))
        return View(below.source, offset, tuple(b * s for b, s in zip(below.strides, steps, strict=True)))
    strides = reshaped_strides(node.inputs[0].shape, below.strides, tuple(node.attr("new_sizes")))
    return None if strides is None else View(below.source, below.offset, strides)


def reshaped_strides(shape: tuple[int, ...], strides: tuple[int, ...], new: tuple[int, ...]) -> tuple[int, ...] | None:
    """The strides of ``new`` (a reshape of ``shape``, laid out with ``strides``) over the
    same memory, or None where the dimensions it merges are not one inside the other."""
    if math.prod(shape) == 0:
        return row_major(new)
    # Dimensions of size 1 have no stride to keep (a new one is given 0).
    old = [(size, stride) for size, stride in zip(shape, strides, strict=True) if size != 1]
    sizes = [size for size in new if size != 1]
    found: list[int] = [0] * len(sizes)
    o = n = 0
    while n < len(sizes):
        # The fewest old and new dimensions (from o and n on) holding the same elements.
        o_end, n_end, old_count, new_count = o + 1, n + 1, old[o][0], sizes[n]
        while old_count != new_count:
            if old_count < new_count:
                old_count *= old[o_end][0]
                o_end += 1
            else:
                new_count *= sizes[n_end]
                n_end += 1
        if any(old[k][1] != old[k + 1][1] * old[k + 1][0] for k in range(o, o_end - 1)):
            return None  # merged dimensions that do not nest
        step = old[o_end - 1][1]
        for k in range(n_end - 1, n - 1, -1):
            found[k] = step
            step *= sizes[k]
        o, n = o_end, n_end
    kept = iter(found)
    return tuple(next(kept) if size != 1 else 0 for size in new)


class OperandViews:
    """The producer phase's first question (``fuse.plan_fusion``): is a movement op read only
    by products, as their operand or through movement ops they already read through? Then
    the kernel of each reads through it too, where the policy takes the view, and it is
    never written out. Anything else that a product would read through (an elementwise
    op, a movement op some other kernel reads too) is written out by a kernel, and the
    product reads it as it lies."""

    def __init__(self, users: dict[int, list[Node]], owner: dict[int, Group], policy: FusionPolicy) -> None:
        self.users, self.owner, self.policy = users, owner, policy
        self.groups: dict[int, list[Group]] = {}  # per movement op read through: the products' kernels
        self.refusals: list[str] = []

    def read_through(self, node: Node) -> list[Group] | None:
        """The kernels of the products that may read through movement op ``node``, or None."""
        groups = self._reading_groups(node)
        below = node.inputs[0]
        if groups is None or (below.op not in VIEW_OPS and self.policy.is_free_to_duplicate(below)):
            # Nor over a broadcast or a constant, which the kernels reading it recompute: the
            # movement op's own kernel computes it too, where a product reading through
            # would have it written out.
            return None
        for group in groups:
            root = group.members[0]
            views = tuple(strided_view(i, lambda n, g=group: n is node or self._inside(n, g)) for i in root.inputs)
            decision = self.policy.reads_operand_views(root, views)
            if not decision.ok:
                self.refusals.append(decision.reason)
                return None
        self.groups[id(node)] = groups
        return groups

    def read_by_view(self, node: Node) -> bool:
        """Whether a product reads through a movement op that reads ``node``: then it is a
        kernel's result."""
        return any(id(u) in self.groups for u in self.users[id(node)])

    def _inside(self, node: Node, group: Group) -> bool:
        return group in self.groups.get(id(node), ())

    def _reading_groups(self, node: Node) -> list[Group] | None:
        found: dict[int, Group] = {}
        for user in self.users[id(node)]:
            owner = self.owner.get(id(user))
            if id(user) in self.groups:
                groups = self.groups[id(user)]
            elif owner is not None and owner.members[0] is user and self.policy.reads_buffers(user):
                groups = [owner]
            else:
                return None
            for group in groups:
                found[id(group)] = group
        return list(found.values()) or None
