"""What a jitted function reads from Python, found on every call by walking what it can reach.

The roots are the arguments and the function's own state: the object of a bound method, a
callable object itself, a function's default values, the cells it closes over, the
globals its code names and the attributes its code reads from a module of the user's that
it names (``settings.SCALE``), and the same of every user function met on the way
(functions and modules of braze, the standard library and installed packages are only
compared by identity). From the roots the walk
follows lists, tuples, dicts and the public attributes of objects (names without a
leading underscore, in their ``__dict__`` or ``__slots__``) and, for an object of a class
the user wrote, its class's public attributes and the methods a call reaches (``call``,
``train_step``... and the methods they name; their globals and closures are read as a
function's are), at most ``MAX_DEPTH`` deep, and sorts what it meets:

- **tensors** are state: their values are the executable's inputs, read on every call,
  and so are the gradients they hold (``.grad``, as ``<path>.grad``: a step that
  accumulates gradients over calls reads them as eager code does);
- **numbers held in an attribute that the object's class lists in** ``jit_inputs`` (an
  optimizer's learning rate and its other hyperparameters) are inputs too, read on every
  call; a zero one is a guard instead, since a zero term (no weight decay, no momentum)
  is left out of the computation;
- **objects whose class sets** ``jit_ignore = True`` (Keras callbacks, such as the
  ``model.history`` that ``fit`` keeps) are passed over: they hold nothing a step computes
  with;
- **everything else** is a guard, part of the key under which the executable is cached:
  every other number, bool, string and None (a module's ``training`` flag, a dropout rate,
  a closed-over float; a zero or NaN float by its bits), a NumPy array's shape, dtype and
  values (a big one's by a digest of its bytes, so that writing into it between calls is
  seen), and the identity of functions, classes, modules and random generators (whose
  keys are drawn as inputs, see :mod:`braze.ops.random`).

A walk leaves a ``Snapshot`` of what it met: every list, dict, object and function it
walked with what each held (by identity), every array's shape, dtype and contents, and
every tensor's guard and gradient. The next call checks it (``read_again``) and, where
everything holds what it held (only an argument tensor or a gradient may be another
tensor, of the same kind, shape, dtype, device and ``requires_grad``, and the tuples,
lists and dicts passed as arguments others of the same shape), takes the walk's
reading without walking: whatever could change what a walk returns is what the snapshot
checks. The snapshot holds what it checks until the next call.

A tensor's guard is its shape, dtype, device and whether it requires grad (a parameter
frozen between calls has no gradient, as in eager execution). The key holds each entry with
the path it was reached by (``args[1].lr``, ``scale``, ``args[0].layers[2].training``), so that a
new key can be explained by the entries that changed.
"""

from __future__ import annotations

import dis
import enum
import functools
import hashlib
import inspect
import operator
import os
import struct
import sys
import sysconfig
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from braze.ir.dtypes import DType
from braze.ops.random import Generator
from braze.runtime.device import Device
from braze.tensor import Tensor

MAX_DEPTH = 32  # containers and objects nested deeper are guarded by their path alone
SMALL_ARRAY = 64  # elements: up to this size a NumPy array is guarded by its bytes, past it by their digest

# Compared by value: a change is a change of the key.
_VALUES = (bool, int, float, complex, str, bytes, type(None), np.generic, np.dtype, DType, Device, enum.Enum)
_REAL = (int, float, np.integer, np.floating)
_CODE = (types.FunctionType, types.MethodType, functools.partial)
_LIBRARY = tuple(
    {
        os.path.dirname(os.path.abspath(__file__)) + os.sep,
        *(sysconfig.get_paths()[name] + os.sep for name in ("stdlib", "platstdlib", "purelib", "platlib")),
        "<frozen ",
    }
)

_USER_IN_BRAZE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testing") + os.sep
INPUT = "input"  # the key's mark of a number that is an input


@dataclass
class Holder:
    """Where one input number lives: ``getattr(owner, name)``, or its ``index``-th item."""

    owner: Any
    name: str
    index: int | None
    path: str


class Reads:
    """What one call reads: its state tensors (with their paths), the input numbers (with
    where they live) and the key of everything guarded."""

    __slots__ = ("tensors", "paths", "numbers", "holders", "entries", "snapshot")

    def __init__(self) -> None:
        self.tensors: list[Tensor] = []
        self.paths: list[str] = []
        self.numbers: list[float] = []
        self.holders: list[Holder] = []
        self.entries: list[tuple] = []
        self.snapshot: Snapshot | None = None

    @property
    def key(self) -> tuple:
        return tuple(self.entries)


