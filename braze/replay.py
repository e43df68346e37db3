"""Recording the binds a function makes as a program over *slots*, and replaying it.

On a lazy device a training step runs the same Python every step, and each op call goes
through the op library's broadcasting, scalar and bookkeeping code before it records one
expression. Where a computation's ops depend only on its inputs' types (a backward pass, an
optimizer's update rule), its first run can note every bind as (primitive, attributes,
input slots, output type, signature) over a list of slots: the given input values, then
each op's result. Binding that program's ops straight onto a later step's values records
exactly the expressions the code would have, for a fraction of the Python. A program
without gradient edges to record (``replayed``: a backward pass, a clipping, an optimizer's
update) is bound as one expression that the graph expands into those ops (``lazy.call``),
from its first run on, so every step's trace is the same and compiles once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from braze.ir import primitive as prim_layer
from braze.ir.primitive import Aval
from braze.lazy import Expr, Program, call, is_recording, liftable
from braze.ops.autocast import is_autocast_enabled
from braze.runtime import metrics
from braze.runtime.cache import BoundedCache
from braze.runtime.device import Device
from braze.tangents import LEVELS
from braze.tensor import GRAD_MODE, Tensor, unheard

R = TypeVar("R")


class Op(NamedTuple):
    """One recorded bind, which appends one slot: its result. ``cut`` (the operands cut
    from the gradient graph), ``enabled`` (the grad mode) and ``takes`` (whether the
    result takes gradients) are noted for a function's arguments (see ``record``)."""

    primitive: Any
    attrs: dict
    codes: tuple[int, ...]  # the operands' slots
    aval: Aval
    signature: int | None
    like: Any
    cut: tuple[int, ...]
    enabled: bool
    takes: bool


UNSEEN = object()  # a key never recorded


def record(
    slots: list, fn: Callable[[], R], arguments: list[Tensor] | None = None
) -> tuple[list[Op] | None, dict[Any, int], R]:
    """Run ``fn`` while noting every bind this thread makes, over ``slots`` (values that
    ``fn``'s ops may read; the list grows by each op's result). Returns (the ops, or None
    when an op read a value outside the slots; each value's slot; ``fn``'s result). A
    recording within another notes its binds for both.

    With ``arguments`` (the tensors over the slots), each op also notes the grad mode it
    ran in and which of its operands were cut from the gradient graph (a ``detach()`` of a
    value that takes gradients), for a replay that records gradient edges; an operand that
    takes gradients without being an argument or an op's result (a leaf made inside
    ``fn``) leaves nothing to replay."""
    log: list[tuple] = []
    binder = prim_layer.current_binder()

    def recording(primitive: Any, args: tuple, attrs: dict, like: Any) -> Any:
        takes = tuple([a.requires_grad for a in args])
        out = binder(primitive, args, attrs, like)
        log.append((primitive, attrs, args, takes, out, like, GRAD_MODE.enabled))
        return out

    previous = prim_layer.set_thread_binder(recording)
    try:
        result = fn()
    finally:
        prim_layer.set_thread_binder(previous)
    slot_of = {value: k for k, value in enumerate(slots)}
    leaves = {id(t) for t in arguments or ()}
    slot_takes = [t.requires_grad for t in arguments or ()]  # whether each slot's value takes gradients
    ops: list[Op] = []
    for primitive, attrs, args, takes, out, like, enabled in log:
        codes = [slot_of.get(a._value) for a in args]
        if None in codes:
            return None, slot_of, result
        cut = []
        if arguments is not None:
            for i, (a, k, grad) in enumerate(zip(args, codes, takes, strict=True)):
                if grad and a._grad_node is None and id(a) not in leaves:
                    return None, slot_of, result
                if slot_takes[k] and not grad:
                    cut.append(i)
            slot_takes.append(out.requires_grad)
        slot_of.setdefault(out._value, len(slots) + len(ops))
        aval, signature = out._aval, out._value.signature
        ops.append(Op(primitive, attrs, tuple(codes), aval, signature, like, tuple(cut), enabled, out.requires_grad))
    return ops, slot_of, result


def without_repeats(ops: list[Op], inputs: int, results: set[int]) -> tuple[list[Op], list[int]]:
    """``ops`` without those repeating an earlier one (the same primitive and attributes
    on the same slots: the graph's nodes are pure, so the repeat computes the same value,
    and the compiled graph, whose nodes are shared by structure, is the same), and each
    slot's position once they are gone. An optimizer's step broadcasts each hyperparameter
    to the shape of every parameter: parameters of one shape share them. An op whose
    value is one of the program's ``results`` is kept: two results computed alike (two
    parameters' equal gradients) stay two values, as the recorded step's graph has them
    (each a result of its own)."""
    where = list(range(inputs))
    first: dict[tuple, int] = {}
    kept: list[Op] = []
    for k, op in enumerate(ops, inputs):
        codes = tuple([where[c] for c in op.codes])
        # A signature names the primitive, its attributes and its operands' types. Ops
        # without operands stay apart: a constant may be a graph input of its own.
        key = (op.signature, codes) if op.signature is not None and codes else None
        found = first.get(key) if key is not None and k not in results else None
        if found is None:
            found = inputs + len(kept)
            kept.append(op._replace(codes=codes))
            if key is not None:
                first.setdefault(key, found)
        where.append(found)
    return kept, where


