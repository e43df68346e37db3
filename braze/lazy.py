"""Lazy tensors (X10): ops record a trace; a barrier compiles and runs it as one graph.

A lazy tensor holds an ``Expr``: either device data (a leaf) or a pending primitive
application. ``barrier()`` gathers the pending expressions of every live lazy tensor,
turns them into one IR graph (device data and per-step Python numbers become parameters,
so a training loop traces the same graph every step), finds or compiles its executable in
the cache, runs it, and turns each computed expression into device data in place, which
cuts the trace.

Reading a value (``.numpy()``, ``.item()``, ``print``) runs only the part of the trace it
needs and leaves the trace intact, so the graph at the next barrier is the usual step
graph and still hits the cache.

The backend that compiles a device's graphs, and the one holding its data, come from the
registry (``runtime.backend``): this module names none.
"""

from __future__ import annotations

import contextlib
import itertools
import operator
import os
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from braze.ir.errors import TraceError
from braze.ir.graph import Graph, Node, parameter
from braze.ir.primitive import Aval, Category, Primitive
from braze.ir.prims.sources import constant, iota
from braze.ir.text import format_aval
from braze.passes.report import Report, build_report
from braze.runtime import collector, metrics
from braze.runtime.backend import Backend, backend_for, home_backend
from braze.runtime.cache import BoundedCache, ExecutableCache
from braze.runtime.device import LAZY_CPU as LAZY
from braze.runtime.device import Device, default_device, set_default_device
from braze.tensor import Tensor, executor_for, register_executor, user_location

_SEQUENCE = itertools.count()
_RECORDED = operator.attrgetter("seq")


class LoopBodyInput:
    """The data of a loop body's input while the body is traced (``braze.lax``): never read,
    never computed. A value computed from one that outlives the trace escaped the body."""

    def __repr__(self) -> str:
        return "<loop body input>"


class LoopBodyLeak(TraceError):
    """A value computed inside a traced loop body was kept outside it and then computed."""


class Expr:
    """A node of the lazy trace: device data (``data`` set) or a pending op on ``inputs`` (a
    primitive, a ``Program`` called, or one of a call's ``RESULT``s)."""

    __slots__ = (
        "primitive",
        "inputs",
        "attrs",
        "aval",
        "signature",
        "data",
        "seq",
        "read_value",
        "donor",
        "lent",
        "__weakref__",
    )

    def __init__(
        self, primitive: Primitive | None, inputs: tuple, attrs: dict, aval: Aval, signature: int | None, data=None
    ) -> None:
        self.primitive = primitive
        self.inputs = inputs
        self.attrs = attrs
        self.aval = aval
        self.signature = signature  # names (primitive, input types, attributes): see tensor._abstract_eval
        self.data = data
        self.seq = next(_SEQUENCE)
        self.read_value: np.ndarray | None = None
        self.donor: Expr | None = None  # the device data this value replaces in its tensor
        self.lent = False  # its data is held elsewhere too (``_lend_shared``): a donation writes into a copy

    @property
    def pending(self) -> bool:
        return self.data is None

    def materialize(self, array: np.ndarray) -> None:
        """Become device data, dropping the inputs (which cuts the trace here)."""
        self.data = array
        self.primitive, self.inputs, self.attrs, self.read_value, self.donor = None, (), {}, None, None