def function_roots(fn: Callable[..., Any]) -> list[tuple[str, Any]]:
    """The roots of ``fn``'s own state, as (path, value) pairs read now."""
    if isinstance(fn, types.MethodType):
        return [("self", fn.__self__), *function_roots(fn.__func__)]
    if isinstance(fn, functools.partial):
        return [("partial", (fn.args, fn.keywords)), *function_roots(fn.func)]
    if not isinstance(fn, types.FunctionType):
        return [("fn", fn)]
    if _is_library(fn.__code__):
        return []
    # Default values are read on every call that omits them: a list default changed in place is state.
    roots = [("__defaults__", fn.__defaults__), ("__kwdefaults__", fn.__kwdefaults__)]
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True):
        try:
            roots.append((name, cell.cell_contents))
        except ValueError:  # a cell not filled yet (a name assigned after the function was made)
            continue
    namespace = fn.__globals__
    global_names, attribute_reads = _code_reads(fn.__code__)
    roots += [(name, namespace[name]) for name in global_names if name in namespace]
    # A module the code names is compared by identity; what the code reads from it
    # (``settings.SCALE``) is read as a global is, where the module is the user's.
    for name, chains, cell in attribute_reads:
        if cell is None:
            module = namespace.get(name)
        else:
            try:
                module = fn.__closure__[cell].cell_contents
            except ValueError:
                continue
        if isinstance(module, types.ModuleType) and _user_module(module):
            roots += _module_roots(name, module, chains)
    return roots


@functools.cache
def _code_reads(code: types.CodeType) -> tuple[tuple[str, ...], tuple]:
    """What ``function_roots`` reads of a function with ``code`` on every call: its global
    names and its reads of attributes (``_attribute_reads``)."""
    return _global_names(code), _attribute_reads(code)


@functools.cache
def _global_names(code: types.CodeType) -> tuple[str, ...]:
    """Every name that ``code`` and the code inside it (lambdas, comprehensions) read as a global."""
    return _names_loaded(code, ("LOAD_GLOBAL", "LOAD_NAME"))


def _attribute_reads(code: types.CodeType) -> tuple[tuple[str, tuple[tuple[str, ...], ...], int | None], ...]:
    """(name, chains, cell) for each global, or variable closed over (its cell's index in
    ``co_freevars``), that ``code`` and the code inside it read attributes of: the chains of
    attribute names read after loading it (``settings.SCALE``: ``("SCALE",)``;
    ``pkg.sub.rate``: ``("sub", "rate")``)."""
    found: dict[tuple[str, bool], dict[tuple[str, ...], None]] = {}
    _collect_attribute_reads(code, found)
    free = code.co_freevars
    return tuple(
        (name, tuple(chains), free.index(name) if closed else None)
        for (name, closed), chains in found.items()
        if not closed or name in free
    )


_ROOT_LOADS = {"LOAD_GLOBAL": False, "LOAD_NAME": False, "LOAD_DEREF": True, "LOAD_CLASSDEREF": True}
_ATTRIBUTE_LOADS = ("LOAD_ATTR", "LOAD_METHOD")


def _collect_attribute_reads(code: types.CodeType, found: dict) -> None:
    instructions = [i for i in dis.get_instructions(code) if i.opname != "EXTENDED_ARG"]
    for k, instruction in enumerate(instructions):
        closed = _ROOT_LOADS.get(instruction.opname)
        if closed is None:
            continue
        chain: list[str] = []
        for following in instructions[k + 1 :]:
            if following.opname not in _ATTRIBUTE_LOADS:
                break
            chain.append(following.argval)
        if chain:
            found.setdefault((instruction.argval, closed), {})[tuple(chain)] = None
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _collect_attribute_reads(const, found)


_MISSING_ATTRIBUTE = "<no such attribute>"


def _module_roots(name: str, module: types.ModuleType, chains: tuple[tuple[str, ...], ...]) -> list[tuple[str, Any]]:
    """The values a function reads from a module of the user's by ``chains`` (see
    ``_attribute_reads``), as (path, value) roots: each chain is followed while it reaches
    modules of the user's, and the value it ends at (or the first that is not such a
    module: an object's attributes are walked anyway) is the root."""
    roots: dict[str, Any] = {}
    for chain in chains:
        value, path = module, name
        for attribute in chain:
            if not (isinstance(value, types.ModuleType) and _user_module(value)):
                break
            value, path = getattr(value, attribute, _MISSING_ATTRIBUTE), f"{path}.{attribute}"
        roots[path] = value
    return list(roots.items())


_USER_MODULES: dict[str, tuple[types.ModuleType, bool]] = {}


