"""Fusion mechanics: turn the groups the policy chose into ``fusion`` nodes.

Five phases, each driven by ``fusion_policy``: output fusion (bias, activation and scaling
join the dot or conv that produces them), producer fusion in reverse topological order
(elementwise and movement producers join the loop or reduction kernel that alone reads
them), loop kernels joining the epilogue of the product they read where the backend takes
them (``epilogue_loops``), multi-output fusion of sibling loop kernels that read the same
input, and, where the backend writes them, row kernels (``row_fusion``: a layer norm or a softmax, one kernel). Each
group becomes one ``fusion`` node whose computation is the group's subgraph; results read
outside the group become its outputs.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from braze.ir.graph import Graph, Node, parameter
from braze.ir.primitive import Category
from braze.ir.prims.fusion import fusion, get_element
from braze.ir.prims.sources import constant
from braze.passes.epilogue_loops import EpilogueContext, merge_epilogue_loops
from braze.passes.fusion_policy import TARGET_INDEPENDENT, YES, Decision, FusionPolicy, no
from braze.passes.kernel_graph import Group, KernelGraph, external_inputs
from braze.passes.operand_views import VIEW_OPS, OperandViews
from braze.passes.row_fusion import RowContext, merge_rows
from braze.passes.sibling_fusion import merge_siblings


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
    they are results of the graph or operands of a collective or a loop, which read them
    from buffers: those are kernels too)."""
    outputs = {id(o) for o in graph.outputs}
    position = {id(n): k for k, n in enumerate(graph.nodes())}
    users = _users(graph)

    def inlined(node: Node) -> bool:
        return (
            node.op is constant
            and not node.shape
            and id(node) not in outputs
            and not any(policy.kind_of_root(u) in ("collective", "control") for u in users[id(node)])
        )

    groups = []
    shared: dict[int, list[Group]] = {}
    for node in graph.nodes():
        if node.op.category is Category.PARAMETER or inlined(node) or node.op is get_element:
            continue
        groups.append(_group(policy.kind_of_root(node), node, position))
        _take_results(groups[-1], node, users[id(node)], position)
    for group in groups:
        if group.kind in ("collective", "control"):
            continue  # the transport (a loop) reads its operand from a buffer, even a scalar constant's
        for i in group.members[0].inputs:
            if inlined(i):
                shared.setdefault(id(i), []).append(group)
                group.add(i, position[id(i)])
    return Plan(groups, shared, [])


def _take_results(group: Group, node: Node, users: list[Node], position: dict[int, int]) -> list[Node]:
    """The get_element readers of a loop's results join the loop's group: the kernel that
    runs the loop has those results as its own."""
    elements = [u for u in users if u.op is get_element] if node.op.category is Category.LOOP else []
    for element in elements:
        group.add(element, position[id(element)])
    return elements


def _group(kind: str, root: Node, position: dict[int, int]) -> Group:
    group = Group(kind)
    group.add(root, position[id(root)])
    return group


def plan_fusion(graph: Graph, policy: FusionPolicy = TARGET_INDEPENDENT) -> Plan:
    nodes = graph.nodes()
    users = _users(graph)
    outputs = {id(o) for o in graph.outputs}
    owner: dict[int, Group] = {}
    shared: dict[int, list[Group]] = {}
    groups: list[Group] = []
    refusals: list[str] = []

    position = {id(n): k for k, n in enumerate(nodes)}
    positions = Positions(policy.max_positions)

    def kernel_of(node: Node) -> Node | None:
        group = owner.get(id(node))
        return group.members[0] if group is not None else None

    def join(group: Group, node: Node) -> None:
        group.add(node, position[id(node)])
        owner[id(node)] = group

    for node in nodes:
        if policy.takes_epilogue(node):
            group = _group("output", node, position)
            groups.append(group)
            owner[id(node)] = group
            current = node

            def independent(other: Node, group: Group = group) -> bool:
                return not _reaches(other, group, users, position)

            summed = None  # a second result of the kernel, summed as it stores
            while True:
                readers = users[id(current)]
                if summed is None:
                    summed = policy.epilogue_sum(node, current, readers)
                # Past the sum the epilogue goes on (an autocast step rounds the bias
                # gradient's operand to bfloat16 for the filter gradient).
                rest = [u for u in readers if u is not summed]
                user, decision = policy.epilogue(current, rest, id(current) in outputs, independent, kernel_of)
                if user is None:
                    refusals.append(decision.reason)
                    break
                join(group, user)
                current = user
            if summed is not None:
                join(group, summed)

    views = OperandViews(users, owner, policy)
    for node in reversed(nodes):
        if node.op.category is Category.PARAMETER or id(node) in owner or node.op is get_element:
            continue  # a get_element reads a loop's results: it joins the loop's group
        result = id(node) in outputs
        viewing = views.read_through(node) if node.op in VIEW_OPS and not result else None
        if viewing is not None:
            shared[id(node)] = viewing
            for group in viewing:
                group.add(node, position[id(node)])
            continue
        reader_groups: dict[int, Group | None] = {}
        for u in users[id(node)]:
            for group in shared.get(id(u)) or [owner.get(id(u))]:
                reader_groups[id(group)] = group
        if users[id(node)] and None not in reader_groups.values() and not views.read_by_view(node):
            if not result and len(reader_groups) == 1:
                (group,) = reader_groups.values()
                readers = [u for u in users[id(node)] if owner.get(id(u)) is group]
                decision = policy.should_fuse(node, group.members, group.kind, readers)
                if decision.ok:
                    decision = positions.admit(node, group, readers)
                if decision.ok:
                    join(group, node)
                    continue
                refusals.append(decision.reason)
            if not result and _recomputed(node, reader_groups, users, owner, shared, policy, positions):
                shared[id(node)] = list(reader_groups.values())
                for group in shared[id(node)]:
                    group.add(node, position[id(node)])
                continue
            # Producer multi-output fusion: a reader's kernel computes it and also writes it
            # out, for the kernels that read it or as a result of the graph (an optimizer's
            # new moments, which its update of the parameter reads).
            writer = _writing_reader(node, reader_groups, users, owner, policy, position[id(node)], positions, shared)
            if writer is not None:
                join(writer, node)
                continue
            if not result and len(reader_groups) > 1:
                refusals.append(f"{node.op} {node.aval} is read by {len(reader_groups)} kernels; it is computed once")
        group = _group(policy.kind_of_root(node), node, position)
        groups.append(group)
        owner[id(node)] = group
        for element in _take_results(group, node, users[id(node)], position):
            owner[id(element)] = group

    refusals += views.refusals
    kernels = KernelGraph(groups, owner)
    context = EpilogueContext(position, shared)
    groups, epilogue_refusals = merge_epilogue_loops(groups, owner, kernels, policy, context)
    refusals += epilogue_refusals
    groups, sibling_refusals = merge_siblings(groups, owner, kernels, policy, outputs)
    refusals += sibling_refusals
    if policy.row_kernels:
        groups, row_refusals = merge_rows(groups, owner, kernels, RowContext(users, outputs, set(shared)), policy)
        refusals += row_refusals
    return Plan(groups, shared, refusals)