class Program:
    """Ops recorded over slots (``braze.replay``), bound on a lazy device as one expression.

    A lazy training step replays the same backward pass, clipping and optimizer update
    every step: bound one op at a time they are ~1,300 of a GPT step's ~1,700 expressions,
    each made, walked and keyed at the barrier, then freed. ``call`` binds a program as one
    expression reading its operands, plus one expression per result, so the trace carries
    a program's identity where it carried its ops; they join the IR graph only when a
    trace's graph is built (a cache miss), as the same nodes the ops bound one by one
    would make (the numbers a trace lifts into graph inputs are operands of the call,
    made each time it is bound: see ``replay.Recorded``).

    ``ops`` are (primitive, attrs, input codes, aval, ...): a code below ``arity`` is an
    operand, above it an earlier op's result. ``signatures`` name the call (first) and
    each result: numbers never reused, so equal trace keys still mean equal graphs."""

    __slots__ = ("ops", "arity", "signatures")
    category = None  # not a source: ``Recording.fixed`` looks through a call to its operands

    def __init__(self, ops: list[tuple], arity: int, results: int) -> None:
        self.ops = ops
        self.arity = arity
        self.signatures = [next(_PROGRAM_SIGNATURES) for _ in range(results + 1)]

    def __deepcopy__(self, memo: dict) -> Program:
        return self  # never changed: a copied tensor's call is the same program

    def nodes(self, operands: list[Node]) -> list[Node]:
        """The graph nodes of the operands followed by those of each op's result."""
        values = list(operands)
        for primitive, attrs, codes, aval, *_ in self.ops:
            values.append(Node.make(primitive, tuple([values[k] for k in codes]), attrs, aval))
        return values


class _Result:
    """The primitive of an expression reading one value of a program's call."""

    category = None

    def __reduce__(self) -> str:
        return "RESULT"  # copied and pickled as the one instance, which ``Trace.graph`` looks for


RESULT = _Result()
_PROGRAM_SIGNATURES = itertools.count(-1, -1)  # apart from the shape rules' signatures, which count up


def call(program: Program, operands: Sequence[Expr], results: Sequence[tuple[int, Aval]]) -> list[Expr]:
    """Bind ``program`` on ``operands``: the expression of each (code, aval) in ``results``
    (an operand's code gives the operand itself; a code listed twice, one expression, as
    the ops bound one by one would give: the graph computes one buffer for both)."""
    node = Expr(program, tuple(operands), {}, None, program.signatures[0])
    found: dict[int, Expr] = {}
    for j, (k, aval) in enumerate(results, 1):
        if k not in found:
            found[k] = (
                operands[k] if k < program.arity else Expr(RESULT, (node,), {"code": k}, aval, program.signatures[j])
            )
    return [found[k] for k, _ in results]


def liftable(primitive: Any, attrs: dict) -> bool:
    """Scalars that may change between steps (learning rates, bias corrections) become
    parameters; 0 and 1 stay constants, for the simplifier, unless they stand for a number
    that changes (an ``InputLiteral``: a learning rate of 1)."""
    if primitive is not constant:
        return False
    literal = attrs["value"]
    array = literal.array
    return array.ndim == 0 and array.dtype.kind in "if" and (literal.is_input or array.item() not in (0, 1))


def _liftable(expr: Expr) -> bool:
    return liftable(expr.primitive, expr.attrs)


def _recorded_ops(roots: Sequence[Expr]) -> list[Expr]:
    """The pending ops that ``roots`` depend on, in recording order (inputs before users);
    device data and liftable scalars are the trace's leaves (never pushed, so never popped)."""
    seen = set(roots)
    stack = [r for r in roots if _is_op(r)]
    ops = []
    visit, push = seen.add, stack.append
    while stack:
        expr = stack.pop()
        ops.append(expr)
        for i in expr.inputs:
            if i not in seen:
                visit(i)
                if i.data is None and (i.primitive is not constant or not _liftable(i)):  # _is_op, inlined
                    push(i)
    ops.sort(key=_RECORDED)
    return ops


def _is_op(expr: Expr) -> bool:
    return expr.data is None and (expr.primitive is not constant or not _liftable(expr))


