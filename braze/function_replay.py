"""Functions of tensors replayed on a lazy device, each call one expression with one
gradient record (``replaying``).

A lazy training step calls the same layer norms, GELUs, attentions and cross-entropies
every step: in a GPT step they bind ~340 of the forward pass's ~440 ops, and each bind
made an expression, a tensor, a gradient record and its lists, which the backward pass
then walked and the garbage collector scanned. The first call for a key runs the function
and records its binds (``replay.record``); a later call binds the recorded ops as one
expression (``lazy.call``), with one expression per value that the ops' gradient rules
read, and gives its result one gradient record reading those values (``FunctionRule``).
That record's rule applies the recorded ops' own rules in reverse, so the gradient is the
one the ops bound one by one give, and a lazy backward pass, which records its binds once
(``backward_replay``), replays it as before. The graph a trace builds is the same as well:
a call expands into the nodes its ops would have made.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from braze.autodiff import _walk
from braze.ir import primitive as prim_layer
from braze.ir.primitive import Aval
from braze.lazy import is_recording
from braze.replay import UNSEEN, Op, Recorded, record, with_context
from braze.runtime import metrics
from braze.runtime.cache import BoundedCache
from braze.runtime.device import Device
from braze.tangents import LEVELS
from braze.tensor import GRAD_MODE, GradNode, Tensor, bind_typed, gradient_parent, unheard


class FunctionRule:
    """The gradient rule of a replayed function's call (the primitive of its one gradient
    record): the recorded ops' own rules, applied in reverse to the values the call saved.
    The record's inputs are the function's tensor arguments, then those saved values,
    which take no gradient of their own."""

    __slots__ = ("ops", "arity", "result", "takes", "position", "avals", "flows")

    def __init__(self, ops: list[Op], arguments: list[Tensor], result: int, saved: list[int]) -> None:
        self.ops = ops
        self.arity = arity = len(arguments)
        self.result = result
        # Whether each slot's value takes gradients: an argument's, then each op's result's.
        self.takes = [t.requires_grad for t in arguments] + [op.takes for op in ops]
        # Each slot's position among the record's inputs.
        self.position = {k: k for k in range(arity)} | {k: arity + i for i, k in enumerate(saved)}
        self.avals = (*[t._aval for t in arguments], *[ops[k - arity].aval for k in saved])
        # The arguments a gradient reaches: read, not cut, by an op whose result takes one.
        reached = {k for op in ops if op.takes for i, k in enumerate(op.codes) if k < arity and i not in op.cut}
        self.flows = [k in reached for k in range(arity)]

    def __deepcopy__(self, memo: dict) -> FunctionRule:
        return self  # never changed: a copied tensor's gradient record shares it

    def parents(self, tensors: list[Tensor], saved: int) -> list[Any]:
        """A call's gradient parents: each argument's that a gradient reaches, as any op's
        record has them, then none for the saved values."""
        parents = [gradient_parent(t) if flows else None for t, flows in zip(tensors, self.flows, strict=True)]
        return parents + [None] * saved

    def vjp(self, g: Tensor, *inputs: Tensor, out: Tensor, **_: Any) -> list[Tensor | None]:
        """Each argument's gradient (None for the saved values) from the ops' records, built
        here over ``inputs`` and walked as a backward pass walks them, each argument a
        leaf; in a differentiable backward, the graph of the gradient reaches past them."""
        arity, position, takes = self.arity, self.position, self.takes
        nodes: dict[int, GradNode] = {}
        for j, op in enumerate(self.ops):
            if not op.takes:
                continue
            operands = [inputs[position[k]] for k in op.codes]
            parents = [
                None if i in op.cut or not takes[k] else (inputs[k] if k < arity else nodes[k])
                for i, k in enumerate(op.codes)
            ]
            result = inputs[position[arity + j]]._value
            values, avals = [t._value for t in operands], [t._aval for t in operands]
            nodes[arity + j] = GradNode.over(
                op.primitive, op.attrs, values, avals, parents, result, op.aval, out.device
            )
        order = list(nodes.values())
        order.reverse()
        differentiable = GRAD_MODE.enabled
        reached = _walk(order, {id(nodes[self.result]): g}, True, None, differentiable)
        if differentiable:
            # The gradient's graph reads these records: an argument computed by other ops
            # leads on to the record that computed it (the walk took it as a leaf).
            for node in order:
                node.parents = [gradient_parent(p) if isinstance(p, Tensor) else p for p in node.parents]
        grads: list[Tensor | None] = [None] * len(inputs)
        for k in range(arity):
            # In a differentiable backward, an argument given twice is the leaf itself at both
            # positions: its gradient goes to one.
            hit = reached.pop(id(inputs[k]), None)
            if hit is not None:
                grads[k] = hit[1]
        return grads


class _Replay:
    """A function's ops recorded for one key, the slot of its result and whether the
    result takes gradients (a result detached inside the function does not), and, where
    the ops may be bound as one expression (``_plain``), that expression's program and
    the rule of its gradient record (None when the result takes no gradients)."""

    __slots__ = ("ops", "result", "result_takes", "recorded", "rule")

    def __init__(self, ops: list[Op], arguments: list[Tensor], result: int, result_takes: bool) -> None:
        self.ops, self.result, self.result_takes = ops, result, result_takes
        self.recorded: Recorded | None = None
        self.rule: FunctionRule | None = None
        arity = len(arguments)
        if result < arity or not _plain(ops, arguments[0].device):
            return
        saved = []
        if result_takes:  # keep what the ops' rules read
            saved = sorted({k for j, op in enumerate(ops) if op.takes for k in (*op.codes, arity + j) if k >= arity})
            self.rule = FunctionRule(ops, arguments, result, saved)
        results = [(result, ops[result - arity].aval), *[(k, ops[k - arity].aval) for k in saved]]
        self.recorded = Recorded(ops, arity, results)

    def bind(self, tensors: list[Tensor]) -> Tensor:
        """The result on ``tensors``: as one expression with one gradient record where it may
        be, else op by op (``_bound``)."""
        if self.recorded is None or not unheard():
            out = _bound(self.ops, tensors)[self.result]
            return out.detach() if out.requires_grad and not self.result_takes else out
        values = [t._value for t in tensors]
        result, *saved = self.recorded.exprs(values)
        device = tensors[0].device
        out = Tensor._make(result, result.aval, device)
        rule = self.rule
        if rule is not None:
            parents = rule.parents(tensors, len(saved))
            node = GradNode.over(rule, {}, [*values, *saved], rule.avals, parents, result, result.aval, device)
            out.requires_grad, out._grad_node = True, node
        return out


def _plain(ops: list[Op], device: Device) -> bool:
    """Whether ``ops`` may be bound on ``device`` as one expression: a lazy device, each op
    with one result, and an op without operands made there."""
    return device.is_lazy and all(type(op.aval) is Aval and (op.codes or op.like == device) for op in ops)


F = TypeVar("F", bound=Callable[..., Tensor])


def replaying(fn: F) -> F:
    """``fn`` (a function of tensors returning one tensor, whose ops depend on nothing but
    its tensor arguments' types and its other arguments' values) replayed on a lazy device:
    the first call for a key runs ``fn`` and records its binds, later calls bind the
    recorded ops as one expression with one gradient record (see the module's notes),
    skipping the op library's broadcasting and checks; the first call's result is bound
    so too, so that every step traces the same graph. A call whose ops read a tensor
    outside its arguments (a random draw, a tensor made from NumPy data) runs ``fn`` every
    time, as does a call while forward-mode derivatives are taken or ``braze.jit`` traces
    (which runs the Python once anyway), one given two tensors of one value, and a first
    call inside a loop body being traced (``braze.lax``), whose binds see stand-ins; a
    later call there binds the ops one by one. Other arguments key the program by type
    and value (``1`` and ``1.0`` may make different constants, ``-0.0`` and ``0.0`` too)."""
    programs: BoundedCache[tuple, _Replay | None] = BoundedCache(256)

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Tensor:
        if LEVELS.open or is_recording():
            return fn(*args, **kwargs)
        tensors: list[Tensor] = []
        parts: list[Any] = []
        holders: dict[int, Tensor] = {}
        for a in (*args, *kwargs.values()):
            if isinstance(a, Tensor):
                # An eager call runs as it is; a subclass (an Array API array) keeps its own wrapping.
                if type(a) is not Tensor or not (tensors or a.device.is_lazy):
                    return fn(*args, **kwargs)
                # Two tensors of one value (``q`` and ``q.detach()``) are one slot to a
                # recording, which could not tell whose gradient each op's is.
                if holders.setdefault(id(a._value), a) is not a:
                    return fn(*args, **kwargs)
                tensors.append(a)
                parts.append((a._aval, a.requires_grad, a.device))
            else:  # -0.0 by its sign too: 1 / -0.0 is not 1 / 0.0
                parts.append((type(a), a, repr(a)) if isinstance(a, (float, np.floating)) else (type(a), a))
        if not tensors:
            return fn(*args, **kwargs)
        key = with_context((tuple(parts), tuple(kwargs), GRAD_MODE.enabled), tensors)
        try:
            program = programs.get(key, UNSEEN)
        except TypeError:  # an unhashable argument
            return fn(*args, **kwargs)
        if program is None:
            return fn(*args, **kwargs)
        if program is UNSEEN:
            if not unheard():  # a loop body being traced binds stand-ins: not what a later call gives
                return fn(*args, **kwargs)
            ops, slot_of, result = record([t._value for t in tensors], lambda: fn(*args, **kwargs), tensors)
            found = slot_of.get(result._value) if isinstance(result, Tensor) else None
            if ops is None or found is None:
                programs.put(key, None)
                return result
            program = programs.put(key, _Replay(ops, tensors, found, result.requires_grad))
            if program.recorded is None:
                return result  # bound op by op, as a later call binds it
        else:
            metrics.count("FunctionReplay")
        return program.bind(tensors)

    return call  # type: ignore[return-value]


def _bound(ops: list[Op], tensors: list[Tensor]) -> list[Tensor]:
    """``ops`` bound onto ``tensors`` as the op library binds them, each in the grad mode
    and with the operands cut from the gradient graph that it was recorded with; the
    tensors followed by each op's result. The operands' types are the recorded ones, so
    without a recorder listening (``braze.jit``, a nested recording) an op with operands
    skips the shape rule and device check, whose results it has."""
    bind = prim_layer.current_binder()
    typed = unheard()
    values: list[Tensor] = list(tensors)
    called = GRAD_MODE.enabled
    try:
        for primitive, attrs, inputs, aval, signature, like, cut, enabled, _ in ops:
            operands = [values[k] for k in inputs]
            for i in cut:
                a = operands[i]
                operands[i] = Tensor._view(a._value, a._aval, a.device)
            if enabled is not GRAD_MODE.enabled:
                GRAD_MODE.enabled = enabled
            if typed and operands:
                values.append(bind_typed(primitive, tuple(operands), attrs, aval, signature, operands[0].device))
            else:
                values.append(bind(primitive, tuple(operands), attrs, like))
    finally:
        GRAD_MODE.enabled = called
    return values