def _user_module(module: types.ModuleType) -> bool:
    """Whether ``module`` is of the user's program (or braze's fuzzer's): not braze, the
    standard library (built in or not) or an installed package, whose attributes are their
    own business, as their functions' globals are."""
    name = getattr(module, "__name__", None)
    known = _USER_MODULES.get(name) if isinstance(name, str) else None
    if known is not None and known[0] is module:
        return known[1]
    source = getattr(module, "__file__", None)
    if not isinstance(source, str):  # a namespace package: its first folder
        source = next(iter(getattr(module, "__path__", None) or ()), None)
    if not isinstance(source, str):  # built in or frozen (imported: it has a spec), or made by the program
        user = getattr(module, "__spec__", None) is None and name not in sys.builtin_module_names
    else:
        user = not source.startswith(_LIBRARY) or source.startswith(_USER_IN_BRAZE)
    if isinstance(name, str):
        _USER_MODULES[name] = (module, user)
    return user


@functools.cache
def _names_loaded(code: types.CodeType, opnames: tuple[str, ...]) -> tuple[str, ...]:
    """The names the instructions ``opnames`` of ``code`` and of the code inside it load, in order."""
    names = dict.fromkeys(i.argval for i in dis.get_instructions(code) if i.opname in opnames)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names.update(dict.fromkeys(_names_loaded(const, opnames)))
    return tuple(names)


@functools.cache
def _is_library(code: types.CodeType) -> bool:
    """Code of braze (but its fuzzer's programs), the standard library or an installed package."""
    return code.co_filename.startswith(_LIBRARY) and not code.co_filename.startswith(_USER_IN_BRAZE)


# How the walk treats a value, by its type (found once per type, see _category).
_SCALAR, _FLOAT, _TENSOR, _SEQUENCE, _DICT, _ARRAY, _FUNCTION, _OPAQUE, _OBJECT, _IGNORED = range(10)
_CATEGORIES: dict[type, int] = {bool: _SCALAR, int: _SCALAR, float: _FLOAT, str: _SCALAR, type(None): _SCALAR}


_FLOATS = frozenset({float, np.float16, np.float32, np.float64, np.longdouble})


class ExactFloat:
    """A zero or NaN float in a guard: equal to a float of the same bits only (``==`` takes
    -0.0 for 0.0, and a NaN for no value, not even itself), shown as the float."""

    __slots__ = ("value", "bits")

    def __init__(self, value: Any) -> None:
        self.value = value
        self.bits = value.tobytes() if isinstance(value, np.generic) else struct.pack("<d", value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExactFloat) and self.bits == other.bits

    def __hash__(self) -> int:
        return hash(self.bits)

    def __repr__(self) -> str:
        return repr(self.value)


def _guarded(value: Any) -> Any:
    """A number as a guard compares it: a zero or NaN float by its bits, where ``==`` would
    not tell them apart (-0.0 == 0.0) or not match at all (NaN != NaN); any other as it is."""
    if type(value) in _FLOATS and (value == 0 or value != value):
        return ExactFloat(value)
    return value


def _category(kind: type) -> int:
    if getattr(kind, "jit_ignore", False) is True:
        found = _IGNORED
    elif kind in _FLOATS:
        found = _FLOAT
    elif issubclass(kind, _VALUES):
        found = _SCALAR
    elif issubclass(kind, Tensor):
        found = _TENSOR
    elif kind is list or kind is tuple:
        found = _SEQUENCE
    elif kind is dict:
        found = _DICT
    elif issubclass(kind, np.ndarray):
        found = _ARRAY
    elif issubclass(kind, _CODE):
        found = _FUNCTION
    elif issubclass(kind, (Generator, type, types.ModuleType, types.BuiltinFunctionType)):
        found = _OPAQUE
    else:
        found = _OBJECT  # walked by its public attributes and slots; without either, compared by identity
    _CATEGORIES[kind] = found
    return found


class _Paths:
    """The walk's paths, made once and reused by every later call: a call's key then holds
    the strings the cached keys hold, whose hashes are kept and which compare by identity,
    and the walk formats no string it formatted before. Forgotten past ``LIMIT`` paths
    (a program whose lists or dicts keep growing)."""

    LIMIT = 1 << 16

    def __init__(self) -> None:
        self._attributes: dict[str, dict[str, str]] = {}
        self._items: dict[str, dict[Any, str]] = {}
        self._made = 0

    def attribute(self, path: str, name: str) -> str:
        children = self._attributes.get(path)
        if children is None:
            children = self._attributes[path] = {}
        found = children.get(name)
        if found is None:
            found = children[name] = f"{path}.{name}"
            self._count()
        return found

    def item(self, path: str, index: Any) -> str:
        """The path of ``path[index]``: an int index, or a dict's key (by its repr)."""
        kind = type(index)
        if kind is not int and kind is not str:  # equal keys of other types may differ in repr (1, 1.0, True)
            return f"{path}[{index!r}]"
        children = self._items.get(path)
        if children is None:
            children = self._items[path] = {}
        found = children.get((kind, index))
        if found is None:
            found = children[(kind, index)] = f"{path}[{index!r}]"
            self._count()
        return found

    def _count(self) -> None:
        self._made += 1
        if self._made > self.LIMIT:
            self._attributes.clear()
            self._items.clear()
            self._made = 0