class Trace:
    """The pending expressions computing some roots, in the order they were recorded.

    Device data and liftable scalars are the graph's parameters, numbered in the order the
    trace first reads them: ``leaves`` holds their expressions and ``args`` their values;
    ``uses`` counts how many times the trace's expressions read each device-data leaf (by
    id). ``key`` describes the trace as plain data, in two flat tuples (one per trace, not
    one per op: hashed and compared at every barrier): each op's signature (which names its
    primitive, attributes and input types, so its arity too; an op whose attributes have
    no signature, by its primitive, attributes and arity), then each input as the
    position of an earlier op or parameter, or as its type where the input is a parameter
    read for the first time (it takes the next position); then the roots the same way.
    Traces with equal keys have the same graph, since shape rules are pure, so a
    repeated step finds its graph by the key without building or hashing IR nodes.
    ``graph`` builds the IR graph when asked.
    """

    def __init__(self, roots: Sequence[Expr]) -> None:
        self.leaves: list[Expr] = []
        self.args: list[np.ndarray] = []
        self.uses: dict[int, int] = {}
        self._ops: list[Expr | int] = []  # each position's op, or its parameter index (never a leaf)
        self._graph: Graph | None = None
        position: dict[Expr, int] = {}
        uses, ops, leaves, args = self.uses, self._ops, self.leaves, self.args
        key: list[Any] = []
        entry = key.append

        def read(i: Expr) -> None:
            k = position.get(i)
            if k is not None:
                entry(k)
                return
            position[i] = len(ops)  # a parameter: ops come before their users
            ops.append(len(leaves))
            leaves.append(i)
            args.append(i.attrs["value"].array if i.data is None else i.data)
            entry(i.aval)

        where = position.get
        for expr in _recorded_ops(roots):
            signature = expr.signature
            entry(signature if signature is not None else (expr.primitive, tuple(expr.attrs.items()), len(expr.inputs)))
            for i in expr.inputs:
                k = where(i)
                if k is None:
                    read(i)
                    if i.data is not None:
                        uses[id(i)] = 1
                else:
                    entry(k)
                    if i.data is not None:  # a leaf read before, by an op (which counted it)
                        uses[id(i)] += 1
            position[expr] = len(ops)
            ops.append(expr)
        ops_key = tuple(key)
        key.clear()
        for r in roots:
            read(r)
        self._outputs = tuple([position[r] for r in roots])
        self.key = (ops_key, tuple(key))

    @property
    def graph(self) -> Graph:
        if self._graph is None:
            params = [parameter(i, leaf.aval) for i, leaf in enumerate(self.leaves)]
            nodes: list[Any] = []
            node_of: dict[int, Any] = {}  # a node, or a call's list of nodes
            for op in self._ops:
                if isinstance(op, int):
                    node = node_of[id(self.leaves[op])] = params[op]
                elif op.primitive is RESULT:
                    node = node_of[id(op)] = node_of[id(op.inputs[0])][op.attrs["code"]]
                elif isinstance(op.primitive, Program):
                    node = node_of[id(op)] = op.primitive.nodes([node_of[id(i)] for i in op.inputs])
                else:
                    inputs = tuple([node_of[id(i)] for i in op.inputs])
                    node = node_of[id(op)] = Node.make(op.primitive, inputs, op.attrs, op.aval)
                nodes.append(node)
            self._graph = Graph(tuple(params), tuple([nodes[k] for k in self._outputs]))
        return self._graph


def build_graph(roots: Sequence[Expr]) -> Trace:
    """The trace computing ``roots``, its IR graph as ``.graph``."""
    return Trace(roots)


def donations(roots: Sequence[Expr], trace: Trace) -> dict[int, int]:
    """Outputs that may be written into the buffer of the device data they replace.

    A tensor updated in place (``p -= lr * g``) replaces device data that, once the step
    has read it, nobody needs: its buffer can take the new value. That is safe only when
    the graph's own expressions are the old data's only holders, which CPython's reference
    count tells exactly: anything else (a ``detach()`` alias, a gradient graph kept with
    ``retain_graph``) keeps the copy semantics. A buffer that the old data shares with
    someone the count cannot see (``Expr.lent``: a NumPy array read from it, another
    tensor's data; or, counted on the buffer itself, see ``_alone``: an array of yours that
    ``from_numpy``, ``asarray`` or ``load_state_dict`` took without a copy, a read-only
    array, a value read before the barrier) is still donated, but ``run`` hands the step a
    copy to write into: the graph, so its executable, is the same whoever reads the buffer.
    """
    position = {id(leaf): j for j, leaf in enumerate(trace.leaves)}
    donated: dict[int, int] = {}
    for k, root in enumerate(roots):
        donor = root.donor
        if donor is None or id(donor) not in position or donor.aval != root.aval:
            continue
        j = position[id(donor)]
        # Known holders: the graph's reads of it, trace.leaves, root.donor, `donor`, getrefcount's argument.
        if j not in donated.values() and sys.getrefcount(donor) == trace.uses.get(id(donor), 0) + 4:
            donated[k] = j
    return donated


