"""Tracing a loop's body: a Python function of tensors run once on placeholder tensors of
a lazy device, its ops recorded as a ``Graph`` (as JAX traces a loop body to a jaxpr).

An op reading a placeholder, or the result of such an op, belongs to the body. The tensors
from outside that the body reads (a layer's weights, a closed-over value) are *captured*:
each becomes a parameter of the body after the declared inputs, and the loop takes it as
an operand, so gradients reach it through the loop's VJP. An op that reads only outside
tensors runs outside, once, before the loop (hoisted), as does a constant standing for a
number that changes between steps (a learning rate): those are captured too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from braze.ir import primitive as prim_layer
from braze.ir.errors import TraceError
from braze.ir.graph import Graph, Node, parameter
from braze.ir.primitive import Aval, Category, Literal
from braze.ir.prims import sources
from braze.lazy import EXECUTOR, Expr, LoopBodyInput
from braze.runtime.device import Device
from braze.tensor import Tensor, bind


@dataclass
class Body:
    """A traced body: its graph (declared inputs, then captured tensors, as parameters) and
    the outside tensors it captured, in parameter order."""

    graph: Graph
    captured: list[Tensor]


def trace_device(device: Device) -> Device:
    """The lazy device of ``device``'s kind, on which bodies are traced."""
    return Device(device.kind, device.ordinal, "LAZY")


def _placeholder(aval: Aval, device: Device) -> Tensor:
    return Tensor._view(Expr(None, (), {}, aval, None, data=LoopBodyInput()), aval, device)


def _changes_between_steps(attrs: dict) -> bool:
    return any(isinstance(v, Literal) and v.is_input for v in attrs.values())


def trace(
    fn: Callable[[list[Tensor]], list[Tensor]], avals: Sequence[Aval], device: Device, what: str
) -> tuple[Body, list[Tensor]]:
    """Run ``fn`` on one placeholder per aval; the body graph computing the tensors it
    returns (a flat list), and the placeholders (which ``fn`` may mark as requiring grad)."""
    device = trace_device(device)
    inputs = [_placeholder(a, device) for a in avals]
    nodes: dict[int, Node] = {id(t._value): parameter(k, t.aval) for k, t in enumerate(inputs)}
    keep: list[Any] = []  # the values recorded, alive while their ids key `nodes`
    captured: list[Tensor] = []
    stand_ins: dict[int, Tensor] = {}
    before: dict[int, Any] = {}  # each captured tensor's value when first read
    outer = prim_layer.current_binder()

    def capture(t: Tensor) -> Tensor:
        stand_in = stand_ins.get(id(t._value))
        if stand_in is None:
            stand_in = stand_ins[id(t._value)] = _placeholder(t.aval, device)
            nodes[id(stand_in._value)] = parameter(len(inputs) + len(captured), t.aval)
            captured.append(t)
            keep.append(t._value)
            before[id(t)] = t._value
        return stand_in

    def node_of(value: Any) -> Node | None:
        """The body's node of a value, None for a value from outside. A result of the body's
        op is the body's before that op's bind returns: its JVP rule (run within the bind)
        reads it."""
        found = nodes.get(id(value))
        if found is None and isinstance(value, Expr) and value.data is None and value.inputs:
            inputs = [node_of(i) for i in value.inputs]
            if all(i is not None for i in inputs):
                found = nodes[id(value)] = Node.make(value.primitive, tuple(inputs), value.attrs, value.aval)
                keep.append(value)
        return found

    def recording(primitive: Any, args: tuple, attrs: dict, like: Any) -> Any:
        if primitive is sources.rng_uniform:
            # Its key is drawn once, while the body is traced: every step would draw the same
            # numbers (one dropout mask for all), where an eager loop draws afresh each step.
            raise TraceError(
                f"{what}: the body draws random numbers (braze.rand/randn, Dropout in training), which a "
                "compiled loop would repeat at every step; draw them before the loop, one slice per step "
                "(braze.rand((length, ...)) passed in xs), or run the loop eagerly"
            )
        inside = [node_of(a._value) is not None for a in args]
        if not any(inside) and (args or _changes_between_steps(attrs)):
            return outer(primitive, args, attrs, like)
        args = tuple(a if known else capture(a) for a, known in zip(args, inside, strict=True))
        out = bind(primitive, args, attrs, device)
        if args:
            node_of(out._value)
        else:
            nodes[id(out._value)] = Node.make(primitive, (), attrs, out.aval)
            keep.append(out._value)
        return out

    previous = prim_layer.set_thread_binder(recording)
    try:
        results = fn(inputs)
    finally:
        prim_layer.set_thread_binder(previous)
        # The body's values are pending on the device, but no barrier may compute them: one
        # kept outside the body (in a list) is an error where it is read, not at every barrier.
        EXECUTOR.forget(device, lambda t: id(t._value) in nodes)
    assigned = [t for t in captured if node_of(t._value) is not None]  # assign, a layer's state
    if assigned:
        for t in assigned:  # as they were: the error leaves the layer's state usable
            t._value = before[id(t)]
        raise TraceError(
            f"{what}: the body assigned a value it computed to a tensor from outside it (assign, "
            "assign_add, or a layer's state updated in training mode, as BatchNormalization's), which a "
            "compiled loop cannot keep: return the value from the body, in the carry, instead"
        )
    for k, r in enumerate(results):
        if not isinstance(r, Tensor):
            raise TypeError(f"{what}: the body returned a {type(r).__name__} where a tensor was expected (value {k})")
    outputs = tuple(node_of((r if node_of(r._value) is not None else capture(r))._value) for r in results)
    params = tuple(parameter(k, a) for k, a in enumerate([*avals, *(t.aval for t in captured)]))
    return Body(Graph(params, outputs), captured), inputs


def inline(graph: Graph, args: Sequence[Tensor]) -> list[Tensor]:
    """``graph`` computed on tensors by binding its nodes' primitives: its ops are recorded
    (and differentiated) as if written out."""
    values: dict[int, Tensor] = {id(p): a for p, a in zip(graph.params, args, strict=True)}
    device = args[0].device if args else None
    for node in graph.nodes():
        if node.op.category is not Category.PARAMETER:
            operands = [values[id(i)] for i in node.inputs]
            values[id(node)] = node.op.bind(*operands, like=device, **node.attr_dict)
    return [values[id(o)] for o in graph.outputs]


def floating(tensors: Sequence[Tensor]) -> list[int]:
    """The positions of the floating-point tensors: those a derivative flows through."""
    return [k for k, t in enumerate(tensors) if t.dtype.is_float]


def reader(operands: Sequence[Tensor]) -> Callable[[int], list[Tensor]]:
    """A function taking the next ``n`` of ``operands`` at each call (a traced body's
    operands, group after group)."""
    at = [0]

    def take(n: int) -> list[Tensor]:
        at[0] += n
        return list(operands[at[0] - n : at[0]])

    return take