_PATHS = _Paths()


def read(roots: list[tuple[str, Any]]) -> Reads:
    """Walk ``roots`` (path, value) and sort what they reach (see the module docstring);
    ``reads.snapshot`` is what ``read_again`` checks on the next call."""
    reads = Reads()
    seen: set[int] = set()
    tensors, paths, entries = reads.tensors, reads.paths, reads.entries
    snapshot = reads.snapshot = Snapshot()
    checks, records = snapshot.checks, snapshot.tensors
    categories = _CATEGORIES
    attribute, item_path = _PATHS.attribute, _PATHS.item

    def visit(value: Any, path: str, depth: int) -> None:
        kind = type(value)
        category = categories.get(kind)
        if category is None:
            category = _category(kind)
        if category <= _FLOAT:
            entries.append((path, kind, _guarded(value) if category == _FLOAT else value))
        elif category == _TENSOR:
            if id(value) not in seen:
                visit_tensor(value, path, False)
            else:
                pin(value)
        elif id(value) in seen:
            if id(value) in containers:  # an argument's container met again: that very one is expected
                met_again.add(id(value))
            return
        elif depth > MAX_DEPTH:
            entries.append((path, "beyond the walk's depth"))
        elif category == _OBJECT:
            visit_object(value, kind, path, depth)
        elif category in (_SEQUENCE, _DICT):
            items = open_container(value, kind, path)
            if kind is dict:
                checks.append((_DICT_ITEMS, value, (tuple(value), tuple(value.values()))))
            elif kind is list:
                checks.append((_LIST, value, tuple(value)))
            for child, item in items:
                visit(item, child, depth + 1)
        elif category == _ARRAY:
            entries.append((path, value.shape, value.dtype, _contents(value)))
            checks.append((_ARRAY_VALUES, value, entries[-1][1:]))
        elif category == _FUNCTION:
            seen.add(id(value))
            entries.append((path, value))
            found = function_roots(value)
            checks.append((_FUNCTION_ROOTS, value, tuple(found)))
            for name, item in found:
                visit(item, attribute(path, name), depth + 1)
        elif category == _IGNORED:
            return
        else:
            entries.append((path, _identity(value)))
            checks.append((_KIND, value, kind))

    def open_container(value: tuple | list | dict, kind: type, path: str) -> list[tuple[str, Any]]:
        """Note a tuple, list or dict met for the first time: its entry, and its items with
        their paths."""
        seen.add(id(value))
        if kind is dict:
            entries.append((path, kind, tuple(value)))
            return [(item_path(path, name), item) for name, item in value.items()]
        entries.append((path, kind, len(value)))
        return [(item_path(path, i), item) for i, item in enumerate(value)]

    def visit_tensor(value: Tensor, path: str, loose: bool) -> None:
        """A tensor met for the first time; ``loose`` when no checked container holds it
        (an argument, a gradient): the next call may find another tensor there."""
        seen.add(id(value))
        if loose:
            loose_at[id(value)] = len(tensors)
        tensors.append(value)
        paths.append(path)
        entries.append((path, value._aval, value.device, value.requires_grad))
        grad = value.grad
        if grad is None:
            held = None
        elif id(grad) in seen:  # another tensor of the walk: the same one is expected
            held = grad
        else:
            held = len(tensors)  # a gradient from before the call: an input too, at this position
        records.append(
            _TensorRecord(None if loose else value, type(value), value._aval, value.device, value.requires_grad, held)
        )
        if type(held) is int:
            visit_tensor(grad, attribute(path, "grad"), True)
        elif held is not None:
            pin(held)

    def pin(value: Tensor) -> None:
        """A loose tensor met again (another argument, a gradient held elsewhere too): the
        next call must find this very tensor there, as the walk skips what it met before."""
        k = loose_at.pop(id(value), None)
        if k is not None:
            records[k] = records[k]._replace(tensor=value)

    def argument(value: Any, path: str, depth: int) -> tuple:
        """Visit an argument (a root, or an item of an argument's tuple, list or dict) and
        say what the next call's may be: a tensor met first here, another tensor; a tuple,
        list or dict met first here, another of the same kind and keys or length, whose
        items are arguments too (a batch passed as ``(x, y)``); anything else, itself."""
        kind = type(value)
        category = categories.get(kind)
        if category is None:
            category = _category(kind)
        if category == _TENSOR and id(value) not in seen:
            position = len(tensors)
            visit_tensor(value, path, True)
            return (_LOOSE_TENSOR, position)
        if category in (_SEQUENCE, _DICT) and id(value) not in seen and depth <= MAX_DEPTH:
            containers.add(id(value))
            items = open_container(value, kind, path)
            children = tuple([argument(item, child, depth + 1) for child, item in items])
            return (_ARGUMENTS, kind, _arguments_shape(value), children, None)
        visit(value, path, depth)
        return (_SAME, value)

    def visit_object(value: Any, kind: type, path: str, depth: int) -> None:
        shape, slots = _SHAPES.get(kind) or _shape(kind), _public_slots(kind)
        own = getattr(value, "__dict__", None)
        if own is None:  # its class may change (``__class__``) where its dict's check cannot see
            checks.append((_KIND, value, kind))
        if own is None and not slots:  # compared by identity
            entries.append((path, _identity(value)))
            return
        seen.add(id(value))
        # An object without a __dict__ is also its identity, or its value where it hashes
        # by value: its private slots (a Fraction's) are not walked.
        entries.append((path, kind) if own is not None else (path, _identity(value)))
        if own is not None:
            checks.append((_OBJECT_DICT, value, (kind, own, tuple(own), tuple(own.values()))))
        if slots:
            checks.append((_OBJECT_SLOTS, value, (slots, _slot_values(value, slots))))
        lifted = shape.lifted
        for name, item in _attributes(value, own, slots):
            child = attribute(path, name)
            if name in lifted and _lift(reads, value, name, item, child):
                if type(item) is list:
                    checks.append((_LIST, item, tuple(item)))
                continue
            visit(item, child, depth + 1)
        if shape.reached:
            state = tuple(_class_state(kind))
            checks.append((_CLASS_STATE, kind, state))
            for name, item in state:
                if own is None or name not in own:
                    visit(item, attribute(path, name), depth + 1)

    loose_at: dict[int, int] = {}  # the position of each loose tensor in ``tensors``, by id
    containers: set[int] = set()  # the arguments' tuples, lists and dicts met first as arguments
    met_again: set[int] = set()  # those the walk met again, elsewhere
    for path, value in roots:
        snapshot.roots.append((path, argument(value, path, 0)))
    # What a new argument container or tensor must not be: anything else the walk met and
    # the snapshot holds (so whose identity stays its own).
    loose = {id(t) for t, record in zip(tensors, records, strict=True) if record.tensor is None}
    snapshot.met = frozenset(seen.difference(containers, loose))
    if met_again:
        pairs = zip(snapshot.roots, roots, strict=True)
        snapshot.roots = [(path, _pinned(then, value, met_again)) for (path, then), (_, value) in pairs]
    snapshot.finish(reads)
    return reads


