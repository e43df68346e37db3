"""``@braze.jit``: compile a Python function of tensors, modules and optimizers, as JAX's
``jit`` and ``tf.function(jit_compile=True)`` do.

A compiled call runs no Python, so whatever the function read from Python while it was
traced must be, on every later call, an **input** (read afresh), a **guard** (a changed
value compiles again) or an **error** at trace time; never a constant frozen in silence.
Every call walks what the function can reach (:mod:`braze.jit_state`): the arguments,
the object of a bound method, the cells a function closes over and the globals it names,
through containers and public attributes. Then:

- **inputs**, read on every call: every tensor reached (parameters, gradients, optimizer
  slots and step counts, a learning rate given as a tensor); the numbers an object's
  class lists in ``jit_inputs`` (an optimizer's learning rate and other hyperparameters:
  while tracing they are 0-d float64 tensors in their attributes, so what the optimizer
  computes from them is computed in the graph); and every random key drawn from a
  generator seeded before the call (dropout), drawn afresh from it on each call as eager
  code draws it, so a jitted and an eager run from one seed draw the same numbers.
- **guards**, the key the executable is cached under: each tensor's shape, dtype and
  device, and every other value reached: numbers, bools, strings and None (``training``
  flags, a dropout rate, a closed-over float, a zero hyperparameter, whose term is left
  out), NumPy arrays (shape, dtype and identity; a small one by its values), and the
  identity of functions, classes and generators. A changed guard compiles again; with
  ``BRAZE_DEBUG=1`` the reason is printed, ``braze.metrics`` counts ``JitCompile`` (every
  compile), ``JitRecompile`` and
  ``JitRecompile(<path>)`` for each changed value, and every
  :func:`braze.config.recompile_limit` recompiles of one function a
  :class:`RecompileWarning` lists the values that keep changing. braze compiles on: it
  never falls back to eager code.
- **errors** (:class:`braze.TraceError`), raised while tracing: reading a tensor's value as
  a Python number (``.item()``, ``float()``, ``if tensor:``), assigning an input number
  (``optimizer.lr = ...`` belongs outside the function), drawing a key as a Python number
  (``Generator.next_key()``), and reading a lazy tensor that the walk cannot reach (an
  eager one the walk cannot reach is a DeviceError that says so).

A call whose tracing changed what the key guards (a Python side effect such as
``self.calls += 1``, a layer built by its first input, optimizer state made on a first
step) ran as eager code runs and is not cached, since a replay would not repeat the
change: the next call is traced again. A side effect on every call is therefore traced on
every call, and the recompile warning names it. As in JAX, what the walk cannot see
(printing, a private attribute) happens only while tracing. Gradients are what eager
code would leave: the ``.grad`` values a call starts from are inputs (a function that
accumulates gradients over calls reads them; whether each is there is a guard), and one
the function drops (``zero_grad``) is None after the call. Called inside
``braze.jvp`` on a tensor that carries a tangent, a jitted function runs as plain code, so
that its tangents are carried (``braze.jit`` of the ``jvp`` is the compiled form); so does
one called inside ``braze.grad``/``vjp`` on its variables, or on a tensor with a gradient
graph, so that its result carries one (``braze.jit`` of the ``grad`` is the compiled form).
An executable's results carry no gradient graph: a compiled training step calls
``backward`` inside the jitted function.
"""

from __future__ import annotations

import collections
import functools
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from braze import config, jit_state, lazy, trees
from braze.autodiff import any_differentiated
from braze.ir.errors import DeviceError, TraceError
from braze.ir.graph import Graph
from braze.ops import random
from braze.ops.autocast import is_autocast_enabled
from braze.ops.random import Generator
from braze.runtime import collector, metrics
from braze.runtime.backend import Backend
from braze.runtime.cache import BoundedCache
from braze.runtime.device import LAZY_CPU, Device
from braze.tangents import LEVELS
from braze.tensor import Tensor, executor_for, user_location

