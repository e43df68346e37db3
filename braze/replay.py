"""Recording the binds a function makes as a program over *slots*, and replaying it.

On a lazy device a training step runs the same Python every step, and each op call goes
through the op library's broadcasting, scalar and bookkeeping code before it records one
expression. Where a computation's ops depend only on its inputs' types (a backward pass, an
optimizer's update rule), its first run can note every bind as (primitive, attributes,
input slots, output type, signature) over a list of slots: the given input values, then
each op's result. Binding that program's ops straight onto a later step's values records
exactly the expressions the code would have: the same trace, so the same compiled
executable, for a fraction of the Python.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from braze.ir import primitive as prim_layer
from braze.lazy import Expr, is_recording
from braze.runtime import metrics
from braze.runtime.cache import BoundedCache
from braze.runtime.device import Device
from braze.tangents import LEVELS
from braze.tensor import GRAD_MODE, Tensor

R = TypeVar("R")
Op = tuple  # (primitive, attrs, input slots, aval, signature): each appends one slot

_UNSEEN = object()  # a key never recorded


def record(slots: list, fn: Callable[[], R]) -> tuple[list[Op] | None, dict[Any, int], R]:
    """Run ``fn`` while noting every bind this thread makes, over ``slots`` (values that
    ``fn``'s ops may read; the list grows by each op's result). Returns (the ops, or None
    when an op read a value outside the slots; each value's slot; ``fn``'s result). A
    recording within another notes its binds for both."""
    log: list[tuple] = []
    binder = prim_layer.current_binder()

    def recording(primitive: Any, args: tuple, attrs: dict, like: Any) -> Any:
        out = binder(primitive, args, attrs, like)
        log.append((primitive, attrs, [a._value for a in args], out))
        return out

    previous = prim_layer.set_thread_binder(recording)
    try:
        result = fn()
    finally:
        prim_layer.set_thread_binder(previous)
    slot_of = {value: k for k, value in enumerate(slots)}
    ops: list[Op] = []
    for primitive, attrs, inputs, out in log:
        codes = [slot_of.get(value) for value in inputs]
        if None in codes:
            return None, slot_of, result
        slot_of.setdefault(out._value, len(slots) + len(ops))
        ops.append((primitive, attrs, tuple(codes), out._aval, out._value.signature))
    return ops, slot_of, result


def replay(ops: list[Op], values: list) -> list:
    """Record ``ops`` over ``values`` (the program's input slots: expressions of a lazy
    device), appending each op's result; returns ``values``."""
    for primitive, attrs, inputs, aval, signature in ops:
        values.append(Expr(primitive, tuple([values[k] for k in inputs]), attrs, aval, signature))
    return values


def replayable(device: Device) -> bool:
    """Whether a computation on ``device`` may be replayed: a lazy device, outside
    ``braze.jit`` (which traces once), recording no gradients and pushing no tangents
    (only the op library records those)."""
    return device.is_lazy and not GRAD_MODE.enabled and not LEVELS.open and not is_recording()


def replayed(
    programs: BoundedCache[Any, Any], key: Any, inputs: list[Tensor], fn: Callable[[], list[Tensor]], counter: str
) -> list[Tensor]:
    """``fn()``'s tensors, which it computes from ``inputs`` and constants only (its ops
    depend on nothing outside ``key`` and the inputs' types): the first call for ``key``
    runs ``fn`` and records its program in ``programs``, later calls replay it (counted as
    ``counter``). A function whose ops read another tensor runs every time. Whether
    ``braze.autocast`` is on is part of the key: it changes the op library's products; so is
    which inputs are one value (two hyperparameters equal this step are one tensor): a
    program records one slot for both, which later steps must not bind to two values."""
    from braze.ops.autocast import is_autocast_enabled

    first: dict[int, int] = {}
    aliases = tuple([first.setdefault(id(t._value), k) for k, t in enumerate(inputs)])
    key = (key, is_autocast_enabled(), aliases)
    program = programs.get(key, _UNSEEN)
    if program is None:
        return fn()
    if program is _UNSEEN:
        ops, slot_of, results = record([t._value for t in inputs], fn)
        codes = [(slot_of.get(t._value), t._aval) for t in results]
        programs.put(key, None if ops is None or any(k is None for k, _ in codes) else (ops, codes))
        return results
    ops, codes = program
    metrics.count(counter)
    device = inputs[0].device
    values = replay(ops, [t._value for t in inputs])
    return [Tensor._make(values[k], aval, device) for k, aval in codes]
