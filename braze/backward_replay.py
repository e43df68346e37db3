"""Replaying a lazy backward pass instead of running its VJP rules again.

On a lazy device a training step records the same forward graph every time, so its backward
pass binds the same ops every time: running the VJP rules (through the op library's
broadcasting, scalar and bookkeeping code) is about a third of a lazy step's Python time.
The first backward over a gradient graph of a given structure is run normally while its
binds are recorded as a program over *slots*: the seed, then every value the gradient graph
saved (each node's inputs and output), then each recorded op's result. A later backward over
a graph of the same structure binds that program onto this step's saved values as one
expression (``lazy.call``), whose graph is the one the rules' expressions would make; the
first backward's gradients are bound the same way, so every step's trace is the same and
the step compiles once.

The structure key holds, per node, the primitive, its attributes, its input and output types,
which of its parents take gradients, and which saved values are the same expression
(``x * x`` and ``x * y`` differ), and which nodes and leaves the gradients are for (every
leaf, or the arguments of a ``grad``: only the rules on their way run). VJP rules depend on
nothing else: they never read a lazy value. A backward whose rules read something outside
the slots (a tensor made from NumPy data) is never recorded and keeps running its rules.
A backward that is itself recorded for a higher derivative, or that pushes tangents, runs
its rules: only they record gradient edges and tangents.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from braze.replay import Recorded, record
from braze.runtime import metrics
from braze.runtime.cache import BoundedCache
from braze.tensor import GradNode, Tensor, unheard

if TYPE_CHECKING:
    from braze.autodiff import Targets

Cotangents = dict[int, tuple[Any, Tensor]]  # id of a leaf (or a target's node) -> (it, its gradient)


class Program:
    """A recorded backward: its ops over the slots, and whose gradient each result is."""

    __slots__ = ("recorded", "owners", "reached")

    def __init__(self, recorded: Recorded | None, owners: list[int], reached: list[int]) -> None:
        self.recorded = recorded  # the gradients found, in the order the rules produced them
        self.owners = owners  # each gradient's owner: a node's position, or -1 - k for leaf k
        self.reached = reached  # the nodes whose saved values the rules used


_UNRECORDABLE = Program(None, [], [])
_PROGRAMS: BoundedCache[tuple, Program] = BoundedCache(64)


def _structure(order: list[GradNode], seed: Tensor, targets: Targets | None) -> tuple[tuple, list, list[Tensor]] | None:
    """(key, slots, leaves) of a gradient graph, or None when a saved value was released."""
    slot_of: dict[Any, int] = {seed._value: 0}
    slots: list[Any] = [seed._value]
    leaves: list[Tensor] = []
    leaf_of: dict[int, int] = {}
    node_of = {id(node): i for i, node in enumerate(order)}
    entries: list[Any] = [seed._aval]
    for node in order:
        if node.in_values is None:
            return None
        codes = []
        for value in (*node.in_values, node.out_value):
            k = slot_of.get(value)
            if k is None:
                k = slot_of[value] = len(slots)
                slots.append(value)
            codes.append(k)
        parents = []
        for parent in node.parents:
            if parent is None:
                parents.append(None)
            elif isinstance(parent, GradNode):
                parents.append(node_of[id(parent)])
            else:
                k = leaf_of.get(id(parent))
                if k is None:
                    k = leaf_of[id(parent)] = len(leaves)
                    leaves.append(parent)
                parents.append(-1 - k)
        signature = getattr(node.out_value, "signature", None)
        what = (
            signature  # names the primitive, its attributes and input types, as the next three would
            if signature is not None
            else (node.primitive, tuple(node.attrs.items()), tuple(node.in_avals), node.out_aval)
        )
        entries.append((what, tuple(codes), tuple(parents)))
    if targets is not None:
        wanted = [i for i, node in enumerate(order) if id(node) in targets.nodes]
        wanted += [-1 - k for k, leaf in enumerate(leaves) if id(leaf) in targets.leaves]
        entries.append(tuple(wanted))
    return tuple(entries), slots, leaves


def cotangents(
    order: list[GradNode],
    seed: Tensor,
    retain_graph: bool,
    targets: Targets | None,
    walk: Callable[[list[int] | None], Cotangents],
) -> Cotangents:
    """The gradients of a lazy backward (of every leaf, or of the targets):
    ``walk(reached)`` (the VJP rules) the first time a structure is seen, its recorded
    program afterwards. While a recorder listens (a loop body being traced), the rules
    run: a replay would bind past it."""
    found = _structure(order, seed, targets) if unheard() else None
    if found is None:
        return walk(None)
    key, slots, leaves = found
    try:
        program = _PROGRAMS.get(key)
    except TypeError:  # an unhashable attribute value: never recorded
        return walk(None)
    if program is None:
        program, result = _record(slots, order, leaves, walk)
        _PROGRAMS.put(key, program)
        if program is _UNRECORDABLE:
            return result
        # Bound as later steps bind it, so that the first step's trace is theirs (one compile).
    elif program is _UNRECORDABLE:
        return walk(None)
    else:
        metrics.count("BackwardReplay")
    if not retain_graph:
        for i in program.reached:  # as the rules would: activations are freed, old parameters lose a holder
            order[i].in_values = order[i].out_value = None
    owners = [order[k] if k >= 0 else leaves[-1 - k] for k in program.owners]
    grads = program.recorded.bind(slots, seed.device)
    return {id(owner): (owner, grad) for owner, grad in zip(owners, grads, strict=True)}


def _record(
    slots: list, order: list[GradNode], leaves: list[Tensor], walk: Callable[[list[int] | None], Cotangents]
) -> tuple[Program, Cotangents]:
    """Run ``walk`` while noting its binds; turn them into a program."""
    reached: list[int] = []
    inputs = len(slots)
    ops, slot_of, result = record(slots, lambda: walk(reached))
    if ops is None:
        return _UNRECORDABLE, result
    found = [slot_of.get(grad._value) for _, grad in result.values()]
    if None in found:
        return _UNRECORDABLE, result
    owner_code = {id(leaf): -1 - k for k, leaf in enumerate(leaves)}
    owner_code.update((id(node), i) for i, node in enumerate(order))
    recorded = Recorded(ops, inputs, [(s, grad._aval) for (_, grad), s in zip(result.values(), found, strict=True)])
    return Program(recorded, [owner_code[owner_id] for owner_id in result], reached), result
