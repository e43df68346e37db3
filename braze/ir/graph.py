"""Immutable, hash-consed graph nodes and the Graph of parameters and outputs.

Building a node that already exists returns the existing object, so structurally equal
subgraphs are shared (common-subexpression elimination for free) and two graphs built
from the same structure have identical output nodes. A node's op is the primitive itself
(compared by identity; its category and properties answer what passes ask). Every node
carries a structural hash computed from its op, attributes, aval and its inputs' hashes: it
ignores names and node ids but not shapes, dtypes, attributes or edges.
"""

from __future__ import annotations

import hashlib
import struct
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from braze.ir.dtypes import DType
from braze.ir.primitive import Aval, Category, Primitive
from braze.ir.prims import fusion, sources

Attrs = tuple[tuple[str, Any], ...]

_INTERNED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def freeze(value: Any) -> Any:
    """Attribute values as hashable data: lists become tuples, recursively."""
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


_FLOATS = frozenset({float, np.float16, np.float32, np.float64})


def exact_attributes(attrs: Attrs) -> Attrs:
    """``attrs`` as a key in which a float value equals only a float of the same bits: ``==``
    takes -0.0 for 0.0 (so ``pad(x, value=-0.0)`` would be ``pad(x, value=0.0)``'s node, in
    this graph and the next) and a NaN for no value, not even another NaN. Attributes
    without a float value (nearly every op's) come back as they are; a float inside a tuple
    is not looked at (no primitive has one)."""
    for _, value in attrs:
        if type(value) in _FLOATS:
            return tuple((k, _float_key(v)) if type(v) in _FLOATS else (k, v) for k, v in attrs)
    return attrs


def _float_key(value: float) -> tuple[type, bytes]:
    return type(value), value.tobytes() if isinstance(value, np.generic) else struct.pack("<d", value)


class Node:
    """One operation: ``op(inputs) {attrs} : aval``. Construct with ``Node.make``."""

    __slots__ = ("op", "inputs", "attrs", "aval", "structural_hash", "_fingerprint", "__weakref__")

    op: Primitive
    inputs: tuple[Node, ...]
    attrs: Attrs
    aval: Aval  # a tuple of Avals for a multi-output fusion
    structural_hash: int

    @staticmethod
    def make(op: Primitive, inputs: tuple[Node, ...], attrs: Mapping[str, Any] | Attrs, aval: Aval) -> Node:
        frozen = attrs if isinstance(attrs, tuple) else tuple(sorted((k, freeze(v)) for k, v in attrs.items()))
        key = (op, tuple(id(i) for i in inputs), exact_attributes(frozen), aval)
        found = _INTERNED.get(key)
        if found is not None:
            return found
        node = object.__new__(Node)
        node.op, node.inputs, node.attrs, node.aval = op, tuple(inputs), frozen, aval
        node.structural_hash = hash((op, frozen, aval, tuple(i.structural_hash for i in inputs)))
        node._fingerprint = None
        _INTERNED[key] = node
        return node

    @property
    def fingerprint(self) -> int:
        """A structural hash that is the same in every process (Python's ``hash`` of strings
        is salted per process), for decisions that must not vary from run to run."""
        if self._fingerprint is None:
            # Inputs first, without recursion: an unrolled loop's graph is deeper than Python's stack.
            for node in _postorder(self, set(), lambda n: n._fingerprint is not None):
                text = repr((node.op.name, node.attrs, str(node.aval), tuple(i._fingerprint for i in node.inputs)))
                node._fingerprint = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        return self._fingerprint

    @property
    def multi_output(self) -> bool:
        """Whether this node (a multi-output fusion) yields a tuple of results."""
        return not isinstance(self.aval, Aval)

    @property
    def attr_dict(self) -> dict[str, Any]:
        return dict(self.attrs)

    def attr(self, name: str) -> Any:
        for key, value in self.attrs:
            if key == name:
                return value
        raise KeyError(f"{self.op} has no attribute {name!r}")

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> DType:
        return self.aval.dtype

    def __repr__(self) -> str:
        return f"<{self.op} {self.aval}>"


def parameter(index: int, aval: Aval) -> Node:
    return Node.make(sources.parameter, (), {"index": index, "shape": aval.shape, "dtype": aval.dtype}, aval)


class Graph:
    """A computation: parameter nodes (by index) and output nodes.

    ``donated`` maps an output position to the parameter whose buffer it may overwrite
    (a parameter updated in place by a training step).
    """

    __slots__ = ("params", "outputs", "donated", "notes", "annotations", "_nodes", "_hash")

    def __init__(self, params: tuple[Node, ...], outputs: tuple[Node, ...], donated: Mapping[int, int] | None = None):
        self.params = tuple(params)
        self.outputs = tuple(outputs)
        self.donated = dict(donated or {})
        self.notes: list[str] = []  # what passes want a reader of the dump to know
        self.annotations: dict[str, Any] = {}  # analysis results (buffer assignment), not structure
        self._nodes: list[Node] | None = None
        self._hash: int | None = None

    def nodes(self) -> list[Node]:
        """Every node reachable from the outputs (and every parameter), inputs before users."""
        if self._nodes is None:
            order: list[Node] = list(self.params)
            seen = {id(p) for p in self.params}
            for output in self.outputs:
                for node in _postorder(output, seen):
                    order.append(node)
            self._nodes = order
        return self._nodes

    @property
    def structural_hash(self) -> int:
        if self._hash is None:
            self._hash = hash(
                (
                    tuple(o.structural_hash for o in self.outputs),
                    tuple(p.aval for p in self.params),
                    tuple(sorted(self.donated.items())),
                )
            )
        return self._hash

    def __hash__(self) -> int:
        return self.structural_hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Graph) and self.same_structure(other)

    def same_structure(self, other: Graph) -> bool:
        """Equal structure: with hash-consing, equal structures share their very nodes."""
        return self.outputs == other.outputs and self.params == other.params and self.donated == other.donated

    def __repr__(self) -> str:
        return f"<Graph {len(self.params)} params, {len(self.outputs)} outputs, {len(self.nodes())} nodes>"


def _postorder(root: Node, seen: set[int], done: Callable[[Node], bool] | None = None) -> Iterator[Node]:
    """The nodes ``root`` depends on, inputs first, skipping those ``seen`` and those ``done``
    (and what only they lead to)."""
    if id(root) in seen or (done is not None and done(root)):
        return
    stack: list[tuple[Node, int]] = [(root, 0)]
    seen.add(id(root))
    while stack:
        node, i = stack.pop()
        if i < len(node.inputs):
            stack.append((node, i + 1))
            child = node.inputs[i]
            if id(child) not in seen and (done is None or not done(child)):
                seen.add(id(child))
                stack.append((child, 0))
        else:
            yield node


def schedule(graph: Graph) -> list[Node]:
    """The nodes that run as kernels, in order: everything but parameters and the views
    (get_element, and constants, which are data)."""
    return [n for n in graph.nodes() if n.op.category is not Category.PARAMETER and not _is_view(n)]


def _is_view(node: Node) -> bool:
    return node.op is fusion.get_element or node.op is sources.constant


def use_counts(graph: Graph) -> dict[int, int]:
    """How many times each node (by id) is read by other nodes or returned."""
    counts: dict[int, int] = {}
    for node in graph.nodes():
        for child in node.inputs:
            counts[id(child)] = counts.get(id(child), 0) + 1
    for output in graph.outputs:
        counts[id(output)] = counts.get(id(output), 0) + 1
    return counts
