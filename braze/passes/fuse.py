"""Fusion mechanics: turn the groups the policy chose into ``fusion`` nodes.

Three phases, each driven by ``fusion_policy``: output fusion (bias, activation and scaling
join the dot or conv that produces them), producer fusion in reverse topological order
(elementwise and movement producers join the loop or reduction kernel that alone reads
them), and multi-output fusion of sibling loop kernels that read the same input. Each
group becomes one ``fusion`` node whose computation is the group's subgraph; results read
outside the group become its outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from braze.ir.graph import Graph, Node, parameter
from braze.ir.primitive import Category
from braze.ir.prims.fusion import fusion, get_element
from braze.ir.prims.sources import constant
from braze.passes.fusion_policy import TARGET_INDEPENDENT, FusionPolicy


@dataclass(eq=False)
class Group:
    kind: str
    members: list[Node] = field(default_factory=list)

    def add(self, node: Node) -> None:
        self.members.append(node)


@dataclass
class Plan:
    groups: list[Group]
    shared: dict[int, list[Group]]  # free-to-duplicate nodes and the groups that recompute them
    refusals: list[str]


def _users(graph: Graph) -> dict[int, list[Node]]:
    users: dict[int, list[Node]] = {id(n): [] for n in graph.nodes()}
    for node in graph.nodes():
        for i in dict.fromkeys(node.inputs):
            users[id(i)].append(node)
    return users


def plan_singletons(graph: Graph, policy: FusionPolicy = TARGET_INDEPENDENT) -> Plan:
    """No fusion: every op is a kernel of its own (scalar constants are still inlined, unless
    they are results of the graph: those are kernels too)."""
    outputs = {id(o) for o in graph.outputs}

    def inlined(node: Node) -> bool:
        return node.op is constant and not node.shape and id(node) not in outputs

    groups = []
    shared: dict[int, list[Group]] = {}
    for node in graph.nodes():
        if node.op.category is Category.PARAMETER or inlined(node):
            continue
        groups.append(Group(policy.kind_of_root(node), [node]))
    for group in groups:
        if group.kind == "collective":
            continue  # the transport reads its operand from a buffer, even a scalar constant's
        for i in group.members[0].inputs:
            if inlined(i):
                shared.setdefault(id(i), []).append(group)
                group.add(i)
    return Plan(groups, shared, [])


def plan_fusion(graph: Graph, policy: FusionPolicy = TARGET_INDEPENDENT) -> Plan:
    nodes = graph.nodes()
    users = _users(graph)
    outputs = {id(o) for o in graph.outputs}
    owner: dict[int, Group] = {}
    shared: dict[int, list[Group]] = {}
    groups: list[Group] = []
    refusals: list[str] = []

    position = {id(n): k for k, n in enumerate(nodes)}

    def kernel_of(node: Node) -> Node | None:
        group = owner.get(id(node))
        return group.members[0] if group is not None else None

    for node in nodes:
        if policy.takes_epilogue(node):
            group = Group("output", [node])
            groups.append(group)
            owner[id(node)] = group
            current = node

            def independent(other: Node, group: Group = group, start: int = position[id(node)]) -> bool:
                return not _reaches(other, {id(m) for m in group.members}, position, start)

            while True:
                user, decision = policy.epilogue(
                    current, users[id(current)], id(current) in outputs, independent, kernel_of
                )
                if user is None:
                    refusals.append(decision.reason)
                    break
                group.add(user)
                owner[id(user)] = group
                current = user
            summed = policy.epilogue_sum(node, current, users[id(current)])
            if summed is not None:  # a second result of the kernel, summed as it stores
                group.add(summed)
                owner[id(summed)] = group

    for node in reversed(nodes):
        if node.op.category is Category.PARAMETER or id(node) in owner:
            continue
        reader_groups: dict[int, Group | None] = {}
        for u in users[id(node)]:
            for group in shared.get(id(u)) or [owner.get(id(u))]:
                reader_groups[id(group)] = group
        if id(node) not in outputs and users[id(node)] and None not in reader_groups.values():
            if len(reader_groups) == 1:
                (group,) = reader_groups.values()
                readers = [u for u in users[id(node)] if owner.get(id(u)) is group]
                decision = policy.should_fuse(node, group.members, group.kind, readers)
                if decision.ok:
                    group.add(node)
                    owner[id(node)] = group
                    continue
                refusals.append(decision.reason)
            if policy.is_free_to_duplicate(node) and not any(policy.reads_buffers(u) for u in users[id(node)]):
                shared[id(node)] = list(reader_groups.values())
                for group in shared[id(node)]:
                    group.add(node)
                continue
            reduction = _reduction_reader(node, reader_groups, users, owner, policy)
            if reduction is not None:
                # Producer multi-output fusion: the reduction kernel computes it and also writes it out.
                reduction.add(node)
                owner[id(node)] = reduction
                continue
            if len(reader_groups) > 1:
                refusals.append(f"{node.op} {node.aval} is read by {len(reader_groups)} kernels; it is computed once")
        group = Group(policy.kind_of_root(node), [node])
        groups.append(group)
        owner[id(node)] = group

    groups = _merge_siblings(groups, owner, users, refusals, policy)
    return Plan(groups, shared, refusals)


def _reaches(node: Node, targets: set[int], position: dict[int, int], start: int) -> bool:
    """Whether ``node`` depends on any of ``targets``, none of which comes before ``start``
    in topological order (so the search stops there)."""
    stack, seen = [node], set()
    while stack:
        current = stack.pop()
        if id(current) in targets:
            return True
        if position[id(current)] < start or id(current) in seen:
            continue
        seen.add(id(current))
        stack.extend(current.inputs)
    return False


def _reduction_reader(
    node: Node, reader_groups: dict, users, owner: dict[int, Group], policy: FusionPolicy
) -> Group | None:
    """The one reduction kernel among ``node``'s readers that may compute it for all of them."""
    reductions = [
        g for g in reader_groups.values() if g.kind == "input" and g.members[0].op.category is Category.REDUCTION
    ]
    if len(reductions) != 1:
        return None
    group = reductions[0]
    if node.shape != group.members[0].inputs[0].shape:
        return None  # its extra output is written from the reduction's loop, so it must share its shape
    readers = [u for u in users[id(node)] if owner.get(id(u)) is group]
    if not policy.should_fuse(node, group.members, group.kind, readers).ok:
        return None
    others = [g for g in reader_groups.values() if g is not group]
    if any(_depends_on(group, other, owner) for other in others):
        return None
    return group