class RecompileExplainer:
    """With ``BRAZE_DEBUG=1``: say why a call site compiles a graph other than its last one."""

    def __init__(self) -> None:
        self._last: dict[str, Graph] = {}

    def note_compile(self, site: str, graph: Graph) -> None:
        previous = self._last.get(site)
        self._last[site] = graph
        if previous is not None and os.environ.get("BRAZE_DEBUG") == "1":
            user = user_location()
            where = site if user == site else f"{site} (your code: {user})"
            print(f"braze: compiling again at {where}: {explain_difference(previous, graph)}", file=sys.stderr)


def explain_difference(before: Graph, after: Graph) -> str:
    """The first difference between two graphs, in words."""
    if len(before.params) != len(after.params):
        return f"the graph has {len(after.params)} inputs instead of {len(before.params)}"
    for i, (a, b) in enumerate(zip(before.params, after.params, strict=True)):
        if a.aval != b.aval:
            what = "shape" if a.aval.dtype == b.aval.dtype else "dtype"
            return f"input {i} {what} changed from {format_aval(a.aval)} to {format_aval(b.aval)}"
    if len(before.outputs) != len(after.outputs):
        return f"the graph has {len(after.outputs)} outputs instead of {len(before.outputs)}"
    old_nodes, new_nodes = before.nodes(), after.nodes()
    for a, b in zip(old_nodes, new_nodes, strict=False):
        if (a.op, a.attrs, a.aval) != (b.op, b.attrs, b.aval):
            return f"the structure differs: {a.op} {format_aval(a.aval)} became {b.op} {format_aval(b.aval)}"
    return f"the structure differs: {len(old_nodes)} nodes became {len(new_nodes)}"


_RUNTIME_FILES = tuple(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    for name in ("lazy.py", "tensor.py", "ops", "nn", "optim")
)


def call_site() -> str:
    """Where a barrier or read was asked for: the first frame outside the lazy runtime, the
    op library and the layers, so the training loop's own line names the graph."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_RUNTIME_FILES):
        frame = frame.f_back
    return "<unknown>" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def backend_of(device: Device) -> Backend:
    """The backend that compiles ``device``'s graphs: ``$BRAZE_BACKEND`` when it names one
    serving the device's kind, else the preferred available one (native code on the CPU
    when a C compiler exists, else the reference interpreter)."""
    return backend_for(device.kind)


def compile_for_target(graph: Graph, backend: Backend) -> Any:
    """Optimize ``graph`` with ``backend``'s pass pipeline, then build its executable."""
    with collector.paused():
        return backend.compile(graph)


def on_backend(backend: Backend, args: Sequence[Any]) -> list[Any]:
    """``args`` in ``backend``'s memory: host arrays (a step's new scalars) uploaded."""
    if backend.host_memory:
        return list(args)
    return [backend.upload(a) if isinstance(a, np.ndarray) else a for a in args]


class LiveTensors:
    """The lazy tensors of one device that were given a pending value, held weakly.

    Every op on a lazy device adds its result here, so adding is one weak reference and an
    append (a ``WeakSet`` costs a callback per entry); dead and computed entries are
    dropped when the list has doubled, and a tensor may appear more than once."""

    __slots__ = ("_refs", "_limit")

    def __init__(self) -> None:
        self._refs: list[weakref.ref] = []
        self._limit = 1024

    def __len__(self) -> int:
        return len(self._refs)

    def add(self, tensor: Tensor) -> None:
        self._refs.append(weakref.ref(tensor))
        if len(self._refs) > self._limit:
            pending = {id(t): t for t in self.tensors() if t._value.data is None}
            self._refs = [weakref.ref(t) for t in pending.values()]
            self._limit = max(1024, 2 * len(self._refs))

    def tensors(self) -> list[Tensor]:
        return [t for t in (ref() for ref in self._refs) if t is not None]

    def discard(self, leaving: Callable[[Tensor], bool]) -> None:
        """Drop the tensors ``leaving`` picks (a loop body's values: no barrier computes them)."""
        self._refs = [ref for ref in self._refs if (t := ref()) is not None and not leaving(t)]


