"""The element emitter: C code computing one element of any fused node.

A kernel's loop nest supplies an ``Index`` (the element's position, as C expressions);
``CEmitter.value(node, index)`` emits the statements that compute ``node`` at that
position and returns the C name holding it, by the rule its backend's lowering table
gives the node's primitive. The rules here are every C dialect's: movement ops
(broadcast, reshape, transpose, rev, slice) only change the index, pad and concatenate
evaluate their operands inside a conditional scope so that out-of-range elements are never
read, a gather reads its operand at the position its indices give (clamped), sources
compute their element, and elementwise ops combine their operands' values at
the same index by the op table. Values are memoised per (node, index) inside a scope, so a
node read twice at one position is computed once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from braze.backends.cstyle.language import c_literal, c_type
from braze.backends.cstyle.ops import OPS, OpRule, render
from braze.ir.dtypes import readable
from braze.ir.graph import Node
from braze.ir.primitive import Primitive
from braze.ir.prims import indexing, sources, structural
from braze.runtime.backend import NotLowered


@dataclass
class Index:
    """A position in an array of ``shape``: per-dimension C expressions and/or the row-major
    linear offset; the missing one is derived on demand."""

    shape: tuple[int, ...]
    dims: tuple[str, ...] | None = None
    linear: str | None = None

    def __post_init__(self) -> None:
        # Fixed at construction: dims or linear are filled in later, but the position is the same.
        self.key = (self.shape, self.dims) if self.dims is not None else (self.shape, "linear", self.linear)


class Split(str):
    """A dimension's index made of loop variables: ``offset`` plus the row-major
    combination of ``parts`` ((name, size), outermost first), as the C expression it is. A
    loop over a dimension that a reshape in the kernel splits (a transformer's heads merged
    back into channels) runs as one loop per part, and the reshape reads the parts
    directly: without the division and remainder that the C compiler turns into gathers."""

    parts: tuple[tuple[str, int], ...]
    offset: int

    def __new__(cls, parts: tuple[tuple[str, int], ...], offset: int = 0) -> Split:
        expression = parts[0][0]
        for name, size in parts[1:]:
            expression = f"{expression} * {size} + {name}"
        made = super().__new__(cls, f"({offset} + {expression})" if offset else f"({expression})")
        made.parts, made.offset = parts, offset
        return made

    def unflatten(self, sizes: tuple[int, ...] | list[int]) -> list[str] | None:
        """The indices into dimensions of ``sizes`` that this flat index (offset 0) stands
        for, read from the parts where their sizes match from the innermost out (the last
        part left may span several dimensions); None where they do not."""
        if self.offset:
            return None
        parts, sizes, dims = list(self.parts), list(sizes), []
        while sizes:
            if sizes[-1] == 1:
                dims.append("0")
                sizes.pop()
            elif parts and parts[-1][1] == sizes[-1]:
                dims.append(parts.pop()[0])
                sizes.pop()
            elif len(parts) == 1:
                dims += reversed(unflatten(parts.pop()[0], sizes))
                sizes = []
            else:
                return None
        return dims[::-1] if not parts else None


def shifted(dim: str, amount: int) -> str:
    """``dim - amount``, a split index kept split (its offset moved)."""
    if isinstance(dim, Split):
        return Split(dim.parts, dim.offset - amount)
    return f"({dim} - {amount})"


class Scope:
    def __init__(self, parent: Scope | None = None) -> None:
        self.parent = parent
        self.memo: dict[tuple, str] = {}

    def find(self, key: tuple) -> str | None:
        scope: Scope | None = self
        while scope is not None:
            if key in scope.memo:
                return scope.memo[key]
            scope = scope.parent
        return None


# An element rule: the statements computing ``node`` at ``index``; returns the C name (or
# expression) holding the value.
ElementRule = Callable[["CEmitter", Node, Index], str]


class CEmitter:
    """Emits the body of one loop iteration. ``rules``: the backend's lowering table (an
    element rule per primitive computed here); ``inputs`` maps a computation parameter's
    index to the C pointer name it is read from; ``constants`` names a non-scalar constant's
    array; ``overrides`` gives nodes whose value is already a C expression (a contraction's
    accumulator)."""

    def __init__(
        self,
        rules: Mapping[Primitive, Any],
        inputs: dict[int, str],
        constants: Callable[[Node], str],
        indent: str = "    ",
    ) -> None:
        self.rules = rules
        self.inputs = inputs
        self.constant_array = constants
        self.lines: list[str] = []
        self.indent = indent
        self.scope = Scope()
        self.counter = 0
        self.overrides: dict[int, Callable[[Index], str]] = {}

    # Statements -------------------------------------------------------------------------

    def emit(self, line: str) -> None:
        self.lines.append(self.indent + line)

    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def let(self, ctype: str, expression: str, prefix: str = "v") -> str:
        name = self.fresh(prefix)
        self.emit(f"const {ctype} {name} = {expression};")
        return name

    def push(self) -> None:
        self.scope = Scope(self.scope)
        self.indent += "  "

    def pop(self) -> None:
        assert self.scope.parent is not None
        self.scope = self.scope.parent
        self.indent = self.indent[:-2]

    # Indices ----------------------------------------------------------------------------

    def dims(self, index: Index) -> tuple[str, ...]:
        if index.dims is None:
            remaining, dims = index.linear, []
            for size in reversed(index.shape):
                dims.append(self.let("int64_t", f"({remaining}) % {size}", "d") if size > 1 else "0")
                remaining = f"({remaining}) / {size}"
            index.dims = tuple(reversed(dims))
        return index.dims

    def linear(self, index: Index) -> str:
        if index.linear is None:
            expression = "0"
            for size, dim in zip(index.shape, index.dims or (), strict=True):
                expression = dim if expression == "0" else f"({expression}) * {size} + {dim}"
            index.linear = expression if len(index.shape) <= 1 else self.let("int64_t", expression, "l")
        return index.linear

    # Values -----------------------------------------------------------------------------

    def value(self, node: Node, index: Index) -> str:
        if id(node) in self.overrides:
            return self.overrides[id(node)](index)
        key = (id(node), index.key)
        found = self.scope.find(key)
        if found is not None:
            return found
        result = self._compute(node, index)
        self.scope.memo[key] = result
        return result

    def _compute(self, node: Node, index: Index) -> str:
        rule = self.rules.get(node.op)
        if rule is None or isinstance(rule, NotLowered):
            why = rule.reason if rule is not None else "this backend has no lowering for it"
            raise NotImplementedError(f"{node.op} cannot be computed inside a fused loop: {why}")
        return rule(self, node, index)


def elementwise(rule: OpRule) -> ElementRule:
    """The lowering of an elementwise primitive whose element is ``rule`` (a row of the op
    table, or a new primitive's own): each operand computed at the element, then combined."""

    def lower(em: CEmitter, node: Node, index: Index) -> str:
        operands = [em.value(i, index) for i in node.inputs]
        return em.let(c_type(node.dtype), render(rule, operands, node))

    return lower


def _parameter(em: CEmitter, node: Node, index: Index) -> str:
    return em.let(c_type(node.dtype), f"{em.inputs[node.attr('index')]}[{em.linear(index)}]")


def _constant(em: CEmitter, node: Node, index: Index) -> str:
    array = node.attr("value").array
    if array.ndim == 0:
        return c_literal(readable(array, node.dtype).item(), node.dtype)
    return f"{em.constant_array(node)}[{em.linear(index)}]"


def _iota(em: CEmitter, node: Node, index: Index) -> str:
    # The position in parentheses: a reshaped index is an expression (``(l2) % 4``, ``(l2) / 16``),
    # and a cast binds tighter than its operators.
    return f"(({c_type(node.dtype)})({em.dims(index)[node.attr('dimension')]}))"


def _rng_uniform(em: CEmitter, node: Node, index: Index) -> str:
    key = em.value(node.inputs[0], Index((), (), "0"))
    bits = "32" if node.dtype.itemsize == 4 else "64"
    return em.let(c_type(node.dtype), f"braze_uniform{bits}((uint64_t){key}, (uint64_t)({em.linear(index)}))")


def _moved(where: Callable[[CEmitter, Node, Index], Index]) -> ElementRule:
    """A movement op: its operand's value at the position ``where`` maps ``index`` to."""

    def lower(em: CEmitter, node: Node, index: Index) -> str:
        return em.value(node.inputs[0], where(em, node, index))

    return lower


def _reshaped(em: CEmitter, node: Node, index: Index) -> Index:
    """The operand's position: where the element's dimensions are known, group by group
    (runs of dimensions with equal products on both sides), so splitting a dimension
    (heads out of channels) maps to ``h * 32 + d`` and merging needs a division within
    the group only; through the whole flat offset, each operand dimension a division and
    a remainder of it, the copies of a transformer's heads did not vectorize."""
    source = node.inputs[0].shape
    groups = reshape_groups(source, node.shape) if index.dims is not None else None
    if groups is None:
        return Index(source, None, em.linear(index))
    dims = ["0"] * len(source)  # dimensions of size 1
    for ins, outs in groups:
        flat = em.linear(Index(tuple(node.shape[d] for d in outs), tuple(index.dims[d] for d in outs)))
        for d, expression in zip(ins, unflatten(flat, [source[d] for d in ins]), strict=True):
            dims[d] = expression
    return Index(source, tuple(dims))


def reshape_groups(source: tuple[int, ...], shape: tuple[int, ...]) -> list[tuple[list[int], list[int]]] | None:
    """(operand dimensions, result dimensions) of equal products, in order, dimensions of
    size 1 left out; None for an empty array."""
    if 0 in source or 0 in shape:
        return None
    ins = [d for d, size in enumerate(source) if size != 1]
    outs = [d for d, size in enumerate(shape) if size != 1]
    groups, i, j = [], 0, 0
    while i < len(ins):  # the products are equal, so outs run out with ins
        group_in, group_out = [ins[i]], [outs[j]]
        inner, outer = source[ins[i]], shape[outs[j]]
        i, j = i + 1, j + 1
        while inner != outer:
            if inner < outer:
                group_in.append(ins[i])
                inner *= source[ins[i]]
                i += 1
            else:
                group_out.append(outs[j])
                outer *= shape[outs[j]]
                j += 1
        groups.append((group_in, group_out))
    return groups


def unflatten(flat: str, sizes: tuple[int, ...] | list[int]) -> list[str]:
    """C expressions of the indices into dimensions of ``sizes`` (outermost first) that the
    row-major flat index ``flat`` stands for: no remainder for the outermost, no division
    for the innermost, "0" for a dimension of size 1."""
    if isinstance(flat, Split):
        found = flat.unflatten(sizes)
        if found is not None:
            return found
    dims, inner, total = [], 1, math.prod(sizes)
    for size in reversed(sizes):
        if size == 1:
            dims.append("0")
            continue
        quotient = f"({flat}) / {inner}" if inner > 1 else flat
        dims.append(f"({quotient}) % {size}" if inner * size < total else f"({quotient})")
        inner *= size
    return dims[::-1]


def _broadcast(em: CEmitter, node: Node, index: Index) -> Index:
    source, dims = node.inputs[0].shape, em.dims(index)
    mapped = node.attr("broadcast_dimensions")
    return Index(source, tuple(dims[d] if size > 1 else "0" for size, d in zip(source, mapped, strict=True)))


def _transposed(em: CEmitter, node: Node, index: Index) -> Index:
    source, dims = node.inputs[0].shape, em.dims(index)
    inverse = [0] * len(dims)
    for out_dim, in_dim in enumerate(node.attr("permutation")):
        inverse[in_dim] = out_dim
    return Index(source, tuple(dims[inverse[d]] for d in range(len(source))))


def _reversed(em: CEmitter, node: Node, index: Index) -> Index:
    source, dims = node.inputs[0].shape, em.dims(index)
    flipped = node.attr("dimensions")
    moved = (f"({n - 1} - {i})" if d in flipped else i for d, (n, i) in enumerate(zip(source, dims, strict=True)))
    return Index(source, tuple(moved))


def _sliced(em: CEmitter, node: Node, index: Index) -> Index:
    source, dims = node.inputs[0].shape, em.dims(index)
    starts, strides = node.attr("start_indices"), node.attr("strides")
    return Index(source, tuple(_affine(d, s, st) for d, s, st in zip(dims, starts, strides, strict=True)))


def _pad(em: CEmitter, node: Node, index: Index) -> str:
    t = c_type(node.dtype)
    source = node.inputs[0].shape
    result = em.fresh()
    em.emit(f"{t} {result} = {c_literal(node.attr('value'), node.dtype)};")
    conditions, dims = [], []
    for d, (size, low, inner) in enumerate(zip(source, node.attr("low"), node.attr("interior"), strict=True)):
        moved = shifted(em.dims(index)[d], low)
        step = inner + 1
        conditions.append(f"{moved} >= 0")
        if step > 1:
            conditions.append(f"{moved} % {step} == 0")
            dims.append(f"({moved} / {step})")
        else:
            dims.append(moved)
        conditions.append(f"{dims[-1]} < {size}")
    em.emit(f"if ({' && '.join(conditions) or '1'}) {{")
    em.push()
    inner_value = em.value(node.inputs[0], Index(source, tuple(dims)))
    em.emit(f"{result} = {inner_value};")
    em.pop()
    em.emit("}")
    return result


def _concatenate(em: CEmitter, node: Node, index: Index) -> str:
    t = c_type(node.dtype)
    axis = node.attr("dimension")
    dims = em.dims(index)
    result = em.fresh()
    em.emit(f"{t} {result};")
    offset = 0
    for k, part in enumerate(node.inputs):
        size = part.shape[axis]
        if k == 0:
            em.emit(f"if ({dims[axis]} < {offset + size}) {{")
        elif k == len(node.inputs) - 1:
            em.emit("} else {")
        else:
            em.emit(f"}} else if ({dims[axis]} < {offset + size}) {{")
        em.push()
        moved = tuple(shifted(d, offset) if i == axis and offset else d for i, d in enumerate(dims))
        em.emit(f"{result} = {em.value(part, Index(part.shape, moved))};")
        em.pop()
        offset += size
    em.emit("}")
    return result


def clamped_start(em: CEmitter, indices: Node, batch: tuple[str, ...], component: int, high: int) -> str:
    """Component ``component`` of the index vector at ``batch``, clamped to [0, high]:
    compiled code cannot raise on an index out of range, so it takes the nearest in range,
    as XLA does."""
    raw = em.value(indices, Index(indices.shape, (*batch, str(component))))
    start = em.let("int64_t", f"(int64_t){raw}", "s")
    return em.let("int64_t", f"({start} < 0 ? 0 : {start} > {high} ? {high} : {start})", "s")


def _gather(em: CEmitter, node: Node, index: Index) -> str:
    """The operand's element at the window position of a result element: its batch
    position's clamped start, plus its offset in the window."""
    operand, indices = node.inputs
    offsets, collapsed = node.attr("offset_dims"), node.attr("collapsed_slice_dims")
    index_map, sizes = node.attr("start_index_map"), node.attr("slice_sizes")
    dims = em.dims(index)
    batch = tuple(dim for p, dim in enumerate(dims) if p not in offsets)
    window = iter(dims[p] for p in offsets)
    position = []
    for d, bound in enumerate(operand.shape):
        offset = "0" if d in collapsed else next(window)
        if d in index_map:
            start = clamped_start(em, indices, batch, index_map.index(d), bound - sizes[d])
            position.append(start if offset == "0" else f"({start} + {offset})")
        else:
            position.append(offset)
    return em.value(operand, Index(operand.shape, tuple(position)))


def _affine(dim: str, start: int, stride: int) -> str:
    scaled = dim if stride == 1 else f"{dim} * {stride}"
    return scaled if start == 0 else f"({scaled} + {start})"


# Every C dialect's rules: what one element of a fused loop computes.
ELEMENT_RULES: dict[Primitive, ElementRule] = {
    sources.parameter: _parameter,
    sources.constant: _constant,
    sources.iota: _iota,
    sources.rng_uniform: _rng_uniform,
    structural.broadcast_in_dim: _moved(_broadcast),
    structural.reshape: _moved(_reshaped),
    structural.transpose: _moved(_transposed),
    structural.rev: _moved(_reversed),
    structural.slice_: _moved(_sliced),
    structural.pad: _pad,
    structural.concatenate: _concatenate,
    indexing.gather: _gather,
    **{primitive: elementwise(rule) for primitive, rule in OPS.items()},
}
