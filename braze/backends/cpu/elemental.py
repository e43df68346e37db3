"""The elemental emitter: C code computing one element of any fused node.

A kernel's loop nest supplies an ``Index`` (the element's position, as C expressions);
``Emitter.value(node, index)`` emits the statements that compute ``node`` at that
position and returns the C name holding it. Movement ops (broadcast, reshape, transpose,
slice, pad, concatenate) only change the index; elementwise ops combine their operands'
values at the same index. Values are memoised per (node, index) inside a scope, so a
node read twice at one position is computed once; pad and concatenate evaluate their
operands inside a conditional scope so that out-of-range elements are never read.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from braze.backends.cpu.target import CpuTarget
from braze.ir.dtypes import DType
from braze.ir.graph import Node

# The braze_ functions are vmath's: libm's are calls, which keep a loop from vectorizing.
UNARY_FLOAT = {
    "exp": "braze_exp{f}({a})",
    "log": "braze_log{f}({a})",
    "sqrt": "sqrt{f}({a})",
    "rsqrt": "(({t})1 / sqrt{f}({a}))",
    "tanh": "braze_tanh{f}({a})",
    "logistic": "braze_logistic{f}({a})",
}
COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


_C_SIZES = {"float": 4, "double": 8, "int32_t": 4, "int64_t": 8}
# Below this many multiply-adds a kernel's tiling choices are not timed: they differ by
# microseconds, less than timing them costs (every op-table and fuzzer shape is below it).
AUTOTUNE_MIN_WORK = 1 << 21


def c_type(dtype: DType) -> str:
    return dtype.c_type


def c_literal(value: float | int | bool, dtype: DType) -> str:
    """An exact C literal of ``value`` in ``dtype`` (hex floats round-trip bit for bit)."""
    if dtype.kind == "b":
        return "1" if value else "0"
    if dtype.kind == "i":
        if int(value) == -(2**63):  # 9223372036854775808LL has no signed type to be negated in
            return "((int64_t)(-9223372036854775807LL - 1))"
        return f"((int64_t){int(value)}LL)" if dtype.itemsize == 8 else f"((int32_t){int(value)})"
    value = float(np.asarray(value, dtype=dtype.numpy))
    suffix = "f" if dtype.itemsize == 4 else ""
    if math.isnan(value):
        return f"(({dtype.c_type})NAN)"
    if math.isinf(value):
        return f"(({dtype.c_type})({'-' if value < 0 else ''}INFINITY))"
    return f"{value.hex()}{suffix}"


def wrapping(dtype: DType, a: str, symbol: str, b: str) -> str:
    """``a symbol b`` (+, - or *) wrapping around as NumPy's integers do. Signed overflow is
    undefined in C, so compilers assume it never happens (GCC folds ``x + 1 > x`` to true):
    integers are combined as unsigned, which wrap by definition, and converted back (modulo
    2^n in every C, CUDA and OpenCL compiler)."""
    if dtype.kind != "i":
        return f"({a} {symbol} {b})"
    unsigned = f"uint{8 * dtype.itemsize}_t"
    return f"(({dtype.c_type})(({unsigned}){a} {symbol} ({unsigned}){b}))"


def float_to_int(x: str, source: DType, dtype: DType) -> str:
    """``(dtype)x`` saturating, NaN to 0 (XLA's and JAX's rule, which the NumPy twin of
    ``convert`` follows): C leaves NaN and out-of-range values undefined."""
    bits = 8 * dtype.itemsize - 1
    low, high = c_literal(-(2**bits), dtype), c_literal(2**bits - 1, dtype)
    bound = c_literal(2.0**bits, source)
    return f"({x} != {x} ? ({dtype.c_type})0 : {x} >= {bound} ? {high} : {x} <= -{bound} ? {low} : ({dtype.c_type}){x})"


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


class Emitter:
    """Emits the body of one loop iteration; ``inputs`` maps a computation parameter's
    index to the C pointer name it is read from; ``overrides`` gives nodes whose value is
    already a C expression (a contraction's accumulator)."""

    def __init__(
        self,
        inputs: dict[int, str],
        constants: Callable[[Node], str],
        target: CpuTarget,
        indent: str = "    ",
        tuning: dict[str, int] | None = None,
    ) -> None:
        self.inputs = inputs
        self.target = target
        self.tuning = tuning or {}  # the autotuner's pick for each choice below, by name
        self.menu: dict[str, int] = {}  # the choices worth timing: how many options each has
        self.choices = 0
        self.menu_work = 0  # the multiply-adds of the biggest choice offered
        self.scratch: list[tuple[str, str, int, bool]] = []  # (C type, name, bytes, per thread)
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

    def scratch_buffer(self, ctype: str, name: str, count: int, per_thread: bool = False) -> None:
        """``name``: a scratch array of ``count`` elements (that many per thread when
        ``per_thread``), owned by the executable and passed to the kernel: zeroed once, when
        the executable is made, then kept between calls, so a kernel that always writes the
        same positions finds the rest still zero, and a big buffer is not faulted in again
        every step. Kernels allocate nothing themselves."""
        self.scratch.append((ctype, name, count * _C_SIZES[ctype], per_thread))

    def choice(self, name: str, options: int, work: int) -> int:
        """Which of ``options`` ways to emit something (0, the emitter's own prediction,
        unless the autotuner picked another); the choice is offered for timing only when
        ``work`` (multiply-adds) is big enough for the options to differ measurably."""
        name = f"{name} {self.choices}"
        self.choices += 1
        if options > 1 and work >= AUTOTUNE_MIN_WORK:
            self.menu[name] = options
            self.menu_work = max(self.menu_work, work)
        picked = self.tuning.get(name, 0)
        return (
            picked if type(picked) is int and 0 <= picked < options else 0
        )  # a stale or edited record: the prediction

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
        op = node.op
        t = c_type(node.dtype)
        if op == "parameter":
            return self.let(t, f"{self.inputs[node.attr('index')]}[{self.linear(index)}]")
        if op == "constant":
            array = node.attr("value").array
            if array.ndim == 0:
                return c_literal(array.item(), node.dtype)
            return f"{self.constant_array(node)}[{self.linear(index)}]"
        if op == "iota":
            return f"(({t}){self.dims(index)[node.attr('dimension')]})"
        if op == "rng_uniform":
            key = self.value(node.inputs[0], Index((), (), "0"))
            bits = "32" if node.dtype.itemsize == 4 else "64"
            return self.let(t, f"braze_uniform{bits}((uint64_t){key}, (uint64_t)({self.linear(index)}))")
        if op in ("broadcast_in_dim", "reshape", "transpose", "rev", "slice"):
            return self.value(node.inputs[0], self._moved(node, index))
        if op == "pad":
            return self._pad(node, index)
        if op == "concatenate":
            return self._concatenate(node, index)
        operands = [self.value(i, index) for i in node.inputs]
        return self.let(t, self._elementwise(node, operands))

    def _moved(self, node: Node, index: Index) -> Index:
        source = node.inputs[0].shape
        if node.op == "reshape":
            return Index(source, None, self.linear(index))
        dims = self.dims(index)
        if node.op == "broadcast_in_dim":
            mapped = node.attr("broadcast_dimensions")
            return Index(source, tuple(dims[d] if size > 1 else "0" for size, d in zip(source, mapped, strict=True)))
        if node.op == "transpose":
            inverse = [0] * len(dims)
            for out_dim, in_dim in enumerate(node.attr("permutation")):
                inverse[in_dim] = out_dim
            return Index(source, tuple(dims[inverse[d]] for d in range(len(source))))
        if node.op == "rev":
            flipped = node.attr("dimensions")
            moved = (
                f"({n - 1} - {i})" if d in flipped else i for d, (n, i) in enumerate(zip(source, dims, strict=True))
            )
            return Index(source, tuple(moved))
        starts, strides = node.attr("start_indices"), node.attr("strides")
        return Index(source, tuple(_affine(d, s, st) for d, s, st in zip(dims, starts, strides, strict=True)))

    def _pad(self, node: Node, index: Index) -> str:
        t = c_type(node.dtype)
        source = node.inputs[0].shape
        result = self.fresh()
        self.emit(f"{t} {result} = {c_literal(node.attr('value'), node.dtype)};")
        conditions, dims = [], []
        for d, (size, low, inner) in enumerate(zip(source, node.attr("low"), node.attr("interior"), strict=True)):
            shifted = f"({self.dims(index)[d]} - {low})"
            step = inner + 1
            conditions.append(f"{shifted} >= 0")
            if step > 1:
                conditions.append(f"{shifted} % {step} == 0")
                dims.append(f"({shifted} / {step})")
            else:
                dims.append(shifted)
            conditions.append(f"{dims[-1]} < {size}")
        self.emit(f"if ({' && '.join(conditions) or '1'}) {{")
        self.push()
        inner_value = self.value(node.inputs[0], Index(source, tuple(dims)))
        self.emit(f"{result} = {inner_value};")
        self.pop()
        self.emit("}")
        return result

    def _concatenate(self, node: Node, index: Index) -> str:
        t = c_type(node.dtype)
        axis = node.attr("dimension")
        dims = self.dims(index)
        result = self.fresh()
        self.emit(f"{t} {result};")
        offset = 0
        for k, part in enumerate(node.inputs):
            size = part.shape[axis]
            if k == 0:
                self.emit(f"if ({dims[axis]} < {offset + size}) {{")
            elif k == len(node.inputs) - 1:
                self.emit("} else {")
            else:
                self.emit(f"}} else if ({dims[axis]} < {offset + size}) {{")
            self.push()
            shifted = tuple(f"({d} - {offset})" if i == axis and offset else d for i, d in enumerate(dims))
            self.emit(f"{result} = {self.value(part, Index(part.shape, shifted))};")
            self.pop()
            offset += size
        self.emit("}")
        return result

    def _elementwise(self, node: Node, a: list[str]) -> str:
        op, dtype = node.op, node.dtype
        t = c_type(dtype)
        operand_dtype = node.inputs[0].dtype
        f = "f" if operand_dtype.itemsize == 4 and operand_dtype.is_float else ""
        if op in UNARY_FLOAT:
            return UNARY_FLOAT[op].format(f=f, t=t, a=a[0])
        if op == "neg":
            return wrapping(dtype, "0", "-", a[0]) if dtype.kind == "i" else f"(-{a[0]})"
        if op == "abs":
            return (
                f"fabs{f}({a[0]})" if dtype.is_float else f"({a[0]} < 0 ? {wrapping(dtype, '0', '-', a[0])} : {a[0]})"
            )
        if op == "relu":
            return f"({a[0]} < 0 ? ({t})0 : {a[0]})"  # NaN stays NaN, as in max(x, 0)
        if op == "sign":
            body = f"(({t})(({a[0]}) > 0) - ({t})(({a[0]}) < 0))"
            return f"(({a[0]}) != ({a[0]}) ? ({a[0]}) : {body})" if dtype.is_float else body
        if op in ("add", "sub", "mul"):
            return wrapping(dtype, a[0], dict(add="+", sub="-", mul="*")[op], a[1])
        if op == "div":
            if dtype.is_float:
                return f"({a[0]} / {a[1]})"
            # x / -1 is -x, wrapping: the one overflowing quotient (INT_MIN / -1) traps on x86.
            negated = wrapping(dtype, "0", "-", a[0])
            return f"({a[1]} == 0 ? ({t})0 : {a[1]} == -1 ? {negated} : ({t})({a[0]} / {a[1]}))"
        if op == "pow":
            return f"braze_powf({a[0]}, {a[1]})" if f else f"pow({a[0]}, {a[1]})"
        if op in ("max", "min"):
            better = ">" if op == "max" else "<"
            # Bitwise | rather than ||: no branch, so the select vectorizes; NaN propagates.
            nan = f"({a[0]} != {a[0]}) | " if dtype.is_float else ""
            return f"(({nan}({a[0]} {better} {a[1]})) ? {a[0]} : {a[1]})"
        if op in COMPARE:
            return f"(unsigned char)({a[0]} {COMPARE[op]} {a[1]})"
        if op == "select":
            return f"({a[0]} ? {a[1]} : {a[2]})"
        if op == "convert":
            if dtype.kind == "b":
                return f"(unsigned char)({a[0]} != 0)"
            if dtype.is_float and dtype.itemsize == 4 and operand_dtype.is_float and operand_dtype.itemsize == 8:
                return f"braze_narrow({a[0]})"
            if dtype.kind == "i" and operand_dtype.is_float:
                return float_to_int(a[0], operand_dtype, dtype)
            return f"(({t}){a[0]})"
        raise NotImplementedError(f"no C lowering for {op} inside a fused loop")


def _affine(dim: str, start: int, stride: int) -> str:
    scaled = dim if stride == 1 else f"{dim} * {stride}"
    return scaled if start == 0 else f"({scaled} + {start})"
