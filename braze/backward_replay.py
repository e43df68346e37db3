"""Replaying a lazy backward pass instead of running its VJP rules again.

On a lazy device a training step records the same forward graph every time, so its backward
pass binds the same ops every time: running the VJP rules (through the op library's
broadcasting, scalar and bookkeeping code) is about a third of a lazy step's Python time.
The first backward over a gradient graph of a given structure is run normally while its
binds are recorded as a program over *slots*: the seed, then every value the gradient graph
saved (each node's inputs and output), then each recorded op's result. A later backward over
a graph of the same structure binds that program's ops straight onto this step's saved
values, which records exactly the expressions the rules would have: the same trace, so the
same compiled executable.

The structure key holds, per node, the primitive, its attributes, its input and output types,
which of its parents take gradients, and which saved values are the same expression
(``x * x`` and ``x * y`` differ). VJP rules depend on nothing else: they never read a lazy
value. A backward whose rules read something outside the slots (a tensor made from NumPy
data) is never recorded and keeps running its rules.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from braze.ir import primitive as prim_layer
from braze.runtime import metrics
from braze.runtime.cache import BoundedCache
from braze.tensor import GradNode, Tensor, executor_for

Cotangents = dict[int, tuple[Tensor, Tensor]]


class Program:
    """A recorded backward: ops over slots, and which slot holds each leaf's gradient."""

    __slots__ = ("ops", "results", "reached")

    def __init__(self, ops: list[tuple], results: list[tuple[int, int, Any]], reached: list[int]) -> None:
        self.ops = ops  # (primitive, attrs, input slots, aval, signature), each appending one slot
        self.results = results  # (leaf index, slot, aval), in the order the rules produced them
        self.reached = reached  # the nodes whose saved values the rules used


_UNRECORDABLE = Program([], [], [])
_PROGRAMS: BoundedCache[tuple, Program] = BoundedCache(64)
_RECORDING = threading.Lock()


def _structure(order: list[GradNode], seed: Tensor) -> tuple[tuple, list, list[Tensor]] | None:
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
    return tuple(entries), slots, leaves


def cotangents(
    order: list[GradNode], seed: Tensor, retain_graph: bool, walk: Callable[[list[int] | None], Cotangents]
) -> Cotangents:
    """The leaves' gradients of a lazy backward: ``walk(reached)`` (the VJP rules) the first
    time a structure is seen, its recorded program afterwards."""
    found = _structure(order, seed)
    if found is None:
        return walk(None)
    key, slots, leaves = found
    try:
        program = _PROGRAMS.get(key)
    except TypeError:  # an unhashable attribute value: never recorded
        return walk(None)
    if program is None:
        # Recording swaps the process-wide binder: one thread at a time (another runs the rules).
        if not _RECORDING.acquire(blocking=False):
            return walk(None)
        try:
            program, result = _record(slots, leaves, walk)
        finally:
            _RECORDING.release()
        _PROGRAMS.put(key, program)
        return result
    if program is _UNRECORDABLE:
        return walk(None)
    metrics.count("BackwardReplay")
    if not retain_graph:
        for i in program.reached:  # as the rules would: activations are freed, old parameters lose a holder
            order[i].in_values = order[i].out_value = None
    device = seed.device
    apply = executor_for(device).apply
    values = slots
    for primitive, attrs, inputs, aval, signature in program.ops:
        values.append(apply(primitive, [values[k] for k in inputs], attrs, aval, device, signature))
    return {id(leaves[k]): (leaves[k], Tensor._make(values[s], aval, device)) for k, s, aval in program.results}


def _record(
    slots: list, leaves: list[Tensor], walk: Callable[[list[int] | None], Cotangents]
) -> tuple[Program, Cotangents]:
    """Run ``walk`` while noting every bind this thread makes; turn the binds into a program."""
    log: list[tuple] = []
    thread = threading.get_ident()
    binder = prim_layer.current_binder()

    def recording(primitive: Any, args: tuple, attrs: dict, like: Any) -> Any:
        out = binder(primitive, args, attrs, like)
        if threading.get_ident() == thread:
            log.append((primitive, attrs, [a._value for a in args], out))
        return out

    reached: list[int] = []
    prim_layer.set_binder(recording)
    try:
        result = walk(reached)
    finally:
        prim_layer.set_binder(binder)
    slot_of = {value: k for k, value in enumerate(slots)}
    ops = []
    for primitive, attrs, inputs, out in log:
        codes = [slot_of.get(value) for value in inputs]
        if None in codes:
            return _UNRECORDABLE, result
        slot_of.setdefault(out._value, len(slots) + len(ops))
        ops.append((primitive, attrs, tuple(codes), out._aval, out._value.signature))
    leaf_index = {id(leaf): k for k, leaf in enumerate(leaves)}
    results = []
    for leaf_id, (_, grad) in result.items():
        s = slot_of.get(grad._value)
        if s is None:
            return _UNRECORDABLE, result
        results.append((leaf_index[leaf_id], s, grad._aval))
    return Program(ops, results, reached), result