_RECENT = 32  # traces whose keys are kept to explain a recompile storm


class RecompileWarning(UserWarning):
    """One jitted function compiled again more often than ``braze.config.recompile_limit()``."""


def _has_open_tangent(t: Tensor) -> bool:
    return bool(t._tangents) and any(level in t._tangents for level in LEVELS.open)


def _host_array(t: Tensor) -> np.ndarray:
    return executor_for(t.device).to_numpy(t._value, t.device)


def _value_references(t: Tensor) -> int:
    """The references to ``t``'s value, counted the same way wherever it is asked."""
    return sys.getrefcount(t._value)


def _data_references(t: Tensor) -> int:
    """The references to the device data of ``t``'s lazy value."""
    return sys.getrefcount(t._value.data)


def _probe(value: Any) -> Tensor:
    return Tensor._view(value, None, LAZY_CPU)  # type: ignore[arg-type]


# What the counts say of a value only its tensor holds, and of device data only its
# expression holds: measured, since what a call's arguments count differs between versions.
_VALUE_ALONE = _value_references(_probe(np.empty(0)))
_DATA_ALONE = _data_references(_probe(lazy.Expr(None, (), {}, None, None, data=np.empty(0))))  # type: ignore[arg-type]


def _donated_array(t: Tensor) -> np.ndarray:
    """``t``'s buffer for a call that writes ``t``'s new value into it (``donate_argnums``)
    when ``t`` alone holds it, else a copy of it: as in JAX, donating invalidates the donated
    tensor's old value only. Whoever else holds the buffer keeps what it read: a
    ``detach()`` alias or a tensor made from this one (``braze.tensor(t)``), which share its
    value; a NumPy array read with ``.numpy()`` or given to ``asarray``/``from_dlpack`` (a
    read-only one too), a gradient graph recording the value, a result of an earlier call
    that returned its argument as it was. CPython's reference counts tell exactly."""
    alone = _value_references(t) == _VALUE_ALONE  # counted before a local name holds the value too
    value = t._value
    if isinstance(value, np.ndarray) and alone and lazy.owned(value):
        return value
    if not isinstance(value, (np.ndarray, lazy.Expr)):
        return _host_array(t)  # a device array's value, downloaded: a copy no one else holds
    # A lazy tensor's data: the expression must be this tensor's alone (detach() shares it),
    # and its buffer the expression's alone (not read out, nor another tensor's data).
    if (
        isinstance(value, lazy.Expr)
        and isinstance(value.data, np.ndarray)
        and alone
        and not value.lent
        and lazy.owned(value.data)
        and _data_references(t) == _DATA_ALONE
    ):
        return value.data
    metrics.count("DonatedBufferCopies")
    return np.array(_host_array(t), order="C")


@dataclass
class Compiled:
    """One traced signature: its executable and where its inputs and outputs go."""

    executable: Any
    # ("state", tensor position), ("number", input number position), ("draw", draw
    # position) or ("captured", array): the source of each parameter of the executable.
    inputs: list[tuple[str, Any]]
    # The output position of each result tensor, and its class: the Tensor subclass the
    # function returned (an Array API Array) is what each call returns too.
    result_slots: list[tuple[int, type[Tensor]]]
    rebuild: Callable[[list[Tensor]], Any]
    state_slots: list[tuple[int, int]] = field(default_factory=list)  # (tensor position, output position)
    grad_slots: list[tuple[int, int]] = field(default_factory=list)
    # Gradients the call leaves as other tensors it read (tensor position, position of its
    # new gradient), and the positions whose gradient it dropped (``zero_grad``).
    grad_aliases: list[tuple[int, int]] = field(default_factory=list)
    cleared_grads: list[int] = field(default_factory=list)
    # (tensor position, its gradient's position) of the gradients the call replaces or
    # drops without reading: let go before it runs, so its outputs can take their memory.
    released_grads: list[tuple[int, int]] = field(default_factory=list)
    # Every tensor is an eager tensor of a device with memory of its own (a GPU): the
    # executable runs on their device arrays and its outputs become their values, so a
    # call copies nothing between host and device.
    on_device: bool = False
    generators: list[Generator] = field(default_factory=list)  # each call draws one key from each, in order
    backend: Backend | None = None  # that compiled it, and uploads what each call gives it
    # The parameters whose buffers the executable writes results into (donated tensors):
    # each call hands over a buffer only its tensor holds there (``_donated_array``).
    overwritten: frozenset[int] = frozenset()


