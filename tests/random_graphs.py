"""A hypothesis strategy for valid graphs over the primitive set, small enough to build
thousands: parameters of a few shapes, then random ops on nodes whose shapes fit."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from braze.ir.dtypes import bfloat16, bool_, float32, float64, from_bfloat16, int32, storage_array
from braze.ir.graph import Graph, Node, parameter
from braze.ir.primitive import PRIMITIVES, Aval, Literal

# (9, 10): dots wide enough for register tiles; (2, 4, 6, 3): NHWC images that 2x2 pools tile.
SHAPES = [(3,), (2, 3), (3, 4), (2, 3, 4), (4, 4), (9, 10), (2, 4, 6, 3)]
UNARY = ["neg", "exp", "tanh", "logistic", "abs", "sign", "sqrt", "log", "rsqrt", "relu"]
BINARY = ["add", "sub", "mul", "div", "max", "min", "pow"]
COMPARE = ["eq", "ne", "lt", "le", "gt", "ge"]
KINDS = [
    "unary",
    "binary",
    "splat",
    "reduce",
    "broadcast",
    "reshape",
    "transpose",
    "rev",
    "slice",
    "pad",
    "concatenate",
    "select",
    "convert",
    "dot",
    "rounded_dot",
    "rounded_conv",
    "dots_meet",
    "split_heads_dot",
    "convs_meet",
    "winograd_conv",
    "strided_grad_input",
    "window",
    "pool_gradient",
    "iota",
    "gather",
    "scatter",
    "scan",
]


def compiled_batches(examples: int) -> settings:
    """Hypothesis settings for tests whose every example compiles a library of graphs: a
    fixed sequence, and no shrinking (the failing graph is printed instead)."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate],
    )


def make(op: str, inputs: tuple[Node, ...], **attrs) -> Node:
    primitive = PRIMITIVES[op]
    aval = primitive.shape_rule(*(i.aval for i in inputs), **attrs)
    return Node.make(primitive, inputs, attrs, aval)


def splat(value: float, aval: Aval) -> Node:
    scalar = Node.make(PRIMITIVES["constant"], (), {"value": Literal(value, aval.dtype)}, Aval((), aval.dtype))
    return make("broadcast_in_dim", (scalar,), shape=aval.shape, broadcast_dimensions=())


def row_indices(draw, rows: int, shape: tuple[int, ...], params: tuple[Node, ...]) -> Node:
    """int32 indices of ``shape`` into ``rows`` rows: constants with duplicates, both ends
    and values past them, which clamp; or computed from a parameter's values (exactly, so
    that every evaluation picks the same rows), which the kernel reads as data."""
    count = int(np.prod(shape))
    sources = [p for p in params if p.aval.size >= count]
    if sources and draw(st.booleans()):
        source = sources[draw(st.integers(0, len(sources) - 1))]
        flat = make("reshape", (source,), new_sizes=(source.aval.size,))
        cut = make("slice", (flat,), start_indices=(0,), limit_indices=(count,), strides=(1,))
        shaped = make("reshape", (cut,), new_sizes=shape)
        return make("convert", (make("mul", (shaped, splat(float(rows), shaped.aval))),), dtype=int32)
    edges = [0, rows - 1, rows, -1, rows + 3, 0, rows - 1]
    values = [draw(st.sampled_from(edges + list(range(rows)))) for _ in range(count)]
    literal = Literal(np.array(values, np.int32).reshape(shape), int32)
    return Node.make(PRIMITIVES["constant"], (), {"value": literal}, Aval(shape, int32))


def _tiles_by_2x2(node: Node) -> bool:
    """An NHWC image that 2x2 windows fit (a reshape can make a 4-d shape of ones)."""
    return len(node.aval.shape) == 4 and min(node.aval.shape[1:3]) >= 2


def random_args(graph: Graph, seed: int = 0) -> list[np.ndarray]:
    """Arguments for ``graph``'s parameters: floats in [-2, 2), small integers, coin flips."""
    rng = np.random.default_rng(seed)
    args = []
    for p in graph.params:
        kind = p.aval.dtype.kind
        if kind == "b":
            args.append(rng.random(p.aval.shape) < 0.5)
        elif kind == "i":
            args.append(rng.integers(-5, 5, p.aval.shape).astype(p.aval.dtype.numpy))
        else:
            args.append(storage_array(rng.uniform(-2, 2, p.aval.shape), p.aval.dtype))
    return args


