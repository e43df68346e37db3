"""The IR: printing and parsing round trips on every primitive, structural hashing,
hash-consing and the verifier."""

from __future__ import annotations

import numpy as np
import pytest
from test_primitive_gradients import PRIMITIVE_CASES, _attrs

from braze.ir import PRIMITIVES
from braze.ir.dtypes import as_dtype, bool_, float32, float64, int32, int64
from braze.ir.graph import Graph, Node, parameter
from braze.ir.primitive import Aval, Literal
from braze.ir.text import ParseError, parse_graph, print_graph
from braze.ir.verify import VerificationError, verify


def graph_of(name: str, attrs: dict, arrays: list) -> Graph:
    params = tuple(parameter(i, Aval(a.shape, as_dtype(a.dtype))) for i, a in enumerate(arrays))
    primitive = PRIMITIVES[name]
    aval = primitive.shape_rule(*(p.aval for p in params), **attrs)
    return Graph(params, (Node.make(primitive, params, attrs, aval),))


def source_cases():
    """Graphs for the primitives the gradient table omits: those without array operands and
    the non-differentiable ones."""
    key = parameter(0, Aval((), int64))
    f32 = Aval((2, 3), float32)
    yield Graph(
        (), (Node.make(PRIMITIVES["iota"], (), {"shape": (2, 3), "dimension": 1, "dtype": int32}, Aval((2, 3), int32)),)
    )
    literal = Literal(np.array([[1.5, -np.inf, np.nan]], dtype=np.float32))
    yield Graph((), (Node.make(PRIMITIVES["constant"], (), {"value": literal}, literal.aval),))
    yield Graph((key,), (Node.make(PRIMITIVES["rng_uniform"], (key,), {"shape": (2, 3), "dtype": float32}, f32),))
    a, b = parameter(0, f32), parameter(1, f32)
    total = Node.make(PRIMITIVES["add"], (a, b), {}, f32)
    inner = Graph((a, b), (Node.make(PRIMITIVES["exp"], (total,), {}, f32), total))
    x, y = parameter(0, f32), parameter(1, f32)
    fused = Node.make(PRIMITIVES["fusion"], (x, y), {"kind": "loop", "computation": inner}, (f32, f32))
    first = Node.make(PRIMITIVES["get_element"], (fused,), {"index": 0}, f32)
    yield Graph((x, y), (first, Node.make(PRIMITIVES["get_element"], (fused,), {"index": 1}, f32)))
    for compare in ("eq", "ne", "lt", "le", "gt", "ge"):
        a, b = parameter(0, f32), parameter(1, f32)
        yield Graph((a, b), (Node.make(PRIMITIVES[compare], (a, b), {}, Aval((2, 3), as_dtype("bool"))),))
    i32 = Aval((2, 3), int32)
    for name in ("and", "or", "xor", "shift_left", "shift_right"):
        a, b = parameter(0, i32), parameter(1, i32)
        yield Graph((a, b), (Node.make(PRIMITIVES[name], (a, b), {}, i32),))
    a = parameter(0, i32)
    yield Graph((a,), (Node.make(PRIMITIVES["not"], (a,), {}, i32),))
    a, b = parameter(0, f32), parameter(1, f32)
    yield Graph((a, b), (Node.make(PRIMITIVES["nextafter"], (a, b), {}, f32),))
    a = parameter(0, f32)
    attrs = {"dimension": 1, "descending": True, "dtype": int64}
    yield Graph((a,), (Node.make(PRIMITIVES["argsort"], (a,), attrs, Aval((2, 3), int64)),))
    yield from loop_cases()