class JittedFunction:
    def __init__(self, fn: Callable[..., Any], static_argnums: Sequence[int], donate_argnums: Sequence[int]) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.static_argnums = tuple(static_argnums)
        self.donate_argnums = tuple(donate_argnums)
        self._compiled: BoundedCache[tuple, Compiled] = BoundedCache(256)
        self._executables: BoundedCache[tuple, Any] = BoundedCache(256)  # by graph and target
        self._traces = 0
        self._gradient_traces = 0  # traces again for the gradients a call starts from alone
        self._recent: collections.deque[tuple] = collections.deque(maxlen=_RECENT)  # the last traces' keys
        self._compiles = 0
        self._snapshot: jit_state.Snapshot | None = None  # what the last walk met
        self._last_hit: tuple[jit_state.Snapshot, list, tuple, Compiled] | None = None

    @property
    def traces(self) -> int:
        """How many times this function was traced (a new key: a changed guard, or the
        gradients a call starts from)."""
        return self._traces

    @property
    def compiles(self) -> int:
        """How many times this function was compiled (a trace whose graph it compiled before
        reuses that executable)."""
        return self._compiles

    # What a call reads ---------------------------------------------------------------

    def _read(self, args: tuple, kwargs: dict, again: bool = True) -> jit_state.Reads:
        """What this call reads; ``again``: found by checking the last walk's snapshot
        where nothing it met changed (a training loop's steady state), else by walking."""
        roots = [(_argument_path(i), arg) for i, arg in enumerate(args)]
        roots += list(kwargs.items())
        roots += jit_state.function_roots(self.fn)
        reads = (jit_state.read_again(self._snapshot, roots) if again else None) or jit_state.read(roots)
        self._snapshot = reads.snapshot
        for i in self.static_argnums:
            if i < len(args):
                reads.entries.append((f"args[{i}] (static)", _static(args[i])))
        reads.entries.append(("braze.autocast", is_autocast_enabled()))  # the precision of its products
        return reads

    def _explain(self, key: tuple) -> None:
        """Say why a signature compiles again: printed with ``BRAZE_DEBUG=1``, counted in
        ``braze.metrics``, and a warning past the recompile limit."""
        previous = self._recent[-1] if self._recent else None
        self._recent.append(key)
        self._traces += 1
        if previous is None:
            return
        paths = [path for path, _, _ in jit_state.differences(previous, key)]
        if paths and all(path.endswith(".grad") for path in paths):
            # Only the gradients the call starts from differ (the first call's, left by
            # it): a new trace, but no recompile where the graph never reads them.
            metrics.count("JitRetraceForGradients")
            self._gradient_traces += 1
            return
        changed = list(jit_state.changes(previous, key))
        metrics.count("JitRecompile")
        for path, _, _ in jit_state.differences(previous, key):
            metrics.count(f"JitRecompile({path})")
        if os.environ.get("BRAZE_DEBUG") == "1":
            reasons = "; ".join(changed) or "the arguments' structure changed"
            print(f"braze.jit({self.__name__}): compiling again at {user_location()}: {reasons}", file=sys.stderr)
        recompiles, limit = self._traces - 1 - self._gradient_traces, config.recompile_limit()
        if limit and recompiles % limit == 0:
            warnings.warn(
                f"braze.jit({self.__name__}) compiled {recompiles} times again (braze.config.recompile_limit() is "
                f"{limit}); the values that keep changing: {self._changing()}. Make a number that changes on "
                "every call a tensor, or list its attribute in its class's jit_inputs",
                RecompileWarning,
                stacklevel=3,
            )

    def _changing(self) -> str:
        """The values that changed between the last traces, with the values they took."""
        values: dict[str, list[str]] = {}
        recent = list(self._recent)
        for before, after in zip(recent, recent[1:], strict=False):
            for path, old, new in jit_state.differences(before, after):
                seen = values.setdefault(path, [] if old is None else [jit_state.describe(old)])
                seen.append("none" if new is None else jit_state.describe(new))
        return "; ".join(f"{path} ({', '.join(dict.fromkeys(seen))})" for path, seen in values.items())

    # Calls -----------------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if lazy.is_recording():  # called by a function being traced: part of its graph
            return self.fn(*args, **kwargs)
        reads = self._read(args, kwargs)
        if LEVELS.open and any(_has_open_tangent(t) for t in reads.tensors):
            # Inside braze.jvp: an executable cannot carry tangents, the function's ops can.
            return self.fn(*args, **kwargs)
        if any_differentiated(reads.tensors):
            # Inside braze.grad, or on a tensor with a gradient graph: the executable's
            # results would carry no graph (a silent zero gradient), the function's ops do.
            metrics.count("JitRunAsPlainCode")
            return self.fn(*args, **kwargs)
        key, compiled = self._find(reads)
        if compiled is None:
            self._explain(key)
            with collector.paused():
                return self._trace_and_run(args, kwargs, reads, key)
        metrics.count("JitCacheHit")
        keys = [g.next_key() for g in compiled.generators]
        arguments = self._arguments(compiled, reads.tensors, reads.numbers, keys)
        _release(compiled, reads.tensors)
        return self._finish(compiled, reads.tensors, self._execute(compiled, arguments))

    def _find(self, reads: jit_state.Reads) -> tuple[tuple, Compiled | None]:
        """The call's key and its executable, if compiled. A call that read what the last
        hit read (the same snapshot held, and the entries after the walk's are equal) has
        that hit's key: the key is neither built nor hashed again."""
        last, snapshot = self._last_hit, reads.snapshot
        if last is not None and snapshot is last[0] and reads.entries[len(snapshot.entries) :] == last[1]:
            return last[2], last[3]
        self._last_hit = None  # holds its snapshot's objects: none past a walk of new ones
        key = reads.key
        compiled = self._compiled.get(key)
        if compiled is not None and snapshot is not None:
            self._last_hit = (snapshot, reads.entries[len(snapshot.entries) :], key, compiled)
        return key, compiled

    def _arguments(self, compiled: Compiled, tensors: list[Tensor], numbers: list[float], keys: list[int]) -> list[Any]:
        arguments: list[Any] = []
        overwritten = compiled.overwritten
        for j, (kind, slot) in enumerate(compiled.inputs):
            if kind == "state":
                t = tensors[slot]
                if compiled.on_device:
                    arguments.append(t._value)
                else:
                    arguments.append(_donated_array(t) if j in overwritten else _host_array(t))
            elif kind == "number":
                arguments.append(_per_call(np.array(numbers[slot], np.float64), compiled))
            elif kind == "draw":
                arguments.append(_per_call(np.array(keys[slot], np.int64), compiled))
            else:
                arguments.append(slot)
        return arguments

    def _execute(self, compiled: Compiled, arguments: list[Any]) -> list[Any]:
        run = compiled.executable.run if compiled.on_device else compiled.executable
        with metrics.timed("ExecuteTime"):
            outputs = run(arguments)
        metrics.count("Execute")
        return outputs

    def _finish(self, compiled: Compiled, tensors: list[Tensor], outputs: list[Any]) -> Any:
        for position, output in compiled.state_slots:
            _write(tensors[position], outputs[output])
        for position, output in compiled.grad_slots:
            t = tensors[position]
            t.grad = _tensor(outputs[output], t.device)
        for position, source in compiled.grad_aliases:
            tensors[position].grad = tensors[source]
        for position in compiled.cleared_grads:
            tensors[position].grad = None
        device = tensors[0].device if tensors else _eager_of(LAZY_CPU)
        return compiled.rebuild([_tensor(outputs[k], device, kind) for k, kind in compiled.result_slots])

    # Tracing ---------------------------------------------------------------------------

    def _trace_and_run(self, args: tuple, kwargs: dict, reads: jit_state.Reads, key: tuple) -> Any:
        tensors = reads.tensors
        # The trace is recorded on the lazy CPU device whatever the tensors' device (recording
        # is device-independent); the executable is built for the device they live on.
        home = next((t.device for t in tensors if t.device.kind != LAZY_CPU.kind), LAZY_CPU)
        target = lazy.backend_of(home)
        on_device = not target.host_memory and all(t.device.kind == home.kind and not t.device.is_lazy for t in tensors)
        device: Device = LAZY_CPU
        grads_before = [t.grad for t in tensors]
        position_of = {id(t): k for k, t in enumerate(tensors)}
        with lazy.recording(tensors, device) as recorded, random.recording_draws() as drawn:
            numbers = _InputNumbers(reads.holders, reads.numbers, device)
            try:
                with metrics.timed("TraceTime"):
                    result = self.fn(*args, **kwargs)
            except DeviceError as error:
                raise DeviceError(f"{error}; {_UNSEEN}") from None
            finally:
                assigned = numbers.restore()
            if assigned:
                raise TraceError(
                    f"braze.jit({self.__name__}): the function set {', '.join(assigned)}, an input of the compiled "
                    "call, while it was traced: a compiled call runs no Python, so later calls would not set it. "
                    "Set it outside the jitted function (a learning-rate scheduler's step() belongs after the call)"
                )
            result_tensors, rebuild = _flatten_result(result)
            roots: list[lazy.Expr] = [r._value for r in result_tensors]
            state_slots, grad_slots, grad_aliases, cleared_grads = [], [], [], []
            for k, (t, leaf) in enumerate(zip(tensors, recorded.leaves, strict=True)):
                if t._value is not leaf:
                    state_slots.append((k, len(roots)))
                    roots.append(t._value)
                if t.grad is None:
                    if grads_before[k] is not None:
                        cleared_grads.append(k)
                elif id(t.grad) in position_of:  # a gradient read by the call, or another tensor it read
                    if t.grad is not grads_before[k]:
                        grad_aliases.append((k, position_of[id(t.grad)]))
                else:
                    grad_slots.append((k, len(roots)))
                    roots.append(t.grad._value)
        after = self._read(args, kwargs, again=False)
        # Tensors created while tracing (optimizer slots made on the first step) are
        # computed too; they change the signature, so this trace is not cached.
        known = {id(t) for t in tensors}
        fresh = [(t, len(roots) + i) for i, t in enumerate(t for t in after.tensors if id(t) not in known)]
        roots += [t._value for t, _ in fresh]
        # A trace that changed what the key guards (a Python side effect, the first step's
        # empty optimizer state) ran as eager code would; a replay would not repeat it.
        cacheable = not fresh and after.key == key
        trace = lazy.build_graph(roots)
        sources = {id(leaf): ("state", k) for k, leaf in enumerate(recorded.leaves)}
        sources.update({id(leaf): ("number", k) for k, leaf in enumerate(numbers.leaves)})
        sources.update({id(key_tensor._value): ("draw", k) for k, (_, key_tensor) in enumerate(drawn)})
        inputs = []
        for leaf, array in zip(trace.leaves, trace.args, strict=True):
            source = sources.get(id(leaf))
            if source is None and recorded.made_before(leaf):
                raise TraceError(
                    f"braze.jit({self.__name__}) read a {leaf.aval.dtype.name} tensor of shape "
                    f"{list(leaf.aval.shape)} on the lazy device that existed before the call; {_UNSEEN}"
                )
            inputs.append(source or ("captured", array))
        parameter_of = {source[1]: j for j, source in enumerate(inputs) if source[0] == "state"}
        read = set(parameter_of) | {k for k, _ in state_slots} | {source for _, source in grad_aliases}
        replaced = set(cleared_grads) | {k for k, _ in grad_slots}
        released_grads = [
            (k, position_of[id(grad)])
            for k, grad in enumerate(grads_before)
            if grad is not None and k in replaced and position_of[id(grad)] not in read
        ]
        graph = self._donating(trace.graph, state_slots, reads.paths, parameter_of)
        executable = self._executable(graph, target)
        if on_device:  # captured values never change: uploaded once, here
            inputs = [(kind, target.upload(slot) if kind == "captured" else slot) for kind, slot in inputs]
        compiled = Compiled(
            executable,
            inputs,
            [(k, type(t)) for k, t in enumerate(result_tensors)],
            rebuild,
            state_slots,
            grad_slots,
            grad_aliases,
            cleared_grads,
            released_grads,
            on_device,
            [generator for generator, _ in drawn],
            target,
            frozenset() if on_device else lazy.overwritten(executable),
        )
        keys = [int(key_tensor.item()) for _, key_tensor in drawn]  # this call's draws, made while tracing
        # The trace's expressions hold the tensors' buffers: let them go, so that this call
        # too writes donated ones in place rather than into copies (``_donated_array``).
        del trace, recorded, roots, result, result_tensors
        arguments = self._arguments(compiled, tensors, reads.numbers, keys)
        _release(compiled, tensors)
        outputs = self._execute(compiled, arguments)
        home = tensors[0].device if tensors else _eager_of(LAZY_CPU)
        for t, position in fresh:
            t.device = home
            _write(t, outputs[position])
        if cacheable:
            self._compiled.put(key, compiled)
        return self._finish(compiled, tensors, outputs)

    def _executable(self, graph: Graph, target: Backend) -> Any:
        """The executable of ``graph``: one compiled for an equal graph (a trace that differs
        from an earlier one only in what the graph never reads, such as gradients that
        ``zero_grad`` drops before the step computes new ones), else a new one."""
        key = (graph, id(target))  # graphs compare by structure (their nodes are hash-consed)
        executable = self._executables.get(key)
        if executable is not None:
            metrics.count("JitExecutableShared")
            return executable
        executable = lazy.compile_for_target(graph, target)
        self._compiles += 1
        metrics.count("JitCompile")
        self._executables.put(key, executable)
        return executable

    def _donating(self, graph: Graph, state_slots, paths: list[str], parameter_of: dict[int, int]) -> Graph:
        """Outputs that replace tensors of donated arguments may reuse their buffers."""
        if not self.donate_argnums:
            return graph
        donated = {}
        for position, output in state_slots:
            j = parameter_of.get(position)
            donate = j is not None and _under_any(paths[position], self.donate_argnums)
            if donate and graph.params[j].aval == graph.outputs[output].aval:
                donated[output] = j
        return Graph(graph.params, graph.outputs, donated) if donated else graph


