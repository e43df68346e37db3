"""The primitive: one declaration holding an op's category, properties, shape/dtype rule,
NumPy twin and its two gradient rules, VJP (reverse mode) and JVP (forward mode).

A primitive is the unit every layer agrees on: the tensor API binds primitives, the
reference interpreter runs their NumPy implementation, the compiler rewrites graphs of them
(asking their category and properties, never their names), and backends lower them, each
from a table keyed by the primitive. Gradient rules are written by binding other primitives
(and with arithmetic operators on the values they receive), never with raw NumPy, so the
same rule runs eagerly, is traced lazily, and can itself be differentiated: a derivative of
any order is rules applied to rules.

A JVP rule is either written out or derived (a ``Derivation``, as JAX's ``deflinear``): the
tangent of a linear op is the op applied to the tangents, that of a bilinear one the sum of
the op applied to each tangent with the other operand, and that of an elementwise op is its
VJP applied to the tangents, since its Jacobian is diagonal and so its own transpose.

``Primitive.bind`` does not know what a tensor is: the layer above installs the function
that carries a bind out (run now, or record into a trace) with ``set_binder``.
"""

from __future__ import annotations

import enum
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from braze.ir.dtypes import DType, readable, storage_array, storage_dtype


class Aval(NamedTuple):
    """The abstract value of an array: what shape rules compute and graphs carry."""

    shape: tuple[int, ...]
    dtype: DType

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __str__(self) -> str:
        return f"{self.dtype.short}[{','.join(map(str, self.shape))}]"


class Literal:
    """An immutable array value held by a ``constant`` node, hashed by its bytes."""

    __slots__ = ("array", "_hash")

    def __init__(self, value: Any, dtype: DType | None = None) -> None:
        if dtype is None:
            array = np.array(value)
            array = array.astype(storage_dtype(array.dtype).numpy)
        else:
            array = storage_array(value, dtype)
        array.setflags(write=False)
        self.array = array
        self._hash = hash((array.shape, array.dtype.str, array.tobytes()))

    @property
    def aval(self) -> Aval:
        return Aval(tuple(self.array.shape), storage_dtype(self.array.dtype))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Literal)
            and self._hash == other._hash
            and self.array.dtype == other.array.dtype
            and self.array.shape == other.array.shape
            and self.array.tobytes() == other.array.tobytes()
        )

    def __repr__(self) -> str:
        dtype = storage_dtype(self.array.dtype)
        return f"Literal({readable(self.array, dtype).tolist()!r}, {dtype.name})"

    is_input = False


class InputLiteral(Literal):
    """A literal that stands for a number that changes between steps (a learning rate): a
    lazy trace always makes it a parameter of the graph, whatever its value, so a new value
    never changes the graph (a plain literal 0 or 1 stays a constant, for the simplifier)."""

    __slots__ = ()
    is_input = True


class Category(enum.Enum):
    """What kind of computation a primitive is: what passes and backends ask of it."""

    UNARY = "elementwise unary"
    BINARY = "elementwise binary"
    COMPARE = "comparison"  # elementwise, with a bool result
    SELECT = "select"  # elementwise, of three operands
    CONVERT = "convert"  # elementwise, to another dtype
    MOVEMENT = "movement"  # moves data without arithmetic (broadcast, reshape, slice, ...)
    SOURCE = "source"  # no array operands but a key: constants, iota, random numbers
    PARAMETER = "parameter"  # a graph's input
    REDUCTION = "reduction"
    CONTRACTION = "contraction"  # dot products and convolutions
    WINDOW = "window"  # sliding windows: pooling and its gradients
    SCAN = "scan"  # along one axis, each result reading the whole line: cumulative sums, sorts
    SCATTER = "scatter"  # adds updates into positions an index tensor selects
    COLLECTIVE = "collective"  # exchanges data with the other replicas
    FUSION = "fusion"  # the compiler's own: a fused kernel and one of its results
    LOOP = "loop"  # runs a body graph many times: scans and while loops


ELEMENTWISE = frozenset({Category.UNARY, Category.BINARY, Category.COMPARE, Category.SELECT, Category.CONVERT})
# Kernels of their own: each reads its operands from memory, as a whole loop nest.
ROOTS = frozenset({Category.REDUCTION, Category.CONTRACTION, Category.WINDOW, Category.SCAN, Category.SCATTER})


