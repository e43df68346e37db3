"""The text form of graphs: printed for people and dumps, parsed back for pass tests.

    graph(%0: f32[2,3], %1: f32[3]) {
      %2 = broadcast_in_dim(%1) {broadcast_dimensions=(1,), shape=(2, 3)} : f32[2,3]
      %3 = add(%0, %2) : f32[2,3]
      return (%3)
    }

Parameters are numbered by index; attribute values are Python literals, dtype names
(``f32``), ``inf``/``nan`` and ``literal(f32, (2,), [1.0, 2.0])`` for constants, so that
printing then parsing gives back the very same (hash-consed) nodes.
"""

from __future__ import annotations

import ast
import math
import re
from collections import Counter
from typing import Any

from braze.ir.dtypes import ALL_DTYPES, DType, as_dtype, readable, storage_array
from braze.ir.graph import Graph, Node, parameter
from braze.ir.primitive import PRIMITIVES, Aval, Category, Literal
from braze.ir.prims.fusion import fusion

_DTYPE_BY_SHORT = {d.short: d for d in ALL_DTYPES}


def format_aval(aval: Aval | tuple[Aval, ...]) -> str:
    if not isinstance(aval, Aval):
        return "(" + ", ".join(format_aval(a) for a in aval) + ")"
    return f"{aval.dtype.short}[{','.join(map(str, aval.shape))}]"


def format_value(value: Any, names: dict[Graph, str] | None = None) -> str:
    if isinstance(value, Graph):
        if names is None or value not in names:
            raise TypeError("a nested computation is printed by print_graph with its name")
        return names[value]
    if isinstance(value, DType):
        return value.short
    if isinstance(value, Literal):
        aval = value.aval
        values = format_value(readable(value.array, aval.dtype).tolist())
        return f"literal({aval.dtype.short}, {format_value(aval.shape)}, {values})"
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (list, tuple)):
        inner = ", ".join(format_value(v) for v in value)
        if isinstance(value, tuple):
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        return f"[{inner}]"
    return repr(value)


def print_graph(graph: Graph, name: str = "graph") -> str:
    """The text form of ``graph``, preceded by the nested computations its fusions call."""
    names: dict[Graph, str] = {}
    blocks: list[str] = []
    _print_nested(graph, names, blocks)
    blocks.append(_print_block(graph, name, names))
    return "\n\n".join(blocks)


def _print_nested(graph: Graph, names: dict[Graph, str], blocks: list[str]) -> None:
    """The blocks of the computations ``graph``'s nodes hold (a loop's body may hold more),
    innermost first, so that each block names only computations printed above it."""
    for node in graph.nodes():
        for _, value in node.attrs:
            if isinstance(value, Graph) and value not in names:
                _print_nested(value, names, blocks)
                names[value] = f"fused_{len(names)}"
                blocks.append(_print_block(value, names[value], names))


def _print_block(graph: Graph, name: str, computations: dict[Graph, str]) -> str:
    names: dict[int, str] = {}
    params = []
    for p in graph.params:
        names[id(p)] = f"%{p.attr('index')}"
        params.append(f"{names[id(p)]}: {format_aval(p.aval)}")
    lines = [f"{name}({', '.join(params)}) {{"]
    counter = len(graph.params)
    for node in graph.nodes():
        if node.op.category is Category.PARAMETER:
            continue
        names[id(node)] = f"%{counter}"
        counter += 1
        operands = ", ".join(names[id(i)] for i in node.inputs)
        attrs = ", ".join(f"{k}={format_value(v, computations)}" for k, v in node.attrs)
        attr_text = f" {{{attrs}}}" if attrs else ""
        lines.append(f"  {names[id(node)]} = {node.op}({operands}){attr_text} : {format_aval(node.aval)}")
    returned = ", ".join(names[id(o)] for o in graph.outputs)
    lines.append(f"  return ({returned})")
    if graph.donated:
        lines.append(f"  donated {format_value(tuple(sorted(graph.donated.items())))}")
    lines.append("}")
    return "\n".join(lines)


class ParseError(ValueError):
    """Text that is not a graph; the message gives the line."""


_HEADER = re.compile(r"^\s*(\w+)\((.*)\)\s*\{\s*$")
_NODE = re.compile(r"^\s*%(\d+)\s*=\s*(\w+)\((.*?)\)\s*(\{.*\})?\s*:\s*(\(.*\)|\w+\[[\d,]*\])\s*$")
_RETURN = re.compile(r"^\s*return\s*\((.*)\)\s*$")
_DONATED = re.compile(r"^\s*donated\s+(.*)$")
_AVAL = re.compile(r"^(\w+)\[([\d,]*)\]$")


def parse_aval(text: str) -> Aval | tuple[Aval, ...]:
    text = text.strip()
    if text.startswith("("):
        return tuple(parse_aval(part) for part in re.findall(r"\w+\[[\d,]*\]", text))
    match = _AVAL.match(text)
    if not match or match.group(1) not in _DTYPE_BY_SHORT:
        raise ParseError(f"not a type: {text!r}")
    dims = tuple(int(d) for d in match.group(2).split(",") if d)
    return Aval(dims, _DTYPE_BY_SHORT[match.group(1)])