class TraceCache:
    """The graph of each recorded trace seen recently, by the trace's key and donations
    (least recently used entries evicted past ``max_size``)."""

    def __init__(self, max_size: int = 256) -> None:
        self._graphs: BoundedCache[tuple, Graph] = BoundedCache(max_size)

    def __len__(self) -> int:
        return len(self._graphs)

    def graph(self, trace: Trace, donated: dict[int, int]) -> Graph:
        key = (trace.key, tuple(sorted(donated.items())))
        try:
            graph = self._graphs.get(key)
        except TypeError:  # an unhashable attribute value: this trace is never cached
            return _donating(trace.graph, donated)
        if graph is not None:
            metrics.count("TraceCacheHit")
            return graph
        metrics.count("TraceCacheMiss")
        return self._graphs.put(key, _donating(trace.graph, donated))

    def clear(self) -> None:
        self._graphs.clear()


def _donating(graph: Graph, donated: dict[int, int]) -> Graph:
    return Graph(graph.params, graph.outputs, donated) if donated else graph


class LazyExecutor:
    """Records ops as expressions; runs traces at barriers and reads."""

    def __init__(self) -> None:
        self.cache = ExecutableCache()
        self.traces = TraceCache()
        self.explainer = RecompileExplainer()
        self._live: dict[Device, LiveTensors] = {}

    # Executor protocol --------------------------------------------------------------

    def apply(
        self, primitive: Primitive, values: list, attrs: dict, aval: Aval, device: Device, signature: int | None
    ) -> Expr:
        return Expr(primitive, tuple(values), attrs, aval, signature)

    def from_numpy(self, array: np.ndarray, device: Device) -> Expr:
        home = home_backend(device.kind)
        if home.host_memory:
            metrics.count("TransferToDevice")
            data = np.require(array, requirements="C")
        else:  # the data lives on the device from here on (the upload is counted)
            data = home.upload(array)
        return Expr(None, (), {}, _aval_of(array), None, data=data)

    def to_numpy(self, expr: Expr, device: Device) -> np.ndarray:
        if getattr(_HOLD, "recording", False) and not _fixed_while_recording(expr):
            raise TraceError(
                f"a {format_aval(expr.aval)} tensor's value was read while tracing (at {user_location()}): a "
                "compiled call runs no Python, so the value read now would be frozen into every later call. "
                "Compute with tensor ops instead (braze.where for a choice between values), or return the "
                "tensor and read it after the call"
            )
        home = home_backend(device.kind)
        if home.host_memory:
            metrics.count("TransferFromDevice")
            if expr.data is not None:
                expr.lent = True  # the caller may keep the array: a later step must not write into it
                return expr.data
        if expr.read_value is None:  # computed once; device data never changes, so one download serves every read
            value = expr.data if expr.data is not None else self.run([expr], device)[0]
            expr.read_value = value if home.host_memory else home.download(value)  # a download counts itself
            if not home.host_memory:  # shared by every later read: nobody may write into it
                expr.read_value.flags.writeable = False
        return expr.read_value

    def track(self, tensor: Tensor, previous: Expr | None = None) -> None:
        value = tensor._value
        if value.data is None:
            live = self._live.get(tensor.device)
            if live is None:
                live = self._live[tensor.device] = LiveTensors()
            live.add(tensor)
            if previous is not None and previous.data is not None and value.donor is None:
                value.donor = previous

    def forget(self, device: Device, leaving: Callable[[Tensor], bool]) -> None:
        """Stop tracking the pending tensors of ``device`` that ``leaving`` picks."""
        live = self._live.get(device)
        if live is not None:
            live.discard(leaving)

    # Barriers ---------------------------------------------------------------------------

    def pending_roots(self, device: Device) -> list[Expr]:
        live = self._live.get(device)
        if not live:
            return []
        unique = {id(t._value): t._value for t in live.tensors() if t._value.data is None}
        return sorted(unique.values(), key=lambda e: e.seq)

    def barrier(self, device: Device) -> None:
        roots = self.pending_roots(device)
        live = self._live.pop(device, None)
        if not roots:
            return
        metrics.count("Barrier")
        try:
            results = self.run(roots, device, donate=True)
        except LoopBodyLeak:
            raise  # the leaked values can never be computed: they are not kept for the next barrier
        except BaseException:
            # Failed before the executable ran (out of memory, a compile error, Ctrl-C): the step's
            # tensors stay pending, so the next barrier runs them again.
            if live is not None:
                for tensor in live.tensors():
                    self.track(tensor)
            raise
        for root, result in zip(roots, results, strict=True):
            root.materialize(result)

    def run(self, roots: Sequence[Expr], device: Device, donate: bool = False) -> list[Any]:
        """Compile (or find) and execute the graph computing ``roots`` on the backend of
        ``device``: the results are values in its memory (NumPy arrays on the CPU); with
        ``donate``, outputs that replace dead device data are written into its buffers
        where the backend allows it."""
        backend = backend_of(device)
        with metrics.timed("TraceTime"):
            trace = Trace(roots)
            donating = donate and backend.donates
            donated = donations(roots, trace) if donating else {}
            graph = self.traces.graph(trace, donated)
            args, leaves = trace.args, trace.leaves
            del trace
            if any(isinstance(a, LoopBodyInput) for a in args):
                raise LoopBodyLeak(
                    "a value computed inside a braze.lax loop body was kept outside it (assigned to an outside "
                    "tensor, appended to a list, or a layer's state updated in training mode, as "
                    "BatchNormalization's) and cannot be computed: return it from the body, in the carry or the "
                    "ys, instead"
                )
        if donated:
            metrics.count("DonatedBuffers", len(donated))
        metrics.record("GraphNodes", len(graph.nodes()))
        executable, hit = self.cache.get_or_compile(graph, backend.name, lambda g: compile_for_target(g, backend))
        if not hit:
            self.explainer.note_compile(call_site(), graph)  # the stack still holds the user's frame
        if donated:
            written = overwritten(executable)
            for j in donated.values():
                # A buffer held elsewhere too is not written: the step writes into a copy.
                if j in written and (leaves[j].lent or not _alone(args, j)):
                    args[j] = _own_copy(args[j], device)
                    metrics.count("DonatedBufferCopies")
        with metrics.timed("ExecuteTime"):
            # Device data in and out; only the step's new scalars (a learning rate) are uploaded.
            results = executable.run(on_backend(backend, args))
        metrics.count("Execute")
        if donating:  # the roots take these results as their data: only then may a later step donate them
            _lend_shared(roots, leaves, args, results, donated)
        return results