# What an argument of the next call may be (``read``'s ``argument``): the same object, a
# tensor at a loose position, or a tuple, list or dict of arguments of the same shape.
_SAME, _LOOSE_TENSOR, _ARGUMENTS = range(3)


def _arguments_shape(value: tuple | list | dict) -> Any:
    """A container's length, or a dict's keys with their types and reprs (equal keys may
    make other paths: ``[1]`` and ``[1.0]``, ``[0.0]`` and ``[-0.0]``)."""
    return tuple([(type(k), k, repr(k)) for k in value]) if type(value) is dict else len(value)


def _pinned(then: tuple, value: Any, met_again: set[int]) -> tuple:
    """``then`` (``read``'s ``argument`` of ``value``) expecting the very containers that
    the walk met again (a new one there would be walked where that walk skipped it), their
    items checked still."""
    if then[0] != _ARGUMENTS:
        return then
    items = value.values() if type(value) is dict else value
    children = tuple([_pinned(child, item, met_again) for child, item in zip(then[3], items, strict=True)])
    return (*then[:3], children, value if id(value) in met_again else None)


class _Met:
    """The ids of what a walk met and its snapshot holds, and of what a check of it took
    since (new argument containers and tensors), without copying the first."""

    __slots__ = ("held", "taken")

    def __init__(self, held: frozenset[int]) -> None:
        self.held, self.taken = held, set()

    def __contains__(self, key: int) -> bool:
        return key in self.taken or key in self.held

    def add(self, key: int) -> None:
        self.taken.add(key)