def _scan_over(x: Node, reverse: bool) -> Node:
    """A loop along ``x``'s leading axis, its carry starting at the sum of the steps: a
    nonlinear running carry, and the steps' products with the carry stacked."""
    step = Aval(x.aval.shape[1:], x.aval.dtype)
    carry, item = parameter(0, step), parameter(1, step)
    new = make("tanh", (make("add", (make("mul", (carry, splat(0.5, step))), item)),))
    body = Graph((carry, item), (new, make("mul", (carry, item))))
    init = make("reduce_sum", (x,), axes=(0,))
    return make("scan", (init, x), body=body, length=x.aval.shape[0], reverse=reverse, carries=1, xs=1)


@st.composite
def graphs(draw) -> Graph:
    dtype = draw(st.sampled_from([float32, float64, bfloat16]))
    count = draw(st.integers(1, 3))
    params = tuple(parameter(i, Aval(draw(st.sampled_from(SHAPES)), dtype)) for i in range(count))
    nodes: list[Node] = list(params)

    def pick(predicate=lambda n: True) -> Node | None:
        found = [n for n in nodes if n.aval.dtype == dtype and predicate(n)]
        return found[draw(st.integers(0, len(found) - 1))] if found else None

    for _ in range(draw(st.integers(1, 10))):
        kind = draw(st.sampled_from(KINDS))
        x = pick()
        node = None
        shape = x.aval.shape
        if kind == "unary":
            node = make(draw(st.sampled_from(UNARY)), (x,))
        elif kind == "binary":
            y = pick(lambda n, s=shape: n.aval.shape == s)
            node = make(draw(st.sampled_from(BINARY)), (x, y))
        elif kind == "splat":
            constant = splat(draw(st.sampled_from([0.0, 1.0, 2.5, -1.0])), x.aval)
            node = make(draw(st.sampled_from(["add", "mul", "sub", "div"])), (x, constant))
        elif kind == "reduce" and shape:
            axes = tuple(sorted(draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))))
            node = make(draw(st.sampled_from(["reduce_sum", "reduce_max"])), (x,), axes=axes)
        elif kind == "broadcast":
            node = make(
                "broadcast_in_dim", (x,), shape=(2, *shape), broadcast_dimensions=tuple(range(1, len(shape) + 1))
            )
        elif kind == "reshape":
            node = make("reshape", (x,), new_sizes=tuple(reversed(shape)) if len(shape) > 1 else (x.aval.size,))
        elif kind == "transpose":
            perm = draw(st.permutations(range(len(shape))))
            node = make("transpose", (x,), permutation=tuple(perm))
        elif kind == "rev" and shape:
            axes = draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))
            node = make("rev", (x,), dimensions=tuple(sorted(axes)))
        elif kind == "slice" and shape:
            limits = tuple(max(1, s // 2 + 1) for s in shape)
            node = make("slice", (x,), start_indices=(0,) * len(shape), limit_indices=limits, strides=(1,) * len(shape))
        elif kind == "pad":
            n = len(shape)
            node = make("pad", (x,), low=(1,) * n, high=(0,) * n, interior=(draw(st.integers(0, 1)),) * n, value=0.5)
        elif kind == "concatenate" and shape:
            node = make("concatenate", (x, x), dimension=0)
        elif kind == "select":
            y = pick(lambda n, s=shape: n.aval.shape == s)
            predicate = make(draw(st.sampled_from(COMPARE)), (x, y))
            node = make("select", (predicate, y, x))
        elif kind == "convert":
            other = float64 if dtype != float64 else float32
            node = make("convert", (make("convert", (x,), dtype=other),), dtype=dtype)
        elif kind == "dot" and len(shape) == 2:
            axes = draw(st.sampled_from([(0,), (1,), (0, 1)]))  # (0, 1): a full contraction, to a scalar
            node = make("dot_general", (x, x), lhs_contracting=axes, rhs_contracting=axes, lhs_batch=(), rhs_batch=())
            if len(axes) == 1 and dtype.is_float and draw(st.booleans()):
                # x^T tanh(x) (not symmetric), read only transposed: the operands swap
                y = make("tanh", (x,))
                contract = {"lhs_contracting": axes, "rhs_contracting": axes, "lhs_batch": (), "rhs_batch": ()}
                node = make("transpose", (make("dot_general", (x, y), **contract),), permutation=(1, 0))
            if len(axes) == 2:  # the scalar spread over x and summed by rows (tensordot(u, v, 2) + bias)
                spread = make("broadcast_in_dim", (node,), shape=shape, broadcast_dimensions=())
                rows = x if x.aval.dtype == node.aval.dtype else make("convert", (x,), dtype=node.aval.dtype)
                node = make("reduce_sum", (make("mul", (spread, rows)),), axes=(1,))
        elif kind == "rounded_dot" and len(shape) == 2 and dtype == float32:
            # what autocast records: a float32 product of operands rounded to bfloat16, which
            # the CPU computes from the bfloat16 values (vdpbf16ps where it has the instruction)
            rounded = make("convert", (make("convert", (x,), dtype=bfloat16),), dtype=float32)
            axis = draw(st.integers(0, 1))
            contract = {"lhs_contracting": (axis,), "rhs_contracting": (axis,), "lhs_batch": (), "rhs_batch": ()}
            node = make("dot_general", (rounded, rounded), **contract)
        elif kind == "rounded_conv" and len(shape) == 4 and dtype == float32 and min(shape[1:3]) >= 2:
            # what autocast records for a convolution with a whole vector of output channels
            # (16: each its own filter, cut from the image) and for its filter gradient; the
            # CPU computes both from the bfloat16 values (vdpbf16ps where it has the instruction)
            def rounded(n: Node) -> Node:
                return make("convert", (make("convert", (n,), dtype=bfloat16),), dtype=float32)

            c, filters = shape[3], (2, 2, shape[3], 16)
            cut = make("slice", (x,), start_indices=(0,) * 4, limit_indices=(1, 2, 2, c), strides=(1,) * 4)
            taps = make("reshape", (cut,), new_sizes=(2, 2, c))
            spread = make("broadcast_in_dim", (taps,), shape=filters, broadcast_dimensions=(0, 1, 2))
            index = make("convert", (make("iota", (), shape=filters, dimension=3, dtype=int32),), dtype=float32)
            w = make("add", (spread, index))
            windows = {
                "strides": draw(st.sampled_from([(1, 1), (2, 1)])),
                "padding": draw(st.sampled_from([((0, 0), (0, 0)), ((1, 0), (0, 1))])),
                "dilation": (1, 1),
            }
            node = make("conv", (rounded(x), rounded(w)), **windows)
            if draw(st.booleans()):
                node = make("conv_grad_filter", (rounded(x), rounded(node)), filter_hw=(2, 2), **windows)
        elif kind == "dots_meet" and len(shape) == 2:
            # two contractions whose epilogues reach the same elementwise op: only one may take it
            y = pick(lambda n, s=shape: n.aval.shape == s)
            contract = {"lhs_contracting": (0,), "rhs_contracting": (0,), "lhs_batch": (), "rhs_batch": ()}
            first = make("dot_general", (x, y), **contract)
            node = make(draw(st.sampled_from(BINARY)), (first, make("dot_general", (y, x), **contract)))
        elif kind == "split_heads_dot" and len(shape) == 2 and shape[1] >= 3:
            # attention's heads: two column ranges of a computed value, each split into two
            # heads by a reshape and a transpose, multiplied head by head; the CPU's tiled
            # products (9 rows of (9, 10): 9 columns) read them in place (operand_views)
            rows, half = shape[0], (shape[1] - 1) // 2
            computed = make("tanh", (x,))

            def heads(start: int, z: Node = computed, rows: int = rows, half: int = half) -> Node:
                cut = make(
                    "slice", (z,), start_indices=(0, start), limit_indices=(rows, start + 2 * half), strides=(1, 1)
                )
                return make("transpose", (make("reshape", (cut,), new_sizes=(rows, 2, half)),), permutation=(1, 0, 2))

            batched = {"lhs_batch": (0,), "rhs_batch": (0,), "lhs_contracting": (2,), "rhs_contracting": (2,)}
            node = make("dot_general", (heads(1), heads(0)), **batched)
        elif kind == "convs_meet" and len(shape) == 4 and min(shape[1:3]) >= 3:
            # the same for convolutions, with a filter cut from the image (HWIO: 2x2, C in, 1 out)
            cut = make("slice", (x,), start_indices=(0,) * 4, limit_indices=(1, 2, 2, shape[3]), strides=(1,) * 4)
            w = make("transpose", (cut,), permutation=(1, 2, 3, 0))
            windows = {
                "strides": draw(st.sampled_from([(1, 1), (2, 1)])),
                "padding": draw(st.sampled_from([((0, 0), (0, 0)), ((1, 0), (0, 1))])),
                "dilation": draw(st.sampled_from([(1, 1), (1, 2)])),
            }
            first = make("conv", (x, w), **windows)
            second = make("conv", (make(draw(st.sampled_from(UNARY)), (x,)), w), **windows)
            node = make(draw(st.sampled_from(BINARY)), (first, second))
        elif kind == "winograd_conv" and len(shape) == 4 and min(shape[1:3]) >= 3:
            # a 3x3 convolution of 32 channels, SAME-padded (Winograd's kernel where the
            # outputs tile by 2x2), or its input or filter gradient; the image made from x
            n, h, w, _ = shape
            wide, filters = Aval((n, h, w, 32), dtype), Aval((3, 3, 32, 32), dtype)

            # values of a few units: an exp of the result stays finite; image and filter of
            # one sign, so that the sums do not cancel (a result a hundredth of its terms'
            # magnitudes carries their float32 rounding a hundredfold, which the reference's
            # summation, in another order, need not share)
            summed = make("abs", (make("reduce_sum", (x,), axes=(3,)),))
            spread = make("broadcast_in_dim", (summed,), shape=wide.shape, broadcast_dimensions=(0, 1, 2))
            channel = make("iota", (), shape=wide.shape, dimension=3, dtype=int32)
            image = make("add", (spread, make("mul", (make("convert", (channel,), dtype=dtype), splat(1 / 32, wide)))))
            # the filter from iota (the image may hold infinities and NaNs, the filter not)
            count = filters.size
            index = make("convert", (make("iota", (), shape=(count,), dimension=0, dtype=int32),), dtype=dtype)
            values = make(
                "add",
                (
                    make("tanh", (make("mul", (index, splat(0.37, Aval((count,), dtype)))),)),
                    splat(1.5, Aval((count,), dtype)),
                ),
            )
            weights = make("mul", (make("reshape", (values,), new_sizes=filters.shape), splat(1 / 288, filters)))
            windows = {"strides": (1, 1), "padding": ((1, 1), (1, 1)), "dilation": (1, 1)}
            which = draw(st.sampled_from(("conv", "conv_grad_input", "conv_grad_filter")))
            if which == "conv":
                node = make("conv", (image, weights), **windows)
            elif which == "conv_grad_input":
                node = make("conv_grad_input", (image, weights), input_hw=(h, w), **windows)
            else:  # the cotangent from the image too: a sine, so that its signs vary
                node = make("conv_grad_filter", (image, make("sin", (image,))), filter_hw=(3, 3), **windows)
            node = make(draw(st.sampled_from(UNARY)), (node,))  # an epilogue
        elif kind == "strided_grad_input" and len(shape) == 4:
            # the input gradient of a strided convolution (computed phase by phase), with x
            # as its cotangent, a filter from iota, and an epilogue
            strides_and_filters = [
                ((2, 2), (3, 3)),
                ((2, 1), (2, 3)),
                ((3, 2), (3, 2)),
                ((2, 2), (1, 1)),
                ((3, 2), (2, 1)),
            ]
            (sh, sw), (kh, kw) = draw(st.sampled_from(strides_and_filters))
            (top, bottom), (left, right) = padding = draw(st.sampled_from([((0, 0), (0, 0)), ((1, 1), (1, 0))]))
            rows = (shape[1] - 1) * sh + kh - top - bottom + draw(st.integers(0, sh - 1))
            cols = (shape[2] - 1) * sw + kw - left - right + draw(st.integers(0, sw - 1))
            filters = Aval((kh, kw, 8, shape[3]), dtype)
            index = make("convert", (make("iota", (), shape=filters.shape, dimension=3, dtype=int32),), dtype=dtype)
            weights = make("tanh", (make("add", (index, splat(-1.5, filters))),))
            windows = {"strides": (sh, sw), "padding": padding, "dilation": (1, 1)}
            node = make("conv_grad_input", (x, weights), input_hw=(rows, cols), **windows)
            node = make(draw(st.sampled_from(UNARY)), (node,))
        elif kind == "pool_gradient" and (image := pick(_tiles_by_2x2)) is not None:
            # max-pool and its gradient over tiling windows, with an elementwise reader that
            # may join its kernel (as the relu mask does in a CNN)
            tiles = {"window_dimensions": (1, 2, 2, 1), "window_strides": (1, 2, 2, 1), "padding": ((0, 0),) * 4}
            pooled = make("reduce_window", (image,), kind="max", **tiles)
            scattered = make("select_and_scatter_add", (make("exp", (pooled,)), image), **tiles)
            mask = make(draw(st.sampled_from(UNARY)), (image,))
            node = make(draw(st.sampled_from(BINARY)), (scattered, mask))
            if draw(st.booleans()):  # its bias gradient, which joins the kernel too, read with it
                summed = make("reduce_sum", (node,), axes=(0, 1, 2))
                spread = make("broadcast_in_dim", (summed,), shape=node.shape, broadcast_dimensions=(3,))
                node = make("add", (node, spread))
        elif kind == "window" and len(shape) >= 2 and min(shape[-2:]) >= 2:
            window = (1,) * (len(shape) - 2) + (2, 2)
            node = make(
                "reduce_window",
                (x,),
                kind=draw(st.sampled_from(["sum", "max"])),
                window_dimensions=window,
                window_strides=(1,) * len(shape),
                padding=((0, 0),) * (len(shape) - 1) + ((1, 0),),
            )
        elif kind == "iota" and shape:
            index = make("iota", (), shape=shape, dimension=0, dtype=int32)
            node = make("add", (x, make("convert", (index,), dtype=dtype)))
        elif kind == "gather" and shape:
            # rows of x by an index tensor (an embedding lookup), fused with what reads them
            batch = draw(st.sampled_from([(3,), (2, 2), (5,)]))
            rows = shape[0]
            indices = row_indices(draw, rows, (*batch, 1), params)
            node = make(
                "gather",
                (x, indices),
                offset_dims=tuple(range(len(batch), len(batch) + len(shape) - 1)),
                collapsed_slice_dims=(0,),
                start_index_map=(0,),
                slice_sizes=(1, *shape[1:]),
            )
        elif kind == "scatter" and shape:
            # x's rows added into the rows of a table the indices pick: duplicates add up
            rows = draw(st.sampled_from([1, 3, 4]))
            indices = row_indices(draw, rows, (shape[0], 1), params)
            node = make(
                "scatter_add",
                (x, indices),
                shape=(rows, *shape[1:]),
                update_window_dims=tuple(range(1, len(shape))),
                inserted_window_dims=(0,),
                scatter_dims_to_operand_dims=(0,),
            )
        elif kind == "scan" and shape:
            node = make("get_element", (_scan_over(x, draw(st.booleans())),), index=draw(st.integers(0, 1)))
        if node is not None:
            nodes.append(node)
    computed = [n for n in nodes if n.op.name != "parameter" and n.aval.dtype != bool_]
    outputs = tuple(itertools.islice(reversed(computed), draw(st.integers(1, 3)))) or params[:1]
    return Graph(params, outputs)


def assert_matches_reference(graph: Graph, run, tolerance: dict[str, float]) -> None:
    """``run(args)`` (a backend's executable of ``graph``) agrees with the reference
    interpreter on ``random_args(graph, seed=2)``, within ``tolerance[dtype]`` relative to
    the result's scale; a failure prints the graph. A float32 graph's result may also be
    as far from the reference's as twice the reference's own distance from the same graph
    in float64: rounding the graph amplifies (an exp of a pow of a dot) moves any two
    float32 evaluations apart by that much. A bfloat16 graph (which computes in float32 and
    rounds after every op) is compared by its values, its truth the same graph in float32."""
    from braze.backends.reference.interpreter import evaluate
    from braze.ir.text import parse_graph, print_graph

    args = random_args(graph, seed=2)
    dtype = graph.params[0].aval.dtype
    rtol = tolerance[dtype.name]
    text = print_graph(graph)
    with np.errstate(all="ignore"):
        expected = evaluate(graph, args)
        if dtype == float32:
            wide = [a.astype(np.float64) if a.dtype == np.float32 else a for a in args]
            exact = evaluate(parse_graph(text.replace("f32", "f64")), wide)
        elif dtype == bfloat16:
            wide = [from_bfloat16(a) if a.dtype == np.uint16 else a for a in args]
            exact = evaluate(parse_graph(text.replace("bf16", "f32")), wide)
        else:
            exact = expected
    results = run(args)
    if dtype == bfloat16:
        results, expected = ([from_bfloat16(a) if a.dtype == np.uint16 else a for a in r] for r in (results, expected))
    for got, want, truth in zip(results, expected, exact, strict=True):
        scale = float(np.max(np.abs(want[np.isfinite(want)]), initial=1.0))
        with np.errstate(all="ignore"):
            amplified = 2 * np.abs(want.astype(np.float64) - truth) if want.dtype.kind == "f" else 0.0
        atol = rtol * scale + np.nan_to_num(amplified, nan=0.0, posinf=np.inf)
        assert got.shape == want.shape, f"{got.shape} instead of {want.shape}\n{text}"
        close = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        if not close.all():  # the message: the elements outside even the amplified allowance
            np.testing.assert_allclose(got[~close], want[~close], rtol=rtol, atol=rtol * scale, err_msg=text)
