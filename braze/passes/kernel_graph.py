"""The graph of the kernels fusion forms: which kernel reads which, in a topological order
kept valid as kernels merge.

Fusion asks whether one kernel depends on another (merging two kernels that depend on each
other through a third would make a cycle). Walking the whole graph for every question made
fusion quadratic in the graph's size; here a question walks only the kernels between the
two in the topological order, and a merge reorders only the kernels between the two merged
ones that depend on either (Pearce and Kelly's dynamic topological order: the first's
descendants move after the merged kernel, the second's ancestors before it).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from braze.ir.graph import Node


@dataclass(eq=False)
class Group:
    """The nodes of one kernel (its first member is its root); ``last`` is the topological
    position of its latest member."""

    kind: str
    members: list[Node] = field(default_factory=list)
    last: int = -1
    _ids: set[int] = field(default_factory=set, repr=False)

    def add(self, node: Node, position: int) -> None:
        if id(node) not in self._ids:
            self._ids.add(id(node))
            self.members.append(node)
        self.last = max(self.last, position)

    def absorb(self, other: Group) -> None:
        """Take every member of ``other`` (nodes both hold stay once)."""
        for node in other.members:
            if id(node) not in self._ids:
                self._ids.add(id(node))
                self.members.append(node)
        self.last = max(self.last, other.last)

    def __contains__(self, node: Node) -> bool:
        return id(node) in self._ids


def external_inputs(group: Group, members: Sequence[Node] | None = None) -> list[Node]:
    """The nodes a group reads that it does not compute, in the order its ``members`` (by
    default in the order they joined it) read them."""
    seen: dict[int, Node] = {}
    for member in group.members if members is None else members:
        for i in member.inputs:
            if id(i) not in group._ids:
                seen.setdefault(id(i), i)
    return list(seen.values())


class KernelGraph:
    """Kernels as nodes of a DAG (an edge where one reads a result of the other), each with a
    rank: a topological position, valid after every merge."""

    def __init__(self, groups: Iterable[Group], owner: Mapping[int, Group]) -> None:
        self.producers: dict[Group, set[Group]] = {}
        self.readers: dict[Group, set[Group]] = {}
        order = list(groups)
        for group in order:
            self.producers[group] = set()
            self.readers.setdefault(group, set())
        for group in order:
            for i in external_inputs(group):
                producer = owner.get(id(i))
                if producer is not None and producer is not group:
                    self.producers[group].add(producer)
                    self.readers.setdefault(producer, set()).add(group)
        self.rank = _topological_ranks(order, self.producers, self.readers)

    def depends_on(self, group: Group, other: Group) -> bool:
        """Whether ``group`` reads, directly or through other kernels, a result of ``other``.

        The walk goes back from ``group`` through kernels ranked above ``other``, the lowest
        ranked first: a dependence between kernels far apart (an activation read in the
        forward pass and again in the backward pass) is found in a few steps."""
        floor = self.rank[other]
        if self.rank[group] <= floor:
            return False
        stack, seen = [group], {group}
        rank = self.rank.__getitem__
        while stack:
            found = [p for p in self.producers[stack.pop()] if p not in seen and rank(p) >= floor]
            if other in found:
                return True
            found.sort(key=rank, reverse=True)
            seen.update(found)
            stack.extend(found)
        return False

    def connected(self, first: Group, second: Group) -> bool:
        return self.depends_on(first, second) or self.depends_on(second, first)

    def merge(self, first: Group, second: Group) -> None:
        """Make ``first`` also stand for ``second`` (already absorbed into it), which must not
        depend on it in either direction; ``second`` leaves the graph."""
        low, high = (first, second) if self.rank[first] < self.rank[second] else (second, first)
        after = self._reach(low, self.readers, lambda r: r < self.rank[high])
        before = self._reach(high, self.producers, lambda r: r > self.rank[low])
        slots = sorted(self.rank[g] for g in (low, high, *after, *before))
        moved = [*sorted(before, key=self.rank.__getitem__), first, *sorted(after, key=self.rank.__getitem__)]
        for group, slot in zip(moved, slots, strict=False):
            self.rank[group] = slot
        for producer in self.producers.pop(second):
            self.readers[producer].discard(second)
            if producer is not first:
                self.readers[producer].add(first)
                self.producers[first].add(producer)
        for reader in self.readers.pop(second):
            self.producers[reader].discard(second)
            if reader is not first:
                self.producers[reader].add(first)
                self.readers[first].add(reader)
        del self.rank[second]

    def _reach(self, start: Group, edges: dict[Group, set[Group]], inside) -> set[Group]:
        """The groups reachable from ``start`` along ``edges`` whose rank is ``inside`` the window."""
        found: set[Group] = set()
        stack = [start]
        while stack:
            for nxt in edges[stack.pop()]:
                if nxt not in found and inside(self.rank[nxt]):
                    found.add(nxt)
                    stack.append(nxt)
        return found


def _topological_ranks(
    order: list[Group], producers: dict[Group, set[Group]], readers: dict[Group, set[Group]]
) -> dict[Group, int]:
    """A rank per group, every producer before its readers; of the groups whose producers
    are ranked, the one whose last node comes first in the graph next (so that kernels
    close in the graph are close in rank, and walks between them short)."""
    waiting = {group: len(producers[group]) for group in order}
    index = {group: (group.last, k) for k, group in enumerate(order)}
    ready = [(index[g], g) for g in order if waiting[g] == 0]
    heapq.heapify(ready)
    rank: dict[Group, int] = {}
    while ready:
        _, group = heapq.heappop(ready)
        rank[group] = len(rank)
        for reader in readers[group]:
            waiting[reader] -= 1
            if waiting[reader] == 0:
                heapq.heappush(ready, (index[reader], reader))
    if len(rank) != len(order):
        raise AssertionError("fusion groups depend on each other in a cycle")
    return rank