def _argument_holds(value: Any, then: tuple, now: list, met: _Met) -> bool:
    """Whether an argument of this call is what ``then`` (``read``'s ``argument``) allows,
    filling the loose positions of ``now`` with the tensors it finds."""
    code = then[0]
    if code == _SAME:
        return value is then[1]
    if code == _LOOSE_TENSOR:
        pinned = now[then[1]]
        if pinned is not None:  # met again by that walk: the very tensor is expected
            return value is pinned
        if not isinstance(value, Tensor) or id(value) in met:
            return False
        now[then[1]] = value
        met.add(id(value))
        return True
    _, kind, shape, children, pinned = then
    if pinned is None:  # a new container, unless the walk would meet it elsewhere too (and skip it there)
        if id(value) in met:
            return False
        met.add(id(value))
    elif value is not pinned:
        return False
    if type(value) is not kind or _arguments_shape(value) != shape:
        return False
    items = value.values() if kind is dict else value
    return all([_argument_holds(item, child, now, met) for item, child in zip(items, children, strict=True)])


class _TensorRecord(NamedTuple):
    """One tensor of a walk: the tensor (None for a loose one, whose holder no check
    covers), what its key entry holds, and its gradient: None, the position of a new
    one in the walk's tensors, or a tensor met before it."""

    tensor: Tensor | None
    kind: type
    aval: Any
    device: Device
    requires_grad: bool
    grad: Any


# What a check re-reads of a value the walk met: a dict-holding object's class, dict, and
# its keys and values (by identity); an object's public slots; a list's items; a dict's
# keys and values; an array's shape, dtype and contents (by value); a function's roots;
# a user-written class's state; the class of an object without a __dict__.
_OBJECT_DICT, _OBJECT_SLOTS, _LIST, _DICT_ITEMS, _ARRAY_VALUES, _FUNCTION_ROOTS, _CLASS_STATE, _KIND = range(8)
_UNSET = object()


def _slot_values(value: Any, slots: tuple[str, ...]) -> tuple:
    return tuple([getattr(value, name, _UNSET) for name in slots])


def _same(now: tuple, then: tuple) -> bool:
    return len(now) == len(then) and all(map(operator.is_, now, then))


def _holds(code: int, value: Any, then: Any) -> bool:
    """Whether ``value`` reads as it did (``then``) to the check ``code``."""
    if code == _OBJECT_DICT:
        kind, own, names, items = then
        found = getattr(value, "__dict__", None)
        return type(value) is kind and found is own and _same(tuple(own), names) and _same(tuple(own.values()), items)
    if code == _OBJECT_SLOTS:
        return _same(_slot_values(value, then[0]), then[1])
    if code == _LIST:
        return _same(tuple(value), then)
    if code == _DICT_ITEMS:
        return _same(tuple(value), then[0]) and _same(tuple(value.values()), then[1])
    if code == _ARRAY_VALUES:
        return (value.shape, value.dtype, _contents(value)) == then
    if code == _KIND:
        return type(value) is then
    found = tuple(function_roots(value) if code == _FUNCTION_ROOTS else _class_state(value))
    return [n for n, _ in found] == [n for n, _ in then] and _same(
        tuple(v for _, v in found), tuple(v for _, v in then)
    )


class Snapshot:
    """What a walk read, checked by ``read_again``: the roots, every container it walked
    (with what it held, by identity) and every tensor's key entry and gradient."""

    __slots__ = ("roots", "checks", "tensors", "paths", "numbers", "holders", "entries", "met")

    def __init__(self) -> None:
        self.roots: list[tuple[str, tuple]] = []  # (path, what the argument may be: ``_argument_holds``)
        self.checks: list[tuple[int, Any, Any]] = []
        self.tensors: list[_TensorRecord] = []
        self.entries: tuple | None = None  # the walk's key entries, set when it ends
        self.met: frozenset[int] = frozenset()  # the ids of what it met and holds

    def finish(self, reads: Reads) -> None:
        self.paths, self.numbers, self.holders, self.entries = (
            reads.paths,
            reads.numbers,
            reads.holders,
            tuple(reads.entries),
        )