class Recorded:
    """A recorded program ready to bind on later slots: as one expression (``lazy.call``)
    reading the slots its ops read, then its liftable constants (a number that may change
    between calls: a trace takes it as a graph input, as it would the op bound alone, so a
    new value compiles nothing), with one expression per result."""

    __slots__ = ("program", "reads", "constants", "results")

    def __init__(self, ops: list[Op], inputs: int, results: list[tuple[int, Aval]]) -> None:
        """``ops`` as ``record`` noted them over ``inputs`` slots (then each op's result);
        ``results``: (slot, aval). Repeated ops are dropped (``without_repeats``)."""
        ops, where = without_repeats(ops, inputs, {k for k, _ in results})
        results = [(where[k], aval) for k, aval in results]
        self.reads = sorted({k for op in ops for k in op.codes if k < inputs} | {k for k, _ in results if k < inputs})
        lifted = [inputs + j for j, op in enumerate(ops) if not op.codes and liftable(op.primitive, op.attrs)]
        self.constants = [ops[k - inputs] for k in lifted]
        code = {k: j for j, k in enumerate([*self.reads, *lifted])}
        kept = []
        for j, op in enumerate(ops):
            if inputs + j not in code:
                kept.append(op._replace(codes=tuple([code[k] for k in op.codes])))
                code[inputs + j] = len(code)
        self.program = Program(kept, len(self.reads) + len(lifted), len(results))
        self.results = [(code[k], aval) for k, aval in results]

    def exprs(self, slots: list) -> list[Expr]:
        """The results' expressions on ``slots`` (expressions of a lazy device)."""
        constants = [Expr(op.primitive, (), op.attrs, op.aval, op.signature) for op in self.constants]
        return call(self.program, [*[slots[k] for k in self.reads], *constants], self.results)

    def bind(self, slots: list, device: Device, tracked: bool = True) -> list[Tensor]:
        """The results on ``slots`` (expressions of the lazy ``device``), as tensors
        tracked for the barrier (or not: see ``replayed``)."""
        make = Tensor._make if tracked else Tensor._view
        return [make(value, aval, device) for value, (_, aval) in zip(self.exprs(slots), self.results, strict=True)]


def replayable(device: Device) -> bool:
    """Whether a computation on ``device`` may be replayed: a lazy device, outside
    ``braze.jit`` (which traces once), recording no gradients and pushing no tangents
    (only the op library records those), no recorder listening."""
    return device.is_lazy and not GRAD_MODE.enabled and not LEVELS.open and not is_recording() and unheard()


def with_context(key: Any, inputs: list[Tensor]) -> tuple:
    """``key`` with what else decides a recorded program: whether ``braze.autocast`` is on
    (it changes the op library's products), and which inputs are one value (two
    hyperparameters equal this step are one tensor: a program records one slot for both,
    which later calls must not bind to two values)."""
    first: dict[int, int] = {}
    aliases = tuple([first.setdefault(id(t._value), k) for k, t in enumerate(inputs)])
    return (key, is_autocast_enabled(), aliases)


def replayed(
    programs: BoundedCache[Any, Any],
    key: Any,
    inputs: list[Tensor],
    fn: Callable[[], list[Tensor]],
    counter: str,
    tracked: bool = True,
) -> list[Tensor]:
    """``fn()``'s tensors, which it computes from ``inputs`` and constants only (its ops
    depend on nothing outside ``key`` and the inputs' types): the first call for ``key``
    runs ``fn`` and records its program in ``programs``, later calls replay it (counted as
    ``counter``). A function whose ops read another tensor runs every time. The key
    holds the context too (``with_context``). Without ``tracked``, a replay's tensors
    are not tracked for the barrier: the caller assigns each into a tensor (which is)."""
    key = with_context(key, inputs)
    program = programs.get(key, UNSEEN)
    if program is None:
        return fn()
    if program is UNSEEN:
        ops, slot_of, results = record([t._value for t in inputs], fn)
        codes = [(slot_of.get(t._value), t._aval) for t in results]
        if ops is None or any(k is None for k, _ in codes):
            programs.put(key, None)
            return results
        # Bound as later calls bind it, so that the first step's trace is theirs (one compile).
        program = programs.put(key, Recorded(ops, len(inputs), codes))
    else:
        metrics.count(counter)
    return program.bind([t._value for t in inputs], inputs[0].device, tracked)
