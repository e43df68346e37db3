"""A hypothesis strategy for graphs that row fusion makes one kernel of: reductions over the
last axis, elementwise work on the per-row results (with and without a trailing 1), and
those results broadcast back along the rows into elementwise work of the rows' shape, as a
softmax, a layer norm and their gradients are built; scalars (a layer norm's epsilon)
broadcast to the rows too."""

from __future__ import annotations

from hypothesis import strategies as st
from random_graphs import make

from braze.ir.dtypes import float32, float64
from braze.ir.graph import Graph, Node, parameter
from braze.ir.primitive import Aval

# Rows shorter than a vector, of whole vectors, and with a remainder past them.
ROW_SHAPES = [(3, 5), (4, 40), (2, 3, 17), (2, 2, 33)]
STEPS = ["reduce", "unary", "binary", "spread", "keep_axis", "row_unary", "row_binary", "scalar", "softmax"]


@st.composite
def row_graphs(draw) -> Graph:
    dtype = draw(st.sampled_from([float32, float64]))
    shape = draw(st.sampled_from(ROW_SHAPES))
    n = len(shape)
    x, w = parameter(0, Aval(shape, dtype)), parameter(1, Aval(shape[-1:], dtype))
    eps = parameter(2, Aval((), dtype))
    full: list[Node] = [x, make("broadcast_in_dim", (w,), shape=shape, broadcast_dimensions=(n - 1,))]
    rows: list[Node] = []
    steps = ["reduce", *draw(st.lists(st.sampled_from(STEPS), min_size=1, max_size=6)), "spread", "binary"]

    def spread(r: Node) -> Node:
        return make("broadcast_in_dim", (r,), shape=shape, broadcast_dimensions=tuple(range(len(r.shape))))

    for step in steps:
        if step == "reduce":
            op = draw(st.sampled_from(["reduce_sum", "reduce_max"]))
            rows.append(make(op, (draw(st.sampled_from(full)),), axes=(n - 1,)))
        elif step == "unary":
            full.append(make(draw(st.sampled_from(["neg", "tanh", "exp"])), (draw(st.sampled_from(full)),)))
        elif step == "binary":
            a, b = draw(st.sampled_from(full)), full[-1]
            full.append(make(draw(st.sampled_from(["add", "sub", "mul"])), (a, b)))
        elif step == "scalar":
            full.append(make("broadcast_in_dim", (eps,), shape=shape, broadcast_dimensions=()))
        elif step == "spread" and rows:
            full.append(spread(draw(st.sampled_from(rows))))
        elif step == "softmax":
            # exp(f - max f) over its row sum: the exponentials feed the sum and the result,
            # which a row kernel computes in two passes over the row.
            f = draw(st.sampled_from(full))
            top = make("reduce_max", (f,), axes=(n - 1,))
            e = make("exp", (make("sub", (f, spread(top))),))
            total = make("reduce_sum", (e,), axes=(n - 1,))
            rows.extend([top, total])
            full.append(make(draw(st.sampled_from(["div", "mul"])), (e, spread(total))))
        elif step == "keep_axis" and rows:
            r = draw(st.sampled_from([r for r in rows if len(r.shape) == n - 1] or rows))
            rows.append(make("reshape", (r,), new_sizes=(*shape[:-1], 1) if len(r.shape) == n - 1 else shape[:-1]))
        elif step == "row_unary" and rows:
            rows.append(make(draw(st.sampled_from(["neg", "tanh", "rsqrt"])), (draw(st.sampled_from(rows)),)))
        elif step == "row_binary" and rows:
            a = draw(st.sampled_from(rows))
            b = draw(st.sampled_from([r for r in rows if r.shape == a.shape]))
            rows.append(make(draw(st.sampled_from(["add", "mul", "max"])), (a, b)))
    outputs = [full[-1], *draw(st.lists(st.sampled_from(rows), max_size=2, unique_by=id))]
    return Graph((x, w, eps), tuple(outputs))