def read_again(snapshot: Snapshot | None, roots: list[tuple[str, Any]]) -> Reads | None:
    """What ``read(roots)`` would return, found without walking, when the roots and
    everything the walk met hold what they held for ``snapshot``'s (the same objects
    and tensors, another argument tensor or gradient of the same kind, shape, dtype and
    device): None when anything differs, and the walk must run."""
    if snapshot is None or snapshot.entries is None or len(roots) != len(snapshot.roots):
        return None
    records = snapshot.tensors
    now: list[Any] = [record.tensor for record in records]
    met = _Met(snapshot.met)
    for (path, value), (then_path, then) in zip(roots, snapshot.roots, strict=True):
        if path != then_path or not _argument_holds(value, then, now, met):
            return None
    for code, value, then in snapshot.checks:
        if not _holds(code, value, then):
            return None
    for k, (_, kind, aval, device, requires_grad, held) in enumerate(records):
        t = now[k]
        if type(t) is not kind or (t._aval is not aval and t._aval != aval):
            return None  # a loose position no tensor filled is None, of another kind
        if (t.device is not device and t.device != device) or t.requires_grad is not requires_grad:
            return None
        grad = t.grad
        if type(held) is int:
            if not isinstance(grad, Tensor) or id(grad) in met or now[held] is not None:
                return None
            now[held] = grad
            met.add(id(grad))
        elif grad is not held:
            return None
    reads = Reads()
    reads.tensors, reads.paths, reads.numbers = now, snapshot.paths, snapshot.numbers
    reads.holders, reads.entries, reads.snapshot = snapshot.holders, list(snapshot.entries), snapshot
    return reads


def _contents(array: np.ndarray) -> Any:
    """What a NumPy array's guard compares: its bytes, a SHA-256 digest of them past
    ``SMALL_ARRAY`` elements (the array is a constant of the graph, and an array written
    into in place keeps its identity), or its identity for an array of Python objects."""
    if array.dtype.hasobject:
        return id(array)
    if array.size <= SMALL_ARRAY:
        return array.tobytes()
    return hashlib.sha256(np.ascontiguousarray(array).data).digest()


def _public_slots(kind: type) -> tuple[str, ...]:
    """The public ``__slots__`` names of ``kind`` and its bases (a slotted object has no
    __dict__, so ``vars`` would miss what it holds)."""
    found = _SLOTS.get(kind)
    if found is None:
        names: list[str] = []
        for base in kind.__mro__:
            declared = base.__dict__.get("__slots__", ())
            names += [declared] if isinstance(declared, str) else list(declared)
        found = _SLOTS[kind] = tuple(dict.fromkeys(n for n in names if not n.startswith("_")))
    return found


_SLOTS: dict[type, tuple[str, ...]] = {}


class _Shape(NamedTuple):
    """What the walk reads of an object of one class besides its attributes, found once."""

    lifted: frozenset[str]  # the attributes its class lists in ``jit_inputs``
    reached: bool  # whether a user-written class holds state for it (``_class_state``)


_SHAPES: dict[type, _Shape] = {}


def _shape(kind: type) -> _Shape:
    names = _CLASS_NAMES.get(kind)
    if names is None:
        names = _CLASS_NAMES[kind] = _reached_names(kind)
    found = _SHAPES[kind] = _Shape(frozenset(getattr(kind, "jit_inputs", ())), bool(names))
    return found


def _attributes(value: Any, own: dict | None, slots: tuple[str, ...]) -> Iterator[tuple[str, Any]]:
    """An object's public attributes: those of its __dict__ ``own``, then its set public ``slots``."""
    if own is not None:
        for name, item in own.items():
            if name[0] != "_":
                yield name, item
    for name in slots:
        try:
            yield name, getattr(value, name)
        except AttributeError:  # a slot never assigned
            continue


_CLASS_NAMES: dict[type, tuple[str, ...]] = {}
# The methods a compiled step may run first; the walk follows from them the methods they
# name on ``self`` (a data-loading or plotting method the step never calls is left out).
ENTRY_METHODS = ("__call__", "call", "forward", "train_step", "test_step", "predict_step", "compute_loss")


def _class_state(kind: type) -> Iterator[tuple[str, Any]]:
    """What the classes a user wrote hold for their instances, read now: the methods a
    call reaches (``call``, ``train_step``... and the methods they name on ``self``), whose
    globals, closures and defaults a call reads as a function's are, and the public class
    attributes (``self.scale`` of ``scale = 2.0`` in the class body)."""
    names = _CLASS_NAMES.get(kind)
    if names is None:
        names = _CLASS_NAMES[kind] = _reached_names(kind)
    for name in names:
        item = inspect.getattr_static(kind, name, None)
        if isinstance(item, (staticmethod, classmethod)):
            item = item.__func__
        elif isinstance(item, property):
            item = item.fget
        if isinstance(item, types.FunctionType) or not (name.startswith("_") or callable(item)):
            yield name, item