def _release(compiled: Compiled, tensors: list[Any]) -> None:
    """Let go of the gradients the call replaces without reading them, before it runs."""
    for owner, position in compiled.released_grads:
        tensors[owner].grad = None
        tensors[position] = None


_UNSEEN = (
    "braze.jit moves onto its trace device, as inputs, only the tensors it finds from the function's arguments, "
    "closure and globals through lists, tuples, dicts and public attributes: pass this tensor as an argument, "
    "or hold it in a public attribute of one"
)


class _InputNumbers:
    """The input numbers as 0-d float64 tensors on the trace device, put in their
    attributes while the function is traced, so what is computed from them is computed in
    the graph; ``restore`` puts the numbers back."""

    def __init__(self, holders: list[jit_state.Holder], values: list[float], device: Device) -> None:
        self.leaves: list[Any] = []
        self._placed: dict[tuple[int, str], tuple[Any, str, Any, Any, str]] = {}
        for holder, value in zip(holders, values, strict=True):
            number = Tensor.from_numpy(np.array(value, np.float64), device)
            self.leaves.append(number._value)
            slot = (id(holder.owner), holder.name)
            if holder.index is None:
                original, placed, path = getattr(holder.owner, holder.name), number, holder.path
            else:  # one number of a tuple or list (Adam's betas): the others may be placed already
                _, _, original, before, path = self._placed.get(slot, (None, None, None, None, None))
                original = getattr(holder.owner, holder.name) if original is None else original
                items = list(original if before is None else before)
                items[holder.index] = number
                placed, path = type(original)(items), holder.path[: holder.path.rindex("[")]
            self._placed[slot] = (holder.owner, holder.name, original, placed, path)
            setattr(holder.owner, holder.name, placed)

    def restore(self) -> list[str]:
        """Put the numbers back; the paths of those the function assigned meanwhile."""
        assigned = []
        for owner, name, original, placed, path in self._placed.values():
            if getattr(owner, name) is not placed:
                assigned.append(path)
            setattr(owner, name, original)
        return assigned