ShapeRule = Callable[..., Aval]
Impl = Callable[..., np.ndarray]
VJPRule = Callable[..., tuple]
JVPRule = Callable[..., Any]


class Derivation:
    """A JVP rule derived from what a primitive is (linear, bilinear, elementwise): the
    declaration names the derivation, which makes the rule once the primitive exists."""

    def rule(self, primitive: Primitive) -> JVPRule:
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class Primitive:
    """An op of the closed primitive set, compared by identity.

    ``category`` says what kind of computation it is; ``commutative`` that its two operands
    may be swapped. ``shape_rule(*avals, **attrs) -> Aval`` validates inputs and gives the output.
    ``impl(*arrays, **attrs) -> np.ndarray`` is the NumPy twin (the reference semantics).
    ``vjp(g, *inputs, out=..., **attrs) -> tuple`` gives one cotangent per input (None for
    an input with no gradient, or a zero-argument function computing it, so that expensive
    cotangents nobody asked for are never computed); ``vjp is None`` marks a primitive whose output is never
    differentiable (integer or boolean results, constants, random bits).
    ``jvp(tangents, *inputs, out=..., **attrs)`` gives the output's tangent from one tangent
    per input (None where an input has none: a zero), or None for a zero tangent; a
    ``Derivation`` given there is replaced by the rule it derives.
    """

    name: str
    shape_rule: ShapeRule
    impl: Impl
    vjp: VJPRule | None
    attr_names: tuple[str, ...] = ()
    variadic: bool = False
    doc: str = field(default="", compare=False)
    category: Category = field(kw_only=True)
    commutative: bool = field(default=False, kw_only=True)
    jvp: JVPRule | Derivation | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if isinstance(self.jvp, Derivation):
            object.__setattr__(self, "jvp", self.jvp.rule(self))

    @property
    def elementwise(self) -> bool:
        """Whether each result element depends only on the operands' elements at its position."""
        return self.category in ELEMENTWISE

    @property
    def differentiable(self) -> bool:
        return self.vjp is not None

    def bind(self, *args: Any, like: Any = None, **attrs: Any) -> Any:
        """Apply this primitive to values of the layer above (``like`` gives nullary ops a device)."""
        return (getattr(_THREAD, "binder", None) or _BINDER[0])(self, args, attrs, like)

    def __copy__(self) -> Primitive:
        return self  # one of the closed set, compared by identity: a copied graph names the same op

    def __deepcopy__(self, memo: dict) -> Primitive:
        return self

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"

    def __str__(self) -> str:
        return self.name


PRIMITIVES: dict[str, Primitive] = {}


def register(primitive: Primitive) -> Primitive:
    """Add a primitive to the closed set; a second declaration of one name is a bug."""
    if primitive.name in PRIMITIVES:
        raise ValueError(f"primitive {primitive.name!r} declared twice")
    PRIMITIVES[primitive.name] = primitive
    return primitive


def withdraw(primitive: Primitive) -> None:
    """Take ``primitive`` out of the set again: one declared for a while, as a test does."""
    if PRIMITIVES.get(primitive.name) is primitive:
        del PRIMITIVES[primitive.name]


def _no_binder(primitive: Primitive, args: tuple, attrs: dict, like: Any) -> Any:
    raise RuntimeError(f"cannot bind {primitive.name}: no tensor layer installed a binder")


_BINDER: list[Callable[[Primitive, tuple, dict, Any], Any]] = [_no_binder]
_THREAD = threading.local()  # a recorder's binder, for the thread it records


def set_binder(binder: Callable[[Primitive, tuple, dict, Any], Any]) -> None:
    """Install how ``Primitive.bind`` is carried out (the tensor layer does this at import)."""
    _BINDER[0] = binder


def current_binder() -> Callable[[Primitive, tuple, dict, Any], Any]:
    """The binder this thread's binds go to: a recorder's (``set_thread_binder``), or the
    installed one."""
    return getattr(_THREAD, "binder", None) or _BINDER[0]


def set_thread_binder(binder: Callable[[Primitive, tuple, dict, Any], Any] | None) -> Any:
    """Send this thread's binds to ``binder`` (None: back to the installed one), as a
    recorder does for a while; returns the thread's previous one, to put back. Per thread,
    so that one thread's recording never sees, or loses, another's binds."""
    previous = getattr(_THREAD, "binder", None)
    _THREAD.binder = binder
    return previous