def _evaluate(node: ast.AST, computations: dict[str, Graph] | None = None) -> Any:
    """A restricted evaluator for attribute values: literals, dtype names, inf, nan,
    ``literal(...)`` constants and the names of computations printed above."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Tuple):
        return tuple(_evaluate(e, computations) for e in node.elts)
    if isinstance(node, ast.List):
        return [_evaluate(e, computations) for e in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand, computations)
    if isinstance(node, ast.Name):
        if node.id in _DTYPE_BY_SHORT:
            return _DTYPE_BY_SHORT[node.id]
        if node.id in ("inf", "nan"):
            return float(node.id)
        if computations and node.id in computations:
            return computations[node.id]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "literal":
        dtype, shape, values = (_evaluate(a) for a in node.args)
        return Literal(storage_array(values, dtype).reshape(shape))
    raise ParseError(f"cannot read attribute value {ast.unparse(node)!r}")


def parse_attrs(text: str, computations: dict[str, Graph] | None = None) -> dict[str, Any]:
    if not text:
        return {}
    body = text.strip()[1:-1]
    try:
        call = ast.parse(f"f({body})", mode="eval").body
    except SyntaxError as error:
        raise ParseError(f"cannot read attributes {text!r}: {error}") from None
    assert isinstance(call, ast.Call)
    return {kw.arg: _evaluate(kw.value, computations) for kw in call.keywords if kw.arg}


def parse_graph(text: str) -> Graph:
    """Parse the text form back into a Graph (checking each node's type with its shape
    rule). Blocks before the last are the computations its fusions call."""
    computations: dict[str, Graph] = {}
    lines = [line for line in text.strip().splitlines() if line.strip()]
    start, graph = 0, None
    while start < len(lines):
        graph, start, name = _parse_block(lines, start, computations)
        computations[name] = graph
    if graph is None:
        raise ParseError("no graph in the text")
    return graph


def _parse_block(lines: list[str], start: int, computations: dict[str, Graph]) -> tuple[Graph, int, str]:
    header = _HEADER.match(lines[start])
    if not header:
        raise ParseError(f"line {start + 1}: expected 'name(...) {{', got {lines[start]!r}")
    values: dict[str, Node] = {}
    params = []
    for index, item in enumerate(p for p in header.group(2).split(", ") if p.strip()):
        name, _, type_text = item.partition(":")
        node = parameter(index, parse_aval(type_text))
        values[name.strip()] = node
        params.append(node)
    outputs: tuple[Node, ...] | None = None
    donated: dict[int, int] = {}
    number = start + 1
    for number, line in enumerate(lines[start + 1 :], start=start + 2):
        if line.strip() == "}":
            break
        if match := _RETURN.match(line):
            outputs = tuple(_lookup(values, name, number) for name in _operands(match.group(1)))
            continue
        if match := _DONATED.match(line):
            donated = dict(_evaluate(ast.parse(match.group(1), mode="eval").body))
            continue
        match = _NODE.match(line)
        if not match:
            raise ParseError(f"line {number}: cannot read {line.strip()!r}")
        result, name, operands, attr_text, type_text = match.groups()
        primitive = PRIMITIVES.get(name)
        if primitive is None:
            raise ParseError(f"line {number}: unknown primitive {name!r}")
        inputs = tuple(_lookup(values, operand, number) for operand in _operands(operands))
        attrs = parse_attrs(attr_text or "", computations)
        if "dtype" in attrs:
            attrs["dtype"] = as_dtype(attrs["dtype"])
        aval = primitive.shape_rule(*(i.aval for i in inputs), **attrs)
        if aval != parse_aval(type_text):
            raise ParseError(f"line {number}: {name} gives {format_aval(aval)}, the text says {type_text}")
        values[f"%{result}"] = Node.make(primitive, inputs, attrs, aval)
    if outputs is None:
        raise ParseError(f"{header.group(1)} has no return line")
    return Graph(tuple(params), outputs, donated), number, header.group(1)


def _operands(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def _lookup(values: dict[str, Node], name: str, line: int) -> Node:
    if name not in values:
        raise ParseError(f"line {line}: {name} is used before it is defined")
    return values[name]


def kernel_label(node: Node) -> str:
    """One line saying what a kernel computes: its fusion kind, result type and ops."""
    if node.op is not fusion:
        return f"{node.op} -> {format_aval(node.aval)}"
    return f"{node.attr('kind')} fusion -> {format_aval(node.aval)}: {', '.join(fused_ops(node))}"


def fused_ops(node: Node) -> list[str]:
    """The ops a fusion computes, each with its count when more than one ("add x2")."""
    ops = Counter(m.op.name for m in node.attr("computation").nodes() if m.op.category is not Category.PARAMETER)
    return [f"{op} x{c}" if c > 1 else op for op, c in ops.items()]