def loop_cases():
    """A scan whose body holds a while loop (the nested bodies print innermost first)."""
    row, flag = Aval((3,), float32), Aval((), bool_)
    c = parameter(0, row)
    limit = Node.make(PRIMITIVES["reduce_sum"], (c,), {"axes": (0,)}, Aval((), float32))
    small = Node.make(
        PRIMITIVES["lt"],
        (limit, Node.make(PRIMITIVES["constant"], (), {"value": Literal(9.0, float32)}, Aval((), float32))),
        {},
        flag,
    )
    cond = Graph((c,), (small,))
    grow = Graph((c,), (Node.make(PRIMITIVES["add"], (c, c), {}, row),))
    loop_attrs = {"cond": cond, "body": grow, "carries": 1, "cond_consts": 0}
    carry, item = parameter(0, row), parameter(1, row)
    started = Node.make(PRIMITIVES["add"], (carry, item), {}, row)
    inner = Node.make(PRIMITIVES["while_loop"], (started,), loop_attrs, (row,))
    grown = Node.make(PRIMITIVES["get_element"], (inner,), {"index": 0}, row)
    body = Graph((carry, item), (grown, started))
    init, xs = parameter(0, row), parameter(1, Aval((4, 3), float32))
    attrs = {"body": body, "length": 4, "reverse": True, "carries": 1, "xs": 1}
    scanned = Node.make(PRIMITIVES["scan"], (init, xs), attrs, (row, Aval((4, 3), float32)))
    yield Graph(
        (init, xs),
        tuple(Node.make(PRIMITIVES["get_element"], (scanned,), {"index": k}, a) for k, a in enumerate(scanned.aval)),
    )


ALL_GRAPHS = [graph_of(n, _attrs(a), arrays) for n, a, arrays, _ in PRIMITIVE_CASES] + list(source_cases())


def test_the_round_trip_cases_cover_every_primitive():
    def nested(graph):  # a graph and the computations its nodes hold (loops' bodies)
        yield graph
        for node in graph.nodes():
            for _, value in node.attrs:
                if isinstance(value, Graph):
                    yield from nested(value)

    covered = {node.op.name for g in ALL_GRAPHS for inner in nested(g) for node in inner.nodes()}
    assert covered == set(PRIMITIVES)


@pytest.mark.parametrize("graph", ALL_GRAPHS, ids=lambda g: g.outputs[0].op.name)
def test_print_parse_round_trip(graph):
    text = print_graph(verify(graph))
    parsed = parse_graph(text)
    assert parsed.same_structure(graph), text
    assert print_graph(parsed) == text


def two_layer(shape=(4, 3), dtype=float32, axis=(1,), swap=False) -> Graph:
    x, w = parameter(0, Aval(shape, dtype)), parameter(1, Aval(shape, dtype))
    a, b = (w, x) if swap else (x, w)
    product = Node.make(PRIMITIVES["mul"], (a, b), {}, Aval(shape, dtype))
    tanh = Node.make(PRIMITIVES["tanh"], (product,), {}, Aval(shape, dtype))
    kept = tuple(s for d, s in enumerate(shape) if d not in axis)
    return Graph((x, w), (Node.make(PRIMITIVES["reduce_sum"], (tanh,), {"axes": axis}, Aval(kept, dtype)),))


def test_structural_hash_is_equal_for_equal_structures_and_nodes_are_shared():
    first, second = two_layer(), two_layer()
    assert first.structural_hash == second.structural_hash
    assert first.outputs[0] is second.outputs[0]


@pytest.mark.parametrize(
    "variant",
    [{"shape": (5, 3)}, {"dtype": float64}, {"axis": (0,)}, {"swap": True}],
    ids=["shape", "dtype", "attribute", "edge"],
)
def test_structural_hash_differs_when_anything_differs(variant):
    assert two_layer().structural_hash != two_layer(**variant).structural_hash


def test_parse_errors_name_the_line():
    with pytest.raises(ParseError, match="line 2: unknown primitive 'frobnicate'"):
        parse_graph("graph(%0: f32[2]) {\n  %1 = frobnicate(%0) : f32[2]\n  return (%1)\n}")
    with pytest.raises(ParseError, match="line 2: add gives f32\\[2\\], the text says f32\\[3\\]"):
        parse_graph("graph(%0: f32[2]) {\n  %1 = add(%0, %0) : f32[3]\n  return (%1)\n}")


def test_verifier_rejects_a_wrong_type_and_a_stray_parameter():
    x = parameter(0, Aval((2,), float32))
    wrong = Node.make(PRIMITIVES["neg"], (x,), {}, Aval((3,), float32))
    with pytest.raises(VerificationError, match="neg: its shape rule gives f32\\[2\\], the node says f32\\[3\\]"):
        verify(Graph((x,), (wrong,)))
    stray = parameter(1, Aval((2,), float32))
    with pytest.raises(VerificationError, match="parameter 1 is used but not declared"):
        verify(Graph((x,), (Node.make(PRIMITIVES["add"], (x, stray), {}, Aval((2,), float32)),)))