@functools.cache
def _argument_path(i: int) -> str:
    return f"args[{i}]"


def _under_any(path: str, argnums: Sequence[int]) -> bool:
    return any(path == f"args[{i}]" or path.startswith((f"args[{i}].", f"args[{i}][")) for i in argnums)


def _static(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def _per_call(array: np.ndarray, compiled: Compiled) -> Any:
    """A number or key given to each call: on the device when the call runs there."""
    return compiled.backend.upload(array) if compiled.on_device and compiled.backend else array


def _write(t: Tensor, output: Any) -> None:
    """Make an executable's output ``t``'s value: a device array as it is (the call ran on
    the device), a NumPy array through ``t``'s executor."""
    if isinstance(output, np.ndarray):
        t._value = executor_for(t.device).from_numpy(output, t.device)
    else:
        t._value = output


def _tensor(output: Any, device: Device, kind: type[Tensor] = Tensor) -> Tensor:
    if isinstance(output, np.ndarray):
        return kind.from_numpy(output, device)
    return kind._make(output, output.aval, device)


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
        build = trees.sequence_builder(result)  # a namedtuple comes back as one

        def rebuild(items: list[Tensor]) -> Any:
            out, offset = [], 0
            for (_, part_rebuild), size in zip(parts, sizes, strict=True):
                out.append(part_rebuild(items[offset : offset + size]))
                offset += size
            return build(out)

        return [t for p in parts for t in p[0]], rebuild
    if isinstance(result, dict):
        keys = list(result)
        values, rebuild_values = _flatten_result([result[k] for k in keys])
        return values, lambda items: dict(zip(keys, rebuild_values(items), strict=True))
    return [], lambda _: result


def jit(
    fn: Callable[..., Any] | None = None, *, static_argnums: Sequence[int] = (), donate_argnums: Sequence[int] = ()
) -> Any:
    """Compile ``fn`` on its first call for each signature: the shapes, dtypes and devices of
    every tensor it reaches and every guarded value (see the module docstring);
    ``static_argnums`` arguments are guarded by their value (or ``repr``), and the results
    of ``donate_argnums`` arguments' tensors may reuse their buffers."""
    if fn is None:
        return lambda f: JittedFunction(f, static_argnums, donate_argnums)
    return JittedFunction(fn, static_argnums, donate_argnums)