def _reached_names(kind: type) -> tuple[str, ...]:
    """The public class attributes of ``kind``'s user-written classes, and their methods
    reachable from ``ENTRY_METHODS`` through the names the methods' code loads."""
    own: dict[str, Any] = {}
    for cls in reversed(kind.__mro__):
        if _written_by_user(cls):
            own.update(vars(cls))
    plain = [n for n, v in own.items() if not n.startswith("_") and not callable(v) and not isinstance(v, property)]
    methods = {n for n, v in own.items() if callable(v) or isinstance(v, (property, staticmethod, classmethod))}
    reached, todo = set(), [n for n in ENTRY_METHODS if n in methods]
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        item = own[name]
        function = item.fget if isinstance(item, property) else getattr(item, "__func__", item)
        code = getattr(function, "__code__", None)
        loaded = _names_loaded(code, ("LOAD_ATTR", "LOAD_METHOD")) if code is not None else ()
        todo += [n for n in loaded if n in methods]
    return (*plain, *sorted(reached))


def _written_by_user(cls: type) -> bool:
    """A class of the user's program (or of braze's fuzzer's), not of braze, the standard
    library or an installed package."""
    module = sys.modules.get(cls.__module__)
    if module is None or cls.__module__ == "builtins":
        return False
    source = getattr(module, "__file__", None)
    return source is None or not source.startswith(_LIBRARY) or source.startswith(_USER_IN_BRAZE)


def _identity(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return (type(value), id(value))
    return value


def _lift(reads: Reads, owner: Any, name: str, value: Any, path: str) -> bool:
    """Note ``value`` (a number, or a tuple or list of numbers) as inputs; False when it is
    something else, which the walk then visits."""
    if isinstance(value, _REAL) and not isinstance(value, (bool, np.bool_)):
        _lift_number(reads, Holder(owner, name, None, path), value)
        return True
    if type(value) in (tuple, list) and value and all(isinstance(v, _REAL) and not isinstance(v, bool) for v in value):
        reads.entries.append((path, type(value), len(value)))
        for i, item in enumerate(value):
            _lift_number(reads, Holder(owner, name, i, f"{path}[{i}]"), item)
        return True
    return False


def _lift_number(reads: Reads, holder: Holder, value: Any) -> None:
    if value == 0:  # leaves its term out of the computation: a guard
        reads.entries.append((holder.path, type(value), _guarded(value)))
        return
    reads.entries.append((holder.path, INPUT))
    reads.numbers.append(float(value))
    reads.holders.append(holder)


def differences(before: tuple, after: tuple) -> Iterator[tuple[str, tuple | None, tuple | None]]:
    """(path, old payload, new payload) of each entry that differs between two keys; None
    for an entry that one of them does not have."""
    old = {entry[0]: entry[1:] for entry in before}
    new = {entry[0]: entry[1:] for entry in after}
    for path, payload in new.items():
        if old.get(path) != payload:
            yield path, old.get(path), payload
    for path, payload in old.items():
        if path not in new:
            yield path, payload, None


def changes(before: tuple, after: tuple) -> Iterator[str]:
    """The entries of key ``after`` that differ from ``before``, in words."""
    for path, old, new in differences(before, after):
        if old is None:
            yield f"{path} is new"
        elif new is None:
            yield f"{path} is gone"
        else:
            yield _changed(path, old, new)


def _changed(path: str, old: tuple, new: tuple) -> str:
    if _is_tensor(old) and _is_tensor(new):
        (old_aval, old_device, old_grad), (new_aval, new_device, new_grad) = old, new
        if old_device != new_device:
            return f"{path} device changed from {old_device} to {new_device}"
        if old_grad != new_grad:
            return f"{path} requires_grad changed from {old_grad} to {new_grad}"
        what = "shape" if old_aval.dtype == new_aval.dtype else "dtype"
        return f"{path} {what} changed from {_aval(old_aval)} to {_aval(new_aval)}"
    return f"{path} changed from {describe(old)} to {describe(new)}"


def _is_tensor(payload: tuple) -> bool:
    return len(payload) == 3 and isinstance(payload[1], Device)


def _aval(aval: Any) -> str:
    return f"{aval.dtype.name}{list(aval.shape)}"


def describe(payload: tuple) -> str:
    """One key entry's payload as a user reads it."""
    if _is_tensor(payload):
        return f"a {_aval(payload[0])} tensor on {payload[1]}{' that requires grad' if payload[2] else ''}"
    if payload == (INPUT,):
        return "an input number"
    if len(payload) == 2 and isinstance(payload[0], type):
        kind, value = payload
        if kind in (list, tuple):
            return f"a {kind.__name__} of {value}"
        if kind is dict:
            return f"a dict of keys {list(value)}"
        return repr(value)
    if len(payload) == 1 and isinstance(payload[0], type):
        return f"a {payload[0].__name__}"
    if len(payload) == 3 and isinstance(payload[0], tuple):
        return f"an array {payload[1]}{list(payload[0])}"
    return repr(payload[0]) if len(payload) == 1 else repr(payload)