def overwritten(executable: Any) -> frozenset[int]:
    """The parameters whose buffers ``executable`` writes results into (donated ones that
    its backend does update in place)."""
    found = getattr(executable, "overwritten", None)
    return frozenset(executable.graph.donated.values()) if found is None else found


def _references(arrays: list[Any], j: int) -> int:
    """The references to ``arrays[j]``, counted the same way wherever it is asked."""
    return sys.getrefcount(arrays[j])


def _alone(args: list[Any], j: int) -> bool:
    """Whether the host buffer ``args[j]`` (the data of the trace's leaf ``j``) is braze's
    to overwrite: an array that owns its memory (a view's memory is its base's, which others
    may read through other views), is writeable, and that nothing but its expression and the
    trace holds: no array of yours (``Tensor.from_numpy``, ``asarray`` and
    ``load_state_dict`` take NumPy arrays without a copy), no view read from it, no other
    tensor's data, no value read before the barrier that came out as this buffer. A device
    buffer is another backend's, whose expressions tell with ``lent``."""
    if not isinstance(args[j], np.ndarray):
        return True
    if _references(args, j) != _HELD_BY_TRACE:  # counted before a local name holds it too
        return False
    return owned(args[j])


def owned(array: np.ndarray) -> bool:
    """An array that owns its memory (a view's is its base's, which others may read through
    other views) and may be written."""
    return bool(array.flags.owndata and array.flags.writeable)