def _external_inputs(group: Group) -> list[Node]:
    inside = {id(m) for m in group.members}
    seen: dict[int, Node] = {}
    for member in group.members:
        for i in member.inputs:
            if id(i) not in inside:
                seen.setdefault(id(i), i)
    return list(seen.values())


def _depends_on(group: Group, other: Group, owner: dict[int, Group]) -> bool:
    """Whether ``group`` reads, directly or through other kernels, a result of ``other``."""
    stack, seen = [group], {id(group)}
    while stack:
        current = stack.pop()
        for i in _external_inputs(current):
            producer = owner.get(id(i))
            if producer is other:
                return True
            if producer is not None and id(producer) not in seen:
                seen.add(id(producer))
                stack.append(producer)
    return False


def _merge_siblings(
    groups: list[Group], owner: dict[int, Group], users, refusals: list[str], policy: FusionPolicy
) -> list[Group]:
    """Merge loop kernels of one shape that read the same input (e.g. relu and its mask)."""
    merged = True
    while merged:
        merged = False
        by_input: dict[int, list[Group]] = {}
        for group in groups:
            if group.kind != "loop":
                continue
            for i in _external_inputs(group):
                if i.op.category is not Category.PARAMETER or i.aval.size > 1:
                    by_input.setdefault(id(i), []).append(group)
        for readers in by_input.values():
            for a_index, first in enumerate(readers):
                for second in readers[a_index + 1 :]:
                    connected = _depends_on(first, second, owner) or _depends_on(second, first, owner)
                    decision = policy.siblings(first.members[0].aval.shape, second.members[0].aval.shape, connected)
                    if not decision.ok:
                        refusals.append(decision.reason)
                        continue
                    first.members.extend(m for m in second.members if m not in first.members)
                    for m in second.members:
                        if owner.get(id(m)) is second:
                            owner[id(m)] = first
                    groups = [g for g in groups if g is not second]
                    merged = True
                    break
                if merged:
                    break
            if merged:
                break
    return groups


def _topological(members: list[Node], order: dict[int, int]) -> list[Node]:
    return sorted(dict.fromkeys(members), key=lambda n: order[id(n)])


def _schedule(groups: list[Group], order: dict[int, int]) -> list[Group]:
    """Groups in an order where every group comes after the groups whose results it reads."""
    producer = {id(m): g for g in groups for m in g.members}
    pending = sorted(groups, key=lambda g: min(order[id(m)] for m in g.members))
    done: set[int] = set()
    result: list[Group] = []
    while pending:
        for group in pending:
            needed = {id(producer[id(i)]) for i in _external_inputs(group) if id(i) in producer}
            if needed <= done | {id(group)}:
                result.append(group)
                done.add(id(group))
                pending.remove(group)
                break
        else:
            raise AssertionError("fusion groups depend on each other in a cycle")
    return result


def fuse(graph: Graph, enabled: bool = True, policy: FusionPolicy = TARGET_INDEPENDENT) -> Graph:
    """Replace every kernel's worth of nodes by one ``fusion`` node, as ``policy`` decides
    (one node per kernel when fusion is disabled, which is how the compiled backends are
    tested unfused)."""
    plan = plan_fusion(graph, policy) if enabled else plan_singletons(graph, policy)
    order = {id(n): i for i, n in enumerate(graph.nodes())}
    users = _users(graph)
    graph_outputs = {id(o) for o in graph.outputs}
    value: dict[int, Node] = {id(p): p for p in graph.params}
    member_groups: dict[int, list[Group]] = {}
    for group in plan.groups:
        for m in group.members:
            member_groups.setdefault(id(m), []).append(group)
    for group in _schedule(plan.groups, order):
        members = _topological(group.members, order)
        inside = {id(m) for m in members}
        results = [
            m
            for m in members
            if id(m) not in plan.shared and (id(m) in graph_outputs or any(id(u) not in inside for u in users[id(m)]))
        ]
        inputs = _external_inputs(Group(group.kind, members))
        inner: dict[int, Node] = {id(i): parameter(k, i.aval) for k, i in enumerate(inputs)}
        for m in members:
            inner[id(m)] = Node.make(m.op, tuple(inner[id(i)] for i in m.inputs), m.attrs, m.aval)
        computation = Graph(tuple(inner[id(i)] for i in inputs), tuple(inner[id(r)] for r in results))
        avals = tuple(r.aval for r in results)
        kernel = Node.make(
            fusion,
            tuple(value[id(i)] for i in inputs),
            {"kind": group.kind, "computation": computation},
            avals[0] if len(avals) == 1 else avals,
        )
        for k, r in enumerate(results):
            value[id(r)] = kernel if len(results) == 1 else Node.make(get_element, (kernel,), {"index": k}, r.aval)
    fused = Graph(graph.params, tuple(value[id(o)] for o in graph.outputs), graph.donated)
    fused.notes = [f"fusion refused: {reason}" for reason in dict.fromkeys(plan.refusals)]
    return fused
