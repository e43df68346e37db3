"""``@braze.jit``: compile a Python function of tensors, modules and optimizers, as JAX's
``jit`` and ``tf.function(jit_compile=True)`` do.

The first call for each input signature traces the function: every tensor reachable from
the arguments (module parameters and their gradients, optimizer slots, statistics objects)
is moved onto the lazy device in place, the function runs there, and the resulting trace
(its results plus every tensor it assigned) is compiled. Later calls with the same
signature skip Python entirely: they gather the current values, run the executable and
write the new values back. As in JAX, Python side effects (printing, appending to a list,
incrementing a Python counter) happen only while tracing, and gradients inside the function
start from zero (``.grad`` values from before the call are not read).
"""

from __future__ import annotations

import functools
import os
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from braze import lazy
from braze.ir.graph import Graph
from braze.runtime import metrics
from braze.runtime.cache import BoundedCache
from braze.runtime.device import LAZY_CPU, Device
from braze.tensor import Tensor, executor_for, user_location

_NUMBERS = (bool, int, float, np.number)
_OPAQUE = (type, np.ndarray, types.FunctionType, types.MethodType, types.ModuleType, types.BuiltinFunctionType)


def _reachable(value: Any, path: str, seen: set[int], depth: int = 0) -> Iterator[tuple[str, Any]]:
    """(path, tensor) for every tensor reachable from ``value`` through containers and the
    public attributes of objects (a module's parameters, an optimizer's slots)."""
    if id(value) in seen or depth > 8:
        return
    if isinstance(value, Tensor):
        seen.add(id(value))
        yield path, value
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _reachable(item, f"{path}[{i}]", seen, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _reachable(item, f"{path}[{key!r}]", seen, depth + 1)
    elif hasattr(value, "__dict__") and not isinstance(value, _OPAQUE):
        # Modules, optimizers, statistics and other plain objects: their public attributes.
        seen.add(id(value))
        for name, item in vars(value).items():
            if not name.startswith("_"):
                yield from _reachable(item, f"{path}.{name}", seen, depth + 1)


def _tensors(args: tuple, kwargs: dict) -> list[tuple[str, Tensor]]:
    seen: set[int] = set()
    found = []
    for i, arg in enumerate(args):
        found += [(p, t) for p, t in _reachable(arg, f"args[{i}]", seen) if isinstance(t, Tensor)]
    for name, arg in kwargs.items():
        found += [(p, t) for p, t in _reachable(arg, name, seen) if isinstance(t, Tensor)]
    return found


def _host_array(t: Tensor) -> np.ndarray:
    return executor_for(t.device).to_numpy(t._value, t.device)


@dataclass
class Compiled:
    """One traced signature: its executable and where its inputs and outputs go."""

    executable: Any
    inputs: list[tuple[str, Any]]  # ("state", tensor position) or ("captured", array)
    result_slots: list[int]  # output position of each result tensor
    rebuild: Callable[[list[Tensor]], Any]
    state_slots: list[tuple[int, int]] = field(default_factory=list)  # (tensor position, output position)
    grad_slots: list[tuple[int, int]] = field(default_factory=list)
    # Every tensor is an eager tensor of a device with memory of its own (a GPU): the
    # executable runs on their device arrays and its outputs become their values, so a
    # call copies nothing between host and device.
    on_device: bool = False


class JittedFunction:
    def __init__(self, fn: Callable[..., Any], static_argnums: Sequence[int], donate_argnums: Sequence[int]) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.static_argnums = tuple(static_argnums)
        self.donate_argnums = tuple(donate_argnums)
        self._compiled: BoundedCache[tuple, Compiled] = BoundedCache(256)
        self._last: tuple | None = None
        self.compiles = 0

    # Signatures ------------------------------------------------------------------------

    def _signature(self, args: tuple, kwargs: dict, tensors: list[tuple[str, Tensor]]) -> tuple:
        described = tuple((path, t.shape, t.dtype.name, str(t.device)) for path, t in tensors)
        statics = []
        for i, arg in enumerate(args):
            if i in self.static_argnums or isinstance(arg, (*_NUMBERS, str, type(None))):
                statics.append((f"args[{i}]", repr(arg)))
        for name, arg in kwargs.items():
            if isinstance(arg, (*_NUMBERS, str, type(None))):
                statics.append((name, repr(arg)))
        return described, tuple(statics)

    def _explain(self, signature: tuple) -> None:
        previous, self._last = self._last, signature
        if previous is None or os.environ.get("BRAZE_DEBUG") != "1":
            return
        before = {path: item for path, *item in previous[0]}
        reason = "the arguments' structure changed"
        for path, *item in signature[0]:
            if path not in before:
                reason = f"{path} is new"
                break
            if tuple(before[path]) != tuple(item):
                old, new = before[path], item
                what = "shape" if old[0] != new[0] else ("dtype" if old[1] != new[1] else "device")
                reason = f"{path} {what} changed from {old[1]}{list(old[0])} to {new[1]}{list(new[0])}"
                break
        else:
            if previous[1] != signature[1]:
                reason = f"a static argument changed: {dict(previous[1])} -> {dict(signature[1])}"
        print(f"braze.jit({self.__name__}): compiling again at {user_location()}: {reason}", file=sys.stderr)

    # Calls -----------------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        tensors = _tensors(args, kwargs)
        signature = self._signature(args, kwargs, tensors)
        compiled = self._compiled.get(signature)
        if compiled is None:
            self._explain(signature)
            return self._trace_and_run(args, kwargs, tensors, signature)
        metrics.count("JitCacheHit")
        return self._run(compiled, [t for _, t in tensors])

    def _run(self, compiled: Compiled, tensors: list[Tensor]) -> Any:
        return self._finish(compiled, tensors, self._execute(compiled, tensors))

    def _execute(self, compiled: Compiled, tensors: list[Tensor]) -> list[Any]:
        if compiled.on_device:
            arrays = [tensors[slot]._value if kind == "state" else slot for kind, slot in compiled.inputs]
            run = compiled.executable.run
        else:
            arrays = [_host_array(tensors[slot]) if kind == "state" else slot for kind, slot in compiled.inputs]
            run = compiled.executable
        with metrics.timed("ExecuteTime"):
            outputs = run(arrays)
        metrics.count("Execute")
        return outputs

    def _finish(self, compiled: Compiled, tensors: list[Tensor], outputs: list[Any]) -> Any:
        for position, output in compiled.state_slots:
            _write(tensors[position], outputs[output])
        for position, output in compiled.grad_slots:
            t = tensors[position]
            t.grad = _tensor(outputs[output], t.device)
        device = tensors[0].device if tensors else _eager_of(LAZY_CPU)
        return compiled.rebuild([_tensor(outputs[k], device) for k in compiled.result_slots])

    def _trace_and_run(self, args: tuple, kwargs: dict, tensors: list[tuple[str, Tensor]], signature: tuple) -> Any:
        # The trace is recorded on the lazy CPU device whatever the tensors' device (recording
        # is device-independent); the executable is built for the device they live on.
        home = next((t.device for _, t in tensors if t.device.kind != LAZY_CPU.kind), LAZY_CPU)
        target = lazy.backend_of(home)
        on_device = not target.host_memory and all(
            t.device.kind == home.kind and not t.device.is_lazy for _, t in tensors
        )
        device: Device = LAZY_CPU
        saved = []
        for _, t in tensors:
            array = _host_array(t)
            saved.append((t, t._value, t.device, t.grad, t._grad_node))
            t.device = device
            t._value = executor_for(device).from_numpy(array, device)
            t.grad = None
            t._grad_node = None
        input_leaves = {id(t._value): k for k, (_, t) in enumerate(tensors)}
        try:
            with metrics.timed("TraceTime"), lazy.barriers_held():
                result = self.fn(*args, **kwargs)
            result_tensors, rebuild = _flatten_result(result)
            roots: list[lazy.Expr] = [r._value for r in result_tensors]
            state_slots, grad_slots = [], []
            for k, (_, t) in enumerate(tensors):
                if t._value is not saved[k][1] and input_leaves.get(id(t._value)) != k:
                    state_slots.append((k, len(roots)))
                    roots.append(t._value)
                if t.grad is not None:
                    grad_slots.append((k, len(roots)))
                    roots.append(t.grad._value)
            # Tensors created while tracing (optimizer slots made on the first step) are
            # computed too; they change the signature, so this trace is not cached.
            known = {id(t) for _, t in tensors}
            created = [t for _, t in _tensors(args, kwargs) if id(t) not in known and t.device.is_lazy]
            fresh = [(t, len(roots) + i) for i, t in enumerate(created)]
            roots += [t._value for t, _ in fresh]
            trace = lazy.build_graph(roots)
            parameter_of = {
                input_leaves[id(leaf)]: j for j, leaf in enumerate(trace.leaves) if id(leaf) in input_leaves
            }
            graph = self._donating(trace.graph, state_slots, tensors, parameter_of)
            executable = lazy.compile_for_target(graph, target)
            self.compiles += 1
            inputs = [
                ("state", input_leaves[id(leaf)]) if id(leaf) in input_leaves else ("captured", array)
                for leaf, array in zip(trace.leaves, trace.args, strict=True)
            ]
            if on_device:  # captured values never change: uploaded once, here
                inputs = [(kind, target.upload(slot) if kind == "captured" else slot) for kind, slot in inputs]
        finally:
            lazy.discard_pending(device)
            for t, value, original_device, grad, node in saved:
                t._value, t.device, t.grad, t._grad_node = value, original_device, grad, node
        compiled = Compiled(
            executable, inputs, list(range(len(result_tensors))), rebuild, state_slots, grad_slots, on_device
        )
        plain = [t for _, t in tensors]
        outputs = self._execute(compiled, plain)
        home = plain[0].device if plain else _eager_of(LAZY_CPU)
        for t, position in fresh:
            t.device = home
            _write(t, outputs[position])
        if not fresh:
            self._compiled.put(signature, compiled)
        return self._finish(compiled, plain, outputs)

    def _donating(self, graph: Graph, state_slots, tensors, parameter_of: dict[int, int]) -> Graph:
        """Outputs that replace tensors of donated arguments may reuse their buffers."""
        if not self.donate_argnums:
            return graph
        donated = {}
        for position, output in state_slots:
            path = tensors[position][0]
            j = parameter_of.get(position)
            donate = any(path.startswith(f"args[{i}]") for i in self.donate_argnums)
            if donate and j is not None and graph.params[j].aval == graph.outputs[output].aval:
                donated[output] = j
        return Graph(graph.params, graph.outputs, donated) if donated else graph


def _write(t: Tensor, output: Any) -> None:
    """Make an executable's output ``t``'s value: a device array as it is (the call ran on
    the device), a NumPy array through ``t``'s executor."""
    if isinstance(output, np.ndarray):
        t._value = executor_for(t.device).from_numpy(output, t.device)
    else:
        t._value = output


def _tensor(output: Any, device: Device) -> Tensor:
    if isinstance(output, np.ndarray):
        return Tensor.from_numpy(output, device)
    return Tensor._make(output, output.aval, device)


def _eager_of(device: Device) -> Device:
    return Device(device.kind, device.ordinal, "EAGER")


def _flatten_result(result: Any) -> tuple[list[Tensor], Callable[[list[Tensor]], Any]]:
    if result is None:
        return [], lambda _: None
    if isinstance(result, Tensor):
        return [result], lambda items: items[0]
    if isinstance(result, (list, tuple)):
        parts = [_flatten_result(r) for r in result]
        sizes = [len(p[0]) for p in parts]

        def rebuild(items: list[Tensor]) -> Any:
            out, offset = [], 0
            for (_, part_rebuild), size in zip(parts, sizes, strict=True):
                out.append(part_rebuild(items[offset : offset + size]))
                offset += size
            return type(result)(out) if isinstance(result, list) else tuple(out)

        return [t for p in parts for t in p[0]], rebuild
    if isinstance(result, dict):
        keys = list(result)
        values, rebuild_values = _flatten_result([result[k] for k in keys])
        return values, lambda items: dict(zip(keys, rebuild_values(items), strict=True))
    return [], lambda _: result


def jit(
    fn: Callable[..., Any] | None = None, *, static_argnums: Sequence[int] = (), donate_argnums: Sequence[int] = ()
) -> Any:
    """Compile ``fn`` on its first call for each signature (shapes, dtypes and devices of every
    reachable tensor, and the values of static and Python-number arguments)."""
    if fn is None:
        return lambda f: JittedFunction(f, static_argnums, donate_argnums)
    return JittedFunction(fn, static_argnums, donate_argnums)