def _own_copy(value: Any, device: Device) -> Any:
    home = home_backend(device.kind)
    return np.array(value) if home.host_memory else home.upload(home.download(value))


def _lend_shared(
    roots: Sequence[Expr], leaves: list[Expr], args: list[Any], results: list[Any], donated: dict[int, int]
) -> None:
    """Mark the expressions that hold one buffer between them as lent: a result that is an
    input's own buffer (a gradient equal to an input), or one buffer for two results (two
    gradients computed alike). A later step that donates it writes into a copy (``run``):
    in place, it would change the other tensor too, which eager tensors never do. A
    donated result takes over the buffer of the data it replaces, which nothing else holds."""
    holder = {id(array): leaf for leaf, array in zip(leaves, args, strict=True)}
    for k, (root, result) in enumerate(zip(roots, results, strict=True)):
        other = holder.get(id(result))
        if other is not None and not (k in donated and other is leaves[donated[k]]):
            other.lent = root.lent = True
        holder[id(result)] = root


def _aval_of(array: np.ndarray) -> Aval:
    from braze.ir.dtypes import storage_dtype

    return Aval(tuple(array.shape), storage_dtype(array.dtype))


def _held_by_trace() -> int:
    leaf = Expr(None, (), {}, _aval_of(np.empty(0, np.float32)), None, data=np.empty(0, np.float32))
    return _references([leaf.data], 0)


# What ``_references`` says of a buffer held by one expression's data and a trace's list of
# arguments alone: measured, since what a call's arguments count differs between versions.
_HELD_BY_TRACE = _held_by_trace()

EXECUTOR = LazyExecutor()
register_executor("LAZY", EXECUTOR)


_HOLD = threading.local()


@contextlib.contextmanager
def barriers_held() -> Iterator[None]:
    """Barriers inside the block do nothing (``braze.jit`` traces a whole function as one graph)."""
    previous = getattr(_HOLD, "held", False)
    _HOLD.held = True
    try:
        yield
    finally:
        _HOLD.held = previous


class Recording:
    """What :func:`recording` hands its block: the device data each moved tensor starts from
    (``leaves``, in the order given), and whether an expression was made before the block."""

    def __init__(self, leaves: list[Expr], start: int) -> None:
        self.leaves = leaves
        self._start = start

    def made_before(self, expr: Expr) -> bool:
        return expr.seq < self._start

    def fixed(self, expr: Expr) -> bool:
        """Whether ``expr``'s value is the same on every call of the recorded function:
        computed from data the function made itself (Python numbers and lists, which the
        call's guards cover: a shape, ``[1, 1]``) by ops that draw nothing, and not from its
        inputs, the tensors it captured, random draws or a number that changes between
        calls (a learning rate). Such a value may be read while recording, as TensorFlow
        folds a shape computed with ops."""
        leaves = {id(leaf) for leaf in self.leaves}
        stack, seen = [expr], set()
        while stack:
            e = stack.pop()
            if id(e) in seen:
                continue
            seen.add(id(e))
            if e.data is not None:
                if self.made_before(e) or id(e) in leaves:
                    return False
            elif e.primitive.category is Category.SOURCE and e.primitive is not iota:
                if e.primitive is not constant or e.attrs["value"].is_input:
                    return False
            else:
                stack.extend(i for i in e.inputs if isinstance(i, Expr))
        return True


def _fixed_while_recording(expr: Expr) -> bool:
    current = getattr(_HOLD, "current", None)
    return current is not None and current.fixed(expr)


