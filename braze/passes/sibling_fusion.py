"""Multi-output fusion of siblings: loop kernels of one shape that read the same input
share one loop (relu and its mask), and so do reductions of one input shape and axes where
the backend computes several in one loop (a batch norm's gradient sums), unless one
depends on the other. A scalar parameter, which most kernels read, makes siblings only of
kernels that write results of the graph: an optimizer's updates of the parameters of one
shape, which share nothing else where the step's hyperparameters are the graph's inputs
(a lazy step's lifted scalars), share one loop as they do where those are computed in the
graph (a jitted step's).

Inputs are visited in the order of the kernels reading them, and at each input every pair
of its readers in kernel order, each first kernel absorbing every later one it may; a merge
gives the merged kernel its second's inputs, visited in their turn. Dependence between
the readers of one input is known at once from bit sets of their ancestors and
descendants among those readers, computed by one walk of the kernels between them and kept
exact as they merge; the kernel graph's topological order bounds every walk.
"""

from __future__ import annotations

from collections.abc import Iterator

from braze.ir.graph import Node
from braze.ir.primitive import Category
from braze.passes.fusion_policy import FusionPolicy, per_element_ops, unlike_shapes
from braze.passes.kernel_graph import Group, KernelGraph, external_inputs


def _is_key(node: Node) -> bool:
    """Inputs whose readers may merge: not scalar parameters, which every kernel reads
    (but for kernels that write the graph's results, see ``_Siblings``)."""
    return node.op.category is not Category.PARAMETER or node.aval.size > 1


def _bits(value: int) -> Iterator[int]:
    while value:
        low = value & -value
        yield low.bit_length() - 1
        value ^= low


class _Siblings:
    def __init__(
        self,
        groups: list[Group],
        owner: dict[int, Group],
        kernels: KernelGraph,
        policy: FusionPolicy,
        results: set[int],
    ):
        self.owner, self.kernels, self.policy = owner, kernels, policy
        self.index = {g: k for k, g in enumerate(groups)}
        self.keys = {g: policy.sibling_key(g.kind, g.members[0]) for g in groups}
        self.loops = [g for g in groups if self.keys[g] is not None]
        self.inputs = {g: external_inputs(g) for g in self.loops}
        self.input_ids = {g: {id(i) for i in self.inputs[g]} for g in self.loops}
        self.writers = {g for g in self.loops if any(id(m) in results for m in g.members)}
        self.readers: dict[int, set[Group]] = {}
        for group in self.loops:
            for i in self.inputs[group]:
                if _is_key(i) or group in self.writers:
                    self.readers.setdefault(id(i), set()).add(group)
        self.removed: set[Group] = set()
        self.refusals: list[str] = []

    def run(self) -> None:
        visited: dict[int, None] = {}
        for group in self.loops:
            if group in self.removed:
                continue
            inputs = self.inputs[group]
            k = 0
            while k < len(inputs):  # grows as the group absorbs siblings
                node = inputs[k]
                k += 1
                # the readers that may become siblings (a merged group, where either was)
                if id(node) in visited or group not in self.readers.get(id(node), ()):
                    continue
                visited[id(node)] = None
                self._merge_readers(self._readers_of(id(node)))
        for key in visited:  # the kernels as they end up: which of them could not share a loop
            self._note_unlike_shapes([g.members[0].aval.shape for g in self._readers_of(key) if g.kind == "loop"])

    def _readers_of(self, key: int) -> list[Group]:
        return sorted(self.readers[key], key=self.index.__getitem__)

    def _merge_readers(self, readers: list[Group]) -> None:
        keys = [self.keys[g] for g in readers]
        classes: dict[tuple, list[int]] = {}
        for k, key in enumerate(keys):
            classes.setdefault(key, []).append(k)
        candidates = sorted(k for ks in classes.values() if len(ks) > 1 for k in ks)
        if not candidates:
            return
        groups = [readers[k] for k in candidates]
        closure = _Closure(groups, self.kernels) if len(groups) > _PAIRWISE else _Pairs(groups, self.kernels)
        for a in range(len(groups)):
            if closure.gone(a):
                continue
            key, shape = keys[candidates[a]], groups[a].members[0].aval.shape
            held = per_element_ops(groups[a].members)
            for b in range(a + 1, len(groups)):
                if held >= self.policy.max_fused_ops:
                    # Full: no later sibling can join it (a fan of many sums stays linear).
                    self.refusals.append(self.policy.siblings(shape, held + 1, lambda: False).reason)
                    break
                if closure.gone(b) or keys[candidates[b]] != key:
                    continue
                ops = held + per_element_ops(groups[b].members)
                decision = self.policy.siblings(shape, ops, lambda a=a, b=b: closure.connected(a, b))
                if not decision.ok:
                    self.refusals.append(decision.reason)
                    continue
                closure.merge(a, b)
                self._merge(groups[a], groups[b])
                held = ops

    def _note_unlike_shapes(self, shapes: list[tuple[int, ...]]) -> None:
        """One refusal per pair of distinct shapes with a reader of the first before one of the second."""
        first: dict[tuple[int, ...], int] = {}
        last: dict[tuple[int, ...], int] = {}
        for k, shape in enumerate(shapes):
            first.setdefault(shape, k)
            last[shape] = k
        for s in first:
            for t in first:
                if s != t and first[s] < last[t]:
                    self.refusals.append(unlike_shapes(s, t).reason)

    def _merge(self, first: Group, second: Group) -> None:
        first.absorb(second)
        for m in second.members:
            if self.owner.get(id(m)) is second:
                self.owner[id(m)] = first
        self.kernels.merge(first, second)
        for i in self.inputs.pop(second):
            if second in self.readers.get(id(i), ()):
                self.readers[id(i)].discard(second)
                self.readers[id(i)].add(first)
            if id(i) not in self.input_ids[first]:
                self.input_ids[first].add(id(i))
                self.inputs[first].append(i)
        self.removed.add(second)


