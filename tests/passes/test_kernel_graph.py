"""The kernel graph's dependence answers and topological ranks against a brute-force walk of
the same kernels, on random DAGs of kernels merged at random (as sibling fusion merges them)."""

from __future__ import annotations

import random

import pytest

from braze.ir.dtypes import float32
from braze.ir.graph import Node, parameter
from braze.ir.primitive import Aval
from braze.ir.prims.elementwise import add, neg
from braze.passes.kernel_graph import Group, KernelGraph, external_inputs

AVAL = Aval((2,), float32)


def random_kernels(rng: random.Random, count: int) -> tuple[list[Group], dict[int, Group]]:
    """``count`` one-node kernels, each reading one or two earlier kernels (or the input)."""
    nodes = [parameter(0, AVAL)]
    while len(nodes) <= count:
        picks = rng.sample(nodes, min(len(nodes), rng.choice((1, 2))))
        node = Node.make(add if len(picks) == 2 else neg, tuple(picks), {}, AVAL)
        if node not in nodes:  # nodes are hash-consed: the same op of the same inputs is one node
            nodes.append(node)
    groups, owner = [], {}
    for position, node in enumerate(nodes[1:], start=1):
        group = Group("loop")
        group.add(node, position)
        groups.append(group)
        owner[id(node)] = group
    return groups, owner


def brute_depends(group: Group, other: Group, owner: dict[int, Group]) -> bool:
    stack, seen = [group], {id(group)}
    while stack:
        for i in external_inputs(stack.pop()):
            producer = owner.get(id(i))
            if producer is other:
                return True
            if producer is not None and id(producer) not in seen:
                seen.add(id(producer))
                stack.append(producer)
    return False


@pytest.mark.parametrize("seed", range(40))
def test_dependence_and_ranks_stay_exact_as_kernels_merge(seed):
    rng = random.Random(seed)
    groups, owner = random_kernels(rng, rng.randint(5, 40))
    kernels = KernelGraph(groups, owner)
    alive = list(groups)
    for _ in range(len(groups)):
        for a in alive:
            for b in alive:
                if a is not b:
                    assert kernels.depends_on(a, b) == brute_depends(a, b, owner)
                    if kernels.depends_on(a, b):
                        assert kernels.rank[b] < kernels.rank[a]
        unconnected = [(a, b) for a in alive for b in alive if a is not b and not kernels.connected(a, b)]
        if not unconnected:
            break
        first, second = rng.choice(unconnected)
        first.absorb(second)
        for m in second.members:
            owner[id(m)] = first
        kernels.merge(first, second)
        alive.remove(second)
    assert set(kernels.rank) == set(alive)