def _reaches(node: Node, group: Group, users: dict[int, list[Node]], position: dict[int, int]) -> bool:
    """Whether ``node`` is or depends on a member of ``group``: whether it is reached going
    forward from the readers of the group's members outside it (an epilogue's members have
    one reader each, the next, so that is the op the epilogue would take next), never past
    ``node``'s topological position."""
    if node in group:
        return True
    limit = position[id(node)]
    stack = [u for m in group.members for u in users[id(m)] if u not in group]
    seen: set[int] = set()
    while stack:
        current = stack.pop()
        if current is node:
            return True
        if id(current) in seen or position[id(current)] > limit:
            continue
        seen.add(id(current))
        stack.extend(users[id(current)])
    return False


class Positions:
    """Where in its kernel each fused value is computed: a kernel computes a value once per
    element for each distinct way its readers index it (an elementwise reader at the
    element's own position, a slice or a concatenation at a position of its own, each one
    more evaluation of everything the value is computed from). Each member's ways are
    recorded as the paths of index-changing readers from the kernel's results; a producer
    whose ways would pass ``limit`` is not fused, but written out by a kernel of its own.
    Without that bound a scan written by doubling (``x[s:] + x[:-s]``, s = 1, 2, 4...)
    fused into one kernel that computed its first value 2^depth times per element: 2 MB
    of C at depth 8, minutes of compiling at 12."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._ways: dict[tuple[int, int], frozenset[tuple]] = {}

    def admit(self, node: Node, group: Group, readers: list[Node]) -> Decision:
        """Record ``node``'s ways in ``group`` (read there by ``readers``) if within the limit."""
        ways: set[tuple] = set()
        for reader in readers:
            theirs = self._ways.get((id(group), id(reader)), frozenset({()}))
            if reader.op.elementwise:
                ways |= theirs
            else:
                slots = [k for k, i in enumerate(reader.inputs) if i is node]
                ways |= {path + ((id(reader), k),) for path in theirs for k in slots}
            if len(ways) > self.limit:
                return no(
                    f"{node.op} {node.aval} would be computed at more than {self.limit} positions per element of "
                    f"its kernel: it is written out"
                )
        self._ways[(id(group), id(node))] = frozenset(ways)
        return YES

    def at_own_element(self, group: Group, readers: list[Node]) -> bool:
        """Whether ``readers`` (members of ``group``) read their operand only at the element
        the kernel computes, so that the operand computed there can be stored as a result."""
        own = frozenset({()})
        return all(r.op.elementwise and self._ways.get((id(group), id(r)), own) == own for r in readers)


