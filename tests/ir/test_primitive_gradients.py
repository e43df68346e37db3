"""Every primitive has a VJP and a JVP rule (or is declared non-differentiable), and both
agree with float64 finite differences, at the first order and the second, forward and
reverse, including the rules only reached by second-order use (the conv transposes,
select_and_gather_add)."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import Runner, assert_gradients_match, check_grads

from braze.ir import PRIMITIVES
from braze.ir.primitive import Literal

# Primitives whose outputs never carry a gradient: integer/bool results, sources, and the
# compiler-only fusion primitives (which never appear in a user's trace).
NON_DIFFERENTIABLE = {
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "iota",
    "constant",
    "parameter",
    "rng_uniform",
    "fusion",
    "nextafter",
    "argsort",
    "and",
    "or",
    "xor",
    "not",
    "shift_left",
    "shift_right",
}

# Loops yield a tuple of results (read by get_element, whose VJP hands the loop one cotangent
# per result): tests/test_lax.py checks their rules against finite differences through braze.lax.
TUPLE_RESULTS = {"scan", "while_loop", "get_element"}

CONV = {"strides": (2, 1), "padding": ((1, 2), (0, 1)), "dilation": (1, 2)}
WINDOW = {
    "window_dimensions": (1, 3, 2, 1),
    "window_strides": (1, 2, 1, 1),
    "padding": ((0, 0), (1, 0), (0, 1), (0, 0)),
}


def r(*shape, low=-2.0, high=2.0, seed=0):
    return np.random.default_rng(seed + sum(shape)).uniform(low, high, shape)


# Index vectors (starts in operand axes 2 and 0) with duplicates and values past both ends,
# which clamp: windows of 4 x 2 of a (5, 4, 3) operand, placed at result axes 1 and 3.
STARTS = np.array([[[1, 0], [1, 0], [-3, 9]], [[2, 4], [0, 4], [1, 2]]])
GATHER = {"offset_dims": (1, 3), "collapsed_slice_dims": (0,), "start_index_map": (2, 0), "slice_sizes": (1, 4, 2)}
SCATTER = {
    "shape": (5, 4, 3),
    "update_window_dims": (1, 3),
    "inserted_window_dims": (0,),
    "scatter_dims_to_operand_dims": (2, 0),
}

# (primitive name, attrs, input arrays, indices of inputs to differentiate)
PRIMITIVE_CASES = [
    ("neg", {}, [r(3, 2)], [0]),
    ("exp", {}, [r(3, 2)], [0]),
    ("log", {}, [r(3, 2, low=0.5)], [0]),
    ("sqrt", {}, [r(3, 2, low=0.5)], [0]),
    ("rsqrt", {}, [r(3, 2, low=0.5)], [0]),
    ("tanh", {}, [r(3, 2)], [0]),
    ("logistic", {}, [r(3, 2)], [0]),
    ("erf", {}, [r(3, 4, low=-3.0, high=3.0)], [0]),
    ("abs", {}, [r(3, 2, low=0.3)], [0]),
    ("sign", {}, [r(3, 2, low=0.3)], [0]),
    ("relu", {}, [r(3, 4)], [0]),
    ("sin", {}, [r(3, 2)], [0]),
    ("cos", {}, [r(3, 2)], [0]),
    ("tan", {}, [r(3, 2, low=-1.2, high=1.2)], [0]),
    ("asin", {}, [r(3, 2, low=-0.8, high=0.8)], [0]),
    ("acos", {}, [r(3, 2, low=-0.8, high=0.8)], [0]),
    ("atan", {}, [r(3, 2)], [0]),
    ("sinh", {}, [r(3, 2)], [0]),
    ("cosh", {}, [r(3, 2)], [0]),
    ("asinh", {}, [r(3, 2)], [0]),
    ("acosh", {}, [r(3, 2, low=1.2, high=3.0)], [0]),
    ("atanh", {}, [r(3, 2, low=-0.8, high=0.8)], [0]),
    ("log1p", {}, [r(3, 2, low=-0.5)], [0]),
    ("expm1", {}, [r(3, 2)], [0]),
    # Piecewise constant: a zero gradient away from the steps (here, between 0.1 and 0.4).
    ("floor", {}, [r(3, 2, low=0.1, high=0.4)], [0]),
    ("ceil", {}, [r(3, 2, low=0.1, high=0.4)], [0]),
    ("round", {}, [r(3, 2, low=0.1, high=0.4)], [0]),
    ("trunc", {}, [r(3, 2, low=0.1, high=0.4)], [0]),
    ("atan2", {}, [r(4), r(4, low=0.5, seed=1)], [0, 1]),
    ("copysign", {}, [r(4, low=0.3), r(4, low=0.3, seed=1)], [0, 1]),
    ("hypot", {}, [r(4, low=0.3), r(4, seed=1)], [0, 1]),
    ("rem", {}, [r(4, low=1.2, high=1.8), r(4, low=1.0, high=1.1, seed=1)], [0, 1]),
    ("add", {}, [r(4), r(4, seed=1)], [0, 1]),
    ("sub", {}, [r(4), r(4, seed=1)], [0, 1]),
    ("mul", {}, [r(4), r(4, seed=1)], [0, 1]),
    ("div", {}, [r(4), r(4, low=0.5, seed=1)], [0, 1]),
    ("pow", {}, [r(4, low=0.5), r(4, seed=1)], [0, 1]),
    ("max", {}, [r(6), r(6, seed=1)], [0, 1]),
    ("min", {}, [r(6), r(6, seed=1)], [0, 1]),
    ("select", {}, [r(5) > 0, r(5), r(5, seed=1)], [1, 2]),
    ("convert", {"dtype": "float64"}, [r(5).astype(np.float32)], [0]),
    ("reduce_sum", {"axes": (0, 2)}, [r(2, 3, 4)], [0]),
    ("reduce_max", {"axes": (1,)}, [r(2, 5, 3)], [0]),
    ("reduce_prod", {"axes": (0, 2)}, [r(2, 3, 4, low=0.5)], [0]),
    ("cumsum", {"dimension": 1}, [r(3, 4)], [0]),
    ("cumprod", {"dimension": 0}, [r(4, 3)], [0]),
    ("sort", {"dimension": 1, "descending": False}, [r(3, 5)], [0]),
    ("sort", {"dimension": 0, "descending": True}, [r(4, 3)], [0]),
    ("broadcast_in_dim", {"shape": (2, 3, 4), "broadcast_dimensions": (0, 2)}, [r(2, 1)], [0]),
    ("reshape", {"new_sizes": (3, 4)}, [r(2, 6)], [0]),
    ("transpose", {"permutation": (1, 2, 0)}, [r(2, 3, 4)], [0]),
    ("rev", {"dimensions": (0, 2)}, [r(2, 3, 4)], [0]),
    ("slice", {"start_indices": (1, 0), "limit_indices": (5, 5), "strides": (2, 3)}, [r(6, 5)], [0]),
    ("pad", {"low": (1, 0), "high": (0, 2), "interior": (1, 2), "value": 0.5}, [r(3, 2)], [0]),
    ("concatenate", {"dimension": 1}, [r(2, 2), r(2, 3, seed=1), r(2, 1, seed=2)], [0, 1, 2]),
    (
        "dot_general",
        {"lhs_contracting": (2, 0), "rhs_contracting": (0, 3), "lhs_batch": (1,), "rhs_batch": (2,)},
        [r(3, 2, 4, 5), r(4, 6, 2, 3, seed=1)],
        [0, 1],
    ),
    # A dense layer's and a batched product's kernel gradients: the rhs cotangent is x^T g
    # with the operands swapped, in the kernel's layout without a transpose.
    (
        "dot_general",
        {"lhs_contracting": (1,), "rhs_contracting": (0,), "lhs_batch": (), "rhs_batch": ()},
        [r(5, 3), r(3, 4, seed=1)],
        [0, 1],
    ),
    (
        "dot_general",
        {"lhs_contracting": (2,), "rhs_contracting": (1,), "lhs_batch": (0,), "rhs_batch": (0,)},
        [r(2, 5, 3), r(2, 3, 4, seed=1)],
        [0, 1],
    ),
    ("conv", CONV, [r(2, 6, 7, 3), r(3, 2, 3, 2, seed=1)], [0, 1]),
    ("conv_grad_input", {"input_hw": (6, 7), **CONV}, [r(2, 4, 6, 2), r(3, 2, 3, 2, seed=1)], [0, 1]),
    ("conv_grad_filter", {"filter_hw": (3, 2), **CONV}, [r(2, 6, 7, 3), r(2, 4, 6, 2, seed=1)], [0, 1]),
    ("reduce_window", {"kind": "sum", **WINDOW}, [r(2, 5, 4, 2)], [0]),
    ("reduce_window", {"kind": "max", **WINDOW}, [r(2, 5, 4, 2)], [0]),
    ("select_and_scatter_add", WINDOW, [r(2, 2, 4, 2), r(2, 5, 4, 2, seed=1)], [0]),
    ("select_and_gather_add", WINDOW, [r(2, 5, 4, 2), r(2, 5, 4, 2, seed=1)], [0]),
    ("gather", GATHER, [r(5, 4, 3), STARTS], [0]),
    ("scatter_add", SCATTER, [r(2, 4, 3, 2), STARTS], [0]),
    # One replica here; tests/distributed checks the rules across two ranks.
    ("all_reduce", {"op": "sum"}, [r(3, 2)], [0]),
    ("all_reduce", {"op": "mean"}, [r(4)], [0]),
    ("all_reduce", {"op": "max"}, [r(2, 3)], [0]),
]


def test_every_primitive_has_a_gradient_rule_and_a_case():
    covered = {name for name, *_ in PRIMITIVE_CASES}
    for name, primitive in PRIMITIVES.items():
        if name in TUPLE_RESULTS:
            continue
        if name in NON_DIFFERENTIABLE:
            assert primitive.vjp is None, f"{name} is declared non-differentiable but has a VJP"
            assert primitive.jvp is None, f"{name} is declared non-differentiable but has a JVP"
        else:
            assert primitive.vjp is not None, f"primitive {name} lacks a VJP rule"
            assert name in covered, f"primitive {name} has no finite-difference case"


def test_every_differentiable_primitive_has_a_jvp_rule():
    missing = [name for name, p in PRIMITIVES.items() if p.vjp is not None and p.jvp is None]
    assert not missing, f"differentiable primitives without a JVP rule (forward mode fails on them): {missing}"


def _attrs(attrs: dict) -> dict:
    from braze.ir.dtypes import as_dtype

    return {k: as_dtype(v) if k == "dtype" else v for k, v in attrs.items()}


@pytest.mark.parametrize(
    "name,attrs,arrays,wrt", PRIMITIVE_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(PRIMITIVE_CASES)]
)
def test_primitive_vjp_matches_finite_differences(name, attrs, arrays, wrt):
    primitive = PRIMITIVES[name]
    attrs = _attrs(attrs)
    # A float32 input (convert's case) needs a step that float32 can represent.
    coarse = any(a.dtype == np.float32 for a in arrays)
    assert_gradients_match(
        lambda *ts: primitive.bind(*ts, **attrs),
        arrays,
        wrt,
        rtol=1e-3 if coarse else 1e-5,
        atol=1e-6,
        eps=1e-2 if coarse else 1e-6,
    )


@pytest.mark.parametrize("mode", ["eager", "lazy"])
@pytest.mark.parametrize(
    "name,attrs,arrays,wrt", PRIMITIVE_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(PRIMITIVE_CASES)]
)
def test_primitive_second_order_matches_finite_differences(name, attrs, arrays, wrt, mode, monkeypatch):
    monkeypatch.setenv("BRAZE_BACKEND", "reference")
    primitive = PRIMITIVES[name]
    attrs = _attrs(attrs)
    fn, fixed, operands = _fixing(primitive, attrs, arrays, wrt)
    coarse = any(a.dtype == np.float32 for a in arrays)
    check_grads(
        fn,
        fixed,
        operands,
        run=Runner(mode),
        rtol=1e-3 if coarse else 1e-5,
        eps=1e-2 if coarse else 1e-6,
    )


def _fixing(primitive, attrs, arrays, wrt):
    """The primitive as a function of the operands in ``wrt``, the others fixed (a select's
    predicate, the operand whose maxima a window scatter picks)."""
    others = [i for i in range(len(arrays)) if i not in wrt]

    def of_operands(fixed, operands):
        tensors = [None] * len(arrays)
        for i, t in zip(others, fixed, strict=True):
            tensors[i] = t
        for i, t in zip(wrt, operands, strict=True):
            tensors[i] = t
        return (primitive.bind(*tensors, **attrs),)

    return of_operands, [arrays[i] for i in others], [arrays[i] for i in wrt]


def test_constant_literal_hashes_by_value():
    assert Literal([1.0, 2.0]) == Literal(np.array([1.0, 2.0]))
    assert hash(Literal(3, None)) == hash(Literal(np.int64(3)))
    assert Literal([1.0]) != Literal([2.0])


def _cumprod_derivatives_numpy(x: np.ndarray, g: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """cumprod's VJP at cotangent ``g`` and JVP at tangent ``t``, in float64 by their
    recurrences (no division): S_i = g_i + x_(i+1) S_(i+1), T_j = x_j T_(j-1) + e_j t_j,
    with e the exclusive cumulative product."""
    x, g, t = (a.astype(np.float64) for a in (x, g, t))
    exclusive = np.concatenate([[1.0], np.cumprod(x)[:-1]])
    sums, tangent = np.zeros_like(x), np.zeros_like(x)
    sums[-1] = g[-1]
    for i in range(len(x) - 2, -1, -1):
        sums[i] = g[i] + x[i + 1] * sums[i + 1]
    tangent[0] = exclusive[0] * t[0]
    for j in range(1, len(x)):
        tangent[j] = x[j] * tangent[j - 1] + exclusive[j] * t[j]
    return exclusive * sums, tangent


def test_cumprod_derivatives_of_a_long_line_with_zeros():
    # The Jacobian of a line of n is n x n: these rules never form it (a line of 2,366,
    # differentiated twice, asked for 49 GiB), and stay exact where the line holds zeros.
    import braze

    rng = np.random.default_rng(11)
    n = 3000
    x = rng.uniform(0.9, 1.1, n).astype(np.float32)
    x[[700, 2100]] = 0.0
    g, t = (rng.uniform(-1, 1, n).astype(np.float32) for _ in range(2))
    want_vjp, want_jvp = _cumprod_derivatives_numpy(x, g, t)
    _, pullback = braze.vjp(lambda a: braze.cumprod(a), braze.tensor(x))
    (got_vjp,) = pullback(braze.tensor(g))
    _, got_jvp = braze.jvp(lambda a: braze.cumprod(a), (braze.tensor(x),), (braze.tensor(t),))
    # Every term is a product of at most n factors near 1, each rounded in float32: the
    # doubling scan sums them in another order than the recurrence, each of its log2(n)
    # levels adding a rounding of the partial sums.
    for got, want in ((got_vjp, want_vjp), (got_jvp, want_jvp)):
        scale = np.abs(want).max()
        np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=64 * 2.0**-23 * np.sqrt(n) * scale)
        assert np.all(got.numpy()[want == 0.0] == 0.0)


def test_sort_derivatives_of_a_long_line_move_values_exactly():
    # A sort's derivatives permute: each cotangent goes back to the position its value came
    # from (a scatter), each tangent to the position its value went to (a gather), never
    # through an n x n matrix of who went where (a line of 20,000 took 2 GB).
    import braze

    rng = np.random.default_rng(12)
    n = 20_000
    x = rng.standard_normal((2, n)).astype(np.float32)
    x[:, ::7] = 0.5  # ties, kept in their order
    g, t = (rng.standard_normal((2, n)).astype(np.float32) for _ in range(2))
    order = np.argsort(-x, axis=1, kind="stable")  # descending, ties in order
    want_vjp = np.zeros_like(g)
    np.put_along_axis(want_vjp, order, g, axis=1)
    want_jvp = np.take_along_axis(t, order, axis=1)

    def sort(a):
        return braze.sort(a, axis=1, descending=True)

    _, pullback = braze.vjp(sort, braze.tensor(x))
    (got_vjp,) = pullback(braze.tensor(g))
    _, got_jvp = braze.jvp(sort, (braze.tensor(x),), (braze.tensor(t),))
    np.testing.assert_array_equal(got_vjp.numpy(), want_vjp)
    np.testing.assert_array_equal(got_jvp.numpy(), want_jvp)