# Up to this many siblings of one input, each question walks the kernel graph; beyond, one
# walk between the first and the last of them answers every question.
_PAIRWISE = 4


class _Pairs:
    """Which of a few groups depend on which, asked of the kernel graph pair by pair."""

    def __init__(self, groups: list[Group], kernels: KernelGraph) -> None:
        self.groups, self.kernels = groups, kernels
        self.merged: set[int] = set()

    def gone(self, k: int) -> bool:
        return k in self.merged

    def connected(self, a: int, b: int) -> bool:
        return self.kernels.connected(self.groups[a], self.groups[b])

    def merge(self, a: int, b: int) -> None:
        self.merged.add(b)


class _Closure:
    """Which of some groups depend on which, as bit sets over their positions, exact under
    merges: a merged group stands at its first's position and owns both positions' bits."""

    def __init__(self, groups: list[Group], kernels: KernelGraph) -> None:
        bit = {g: 1 << k for k, g in enumerate(groups)}
        low = min(kernels.rank[g] for g in groups)
        high = max(kernels.rank[g] for g in groups)
        ancestors = _reach_bits(groups, kernels.producers, bit, lambda r: r >= low, kernels.rank)
        descendants = _reach_bits(groups, kernels.readers, bit, lambda r: r <= high, kernels.rank)
        self.ancestors = [ancestors[g] for g in groups]
        self.descendants = [descendants[g] for g in groups]
        self.own = [bit[g] for g in groups]
        self.alive = (1 << len(groups)) - 1

    def gone(self, k: int) -> bool:
        return not self.alive >> k & 1

    def connected(self, a: int, b: int) -> bool:
        return bool(self.ancestors[b] & self.own[a] or self.ancestors[a] & self.own[b])

    def merge(self, a: int, b: int) -> None:
        own = self.own[a] | self.own[b]
        ancestors = self.ancestors[a] | self.ancestors[b]
        descendants = self.descendants[a] | self.descendants[b]
        for x in _bits(descendants & self.alive):
            self.ancestors[x] |= ancestors | own
        for y in _bits(ancestors & self.alive):
            self.descendants[y] |= descendants | own
        self.own[a], self.ancestors[a], self.descendants[a] = own, ancestors, descendants
        self.alive &= ~(1 << b)


def _reach_bits(groups, edges, bit, inside, rank) -> dict[Group, int]:
    """For each group, the bits of ``groups`` reachable from it along ``edges`` (walking only
    groups whose rank is ``inside`` the window), memoized over the walk."""
    memo: dict[Group, int] = {}
    for root in groups:
        stack: list[tuple[Group, bool]] = [(root, False)]
        while stack:
            group, expanded = stack.pop()
            if group in memo:
                continue
            nexts = [n for n in edges[group] if inside(rank[n])]
            if not expanded:
                stack.append((group, True))
                stack.extend((n, False) for n in nexts if n not in memo)
                continue
            found = 0
            for n in nexts:
                found |= memo[n] | bit.get(n, 0)
            memo[group] = found
    return memo


def merge_siblings(
    groups: list[Group], owner: dict[int, Group], kernels: KernelGraph, policy: FusionPolicy, results: set[int]
) -> tuple[list[Group], list[str]]:
    """The groups after sibling fusion (merged ones gone, ``owner`` and ``kernels`` updated),
    and the refusals' reasons; ``results``: the ids of the graph's results."""
    siblings = _Siblings(groups, owner, kernels, policy, results)
    siblings.run()
    return [g for g in groups if g not in siblings.removed], siblings.refusals