def _recomputed(
    node: Node,
    reader_groups: dict,
    users,
    owner: dict[int, Group],
    shared: dict[int, list[Group]],
    policy,
    positions: Positions,
) -> bool:
    """Whether ``node`` is computed in each kernel that reads it (its reader groups), as
    the policy allows for free values always and for cheap ones read by a few kernels."""
    if any(policy.reads_buffers(u) for u in users[id(node)]):
        return False
    free = policy.is_free_to_duplicate(node)
    if not free and not policy.recomputes_in_readers(node, users[id(node)], len(reader_groups)):
        return False
    for group in reader_groups.values():
        readers = [u for u in users[id(node)] if owner.get(id(u)) is group or group in shared.get(id(u), ())]
        if not free and not policy.should_fuse(node, group.members, group.kind, readers).ok:
            return False
        if not positions.admit(node, group, readers).ok:
            return False
    return True


def _writing_reader(
    node: Node,
    reader_groups: dict,
    users,
    owner: dict[int, Group],
    policy: FusionPolicy,
    start: int,
    positions: Positions,
    shared: dict[int, list[Group]],
) -> Group | None:
    """The one kernel among ``node``'s readers that may compute it for all of them, writing
    it out as one more result: the reduction kernel over it where one reads it (its loop
    runs over ``node``'s elements), else a loop kernel of its shape that reads it at the
    element it computes (a GELU's erf, kept for the backward pass, and the product that
    reads it: one pass over the activations instead of two)."""
    reductions = [
        g for g in reader_groups.values() if g.kind == "input" and g.members[0].op.category is Category.REDUCTION
    ]
    if reductions:
        # its extra output is written from the reduction's loop, so it must share its shape
        fits = len(reductions) == 1 and node.shape == reductions[0].members[0].inputs[0].shape
        candidates = reductions if fits else []
    else:
        candidates = [g for g in reader_groups.values() if g.kind == "loop" and g.members[0].shape == node.shape]
    for group in candidates:
        # its readers there, with those recomputed in the kernel (a free broadcast of it)
        readers = [u for u in users[id(node)] if owner.get(id(u)) is group or group in shared.get(id(u), ())]
        if not policy.should_fuse(node, group.members, group.kind, readers).ok:
            continue
        if group.kind == "loop" and not positions.at_own_element(group, readers):
            continue
        if any(_depends_on(group, other, owner, start) for other in reader_groups.values() if other is not group):
            continue
        if group.kind == "loop":
            positions.admit(node, group, readers)
        return group
    return None


def _depends_on(group: Group, other: Group, owner: dict[int, Group], start: int) -> bool:
    """Whether ``group`` reads, directly or through kernels formed so far, a result of
    ``other``. Kernels are being formed from the graph's end back to position ``start``:
    every result read of a kernel holding a node after it comes after it, so a kernel whose
    nodes all come before it leads nowhere and the walk skips it."""
    stack, seen = [group], {id(group)}
    while stack:
        current = stack.pop()
        for i in external_inputs(current):
            producer = owner.get(id(i))
            if producer is other:
                return True
            if producer is not None and id(producer) not in seen and producer.last > start:
                seen.add(id(producer))
                stack.append(producer)
    return False


def _schedule(groups: list[Group], order: dict[int, int]) -> list[Group]:
    """Groups in an order where every group comes after the groups whose results it reads:
    of the groups ready to run, always the one whose earliest node comes first."""
    producer = {id(m): g for g in groups for m in g.members}
    needs: dict[int, set[int]] = {}
    readers: dict[int, list[Group]] = {id(g): [] for g in groups}
    for group in groups:
        needs[id(group)] = {id(producer[id(i)]) for i in external_inputs(group) if id(i) in producer}
        needs[id(group)].discard(id(group))
        for needed in needs[id(group)]:
            readers[needed].append(group)
    key = {id(g): (min(order[id(m)] for m in g.members), k) for k, g in enumerate(groups)}
    ready = [(key[id(g)], g) for g in groups if not needs[id(g)]]
    heapq.heapify(ready)
    result: list[Group] = []
    while ready:
        _, group = heapq.heappop(ready)
        result.append(group)
        for reader in readers[id(group)]:
            needs[id(reader)].discard(id(group))
            if not needs[id(reader)]:
                heapq.heappush(ready, (key[id(reader)], reader))
    if len(result) != len(groups):
        raise AssertionError("fusion groups depend on each other in a cycle")
    return result


def fuse(graph: Graph, enabled: bool = True, policy: FusionPolicy = TARGET_INDEPENDENT) -> Graph:
    """Replace every kernel's worth of nodes by one ``fusion`` node, as ``policy`` decides
    (one node per kernel when fusion is disabled, which is how the compiled backends are
    tested unfused)."""
    plan = plan_fusion(graph, policy) if enabled else plan_singletons(graph, policy)
    order = {id(n): i for i, n in enumerate(graph.nodes())}
    # What other kernels read: a node recomputed in several kernels reads its operands in each.
    read_elsewhere = {id(i) for group in plan.groups for i in external_inputs(group)}
    graph_outputs = {id(o) for o in graph.outputs}
    value: dict[int, Node] = {id(p): p for p in graph.params}
    for group in _schedule(plan.groups, order):
        members = sorted(group.members, key=lambda n: order[id(n)])
        results = [
            m for m in members if id(m) not in plan.shared and (id(m) in graph_outputs or id(m) in read_elsewhere)
        ]
        inputs = external_inputs(group, members)
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