@contextlib.contextmanager
def recording(tensors: Sequence[Tensor], device: Device = LAZY) -> Iterator[Recording]:
    """Record a function as one graph (what ``braze.jit`` compiles): ``tensors`` move onto
    the lazy ``device`` as device data for the block, with those of their gradients that
    are among them (the others are dropped for the block), and tensors
    made without a device are made there; barriers do nothing, and reading a value is a
    :class:`TraceError`, since a value read while recording would be frozen into the graph.
    Afterwards every tensor has its own value, device, gradient and gradient record back,
    what the block left pending is dropped (it is never run by a later barrier), and the
    tensors pending on ``device`` before the block are pending again."""
    arrays = [executor_for(t.device).to_numpy(t._value, t.device) for t in tensors]
    saved = [(t, t._value, t.device, t.grad, t._grad_node) for t in tensors]
    before = EXECUTOR._live.pop(device, None)
    start = next(_SEQUENCE)
    default = default_device()
    set_default_device(device)
    recorded = {id(t) for t in tensors}
    try:
        for t, array in zip(tensors, arrays, strict=True):
            grad = t.grad if t.grad is not None and id(t.grad) in recorded else None
            t.device, t._value, t.grad, t._grad_node = device, EXECUTOR.from_numpy(array, device), grad, None
        previous = getattr(_HOLD, "recording", False), getattr(_HOLD, "current", None)
        block = Recording([t._value for t in tensors], start)
        _HOLD.recording, _HOLD.current = True, block
        try:
            with barriers_held():
                yield block
        finally:
            _HOLD.recording, _HOLD.current = previous
    finally:
        set_default_device(default)
        EXECUTOR._live.pop(device, None)
        if before is not None:
            EXECUTOR._live[device] = before
        for t, value, home, grad, node in saved:
            t._value, t.device, t.grad, t._grad_node = value, home, grad, node


def is_recording() -> bool:
    """Whether a function is being recorded by :func:`recording` on this thread."""
    return getattr(_HOLD, "recording", False)


def barrier(devices: Device | Iterable[Device] | None = None) -> None:
    """Run every pending computation on the lazy device(s) as one graph each (X10's
    ``LazyTensorBarrier``); every live lazy tensor holds device data afterwards."""
    if getattr(_HOLD, "held", False):
        return
    if devices is None:
        targets = list(EXECUTOR._live)
    elif isinstance(devices, Device):
        targets = [devices]
    else:
        targets = list(devices)
    for device in targets:
        EXECUTOR.barrier(device)
    _CUT[0] = next(_SEQUENCE)


# Expressions made since the last barrier past which a step boundary cuts the trace.
LONG_TRACE = 1000
_CUT = [0]  # the expression sequence number at the last barrier


def step_boundary() -> None:
    """Where a training step may begin (a ``GradientTape`` block opening): the pending trace
    runs first if more than ``LONG_TRACE`` expressions were made since the last barrier.
    A loop that reaches no barrier (variables updated by ``assign_sub``, no optimizer)
    then compiles graphs of a few steps, one like the next, instead of one graph that
    grows with every step; a step that ends at a barrier (an optimizer's) is not cut."""
    if EXECUTOR._live and not getattr(_HOLD, "held", False) and next(_SEQUENCE) - _CUT[0] > LONG_TRACE:
        barrier()


def cache_size() -> int:
    return len(EXECUTOR.cache)


def trace(fn: Callable[..., Any], *args: Any, device: Device | None = None) -> Graph:
    """The graph of ``fn(*args)`` with tensor arguments moved to a lazy device (nothing runs).

    Module and optimizer arguments should already live on that device."""
    target = device or LAZY
    moved = [a.to(target) if isinstance(a, Tensor) else a for a in args]
    start = next(_SEQUENCE)  # what was pending before the call is not part of its graph
    with collector.paused():
        with barriers_held():  # the whole function is one graph, optimizer steps included
            result = fn(*moved)
        results = result if isinstance(result, (tuple, list)) else (result,)
        roots = [r._value for r in results if isinstance(r, Tensor)]
        roots += [e for e in EXECUTOR.pending_roots(target) if e.seq > start and all(e is not r for r in roots)]
        return build_graph([r for r in roots if r.data is None]).graph


def explain(fn: Callable[..., Any], *args: Any, device: Device | None = None) -> Report:
    """Trace ``fn(*args)``, run the pass pipeline, and report what the compiler made of it:
    the fused graph, each fusion group, kernel count and peak memory against the unfused graph."""
    target = device or LAZY
    graph = trace(fn, *args, device=target)
    backend = backend_of(target)
    report = build_report(graph, backend.optimize(graph), backend.alignment)
    EXECUTOR._live.pop(target, None)  # what was traced for the report is not run
    return report
