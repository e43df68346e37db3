"""TensorFlow's names beyond the basics under ``import braze as tf``: ``tf.one_hot``,
``tf.math``, ``tf.tile``, ``tf.split``, ``tf.gather``, ``tf.repeat``, ``tf.unstack``,
``tf.range`` and ``tf.nn.embedding_lookup``, against NumPy, with gradients against float64
finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_gradients_match

import braze as tf
from braze.nn import tf_nn

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4)).astype(np.float32)
POSITIVE = RNG.uniform(0.5, 2.0, (3, 4)).astype(np.float32)
Y = RNG.standard_normal((3, 4)).astype(np.float32)


def close(got, expected, rtol=1e-5, atol=1e-6):
    assert type(got) is tf.Tensor  # braze's own tensors, not the Array API's
    np.testing.assert_allclose(got.numpy(), expected, rtol=rtol, atol=atol)


# tf.one_hot ------------------------------------------------------------------------------


def test_one_hot_takes_tensorflows_arguments():
    labels = np.array([[0, 2], [3, -1]], np.int32)  # 3 and -1 are outside the depth
    eye = np.eye(3, dtype=np.float32)
    expected = np.stack([np.stack([eye[i] if 0 <= i < 3 else np.zeros(3, np.float32) for i in row]) for row in labels])
    close(tf.one_hot(labels, depth=3), expected)
    on_off = tf.one_hot(labels, 3, on_value=5, off_value=-1)
    assert on_off.dtype == tf.int32
    np.testing.assert_array_equal(on_off.numpy(), np.where(expected == 1, 5, -1))
    for axis in (0, 1):
        moved = tf.one_hot(labels, 3, axis=axis, dtype=tf.float64)
        assert moved.dtype == tf.float64
        np.testing.assert_array_equal(moved.numpy(), np.moveaxis(expected, -1, axis))
    assert tf.one_hot([1], 2, dtype="bool").numpy().tolist() == [[False, True]]


def test_one_hot_still_reads_braze_calls():
    labels = np.array([1, 0], np.int32)
    np.testing.assert_array_equal(tf.one_hot(labels, 2, dtype=tf.float64).numpy(), [[0.0, 1.0], [1.0, 0.0]])
    assert tf.one_hot(labels, 2).dtype == tf.float32


# tf.math: elementwise ----------------------------------------------------------------------

UNARY = [
    ("abs", np.abs, X),
    ("exp", np.exp, X),
    ("expm1", np.expm1, X),
    ("log", np.log, POSITIVE),
    ("log1p", np.log1p, POSITIVE),
    ("sqrt", np.sqrt, POSITIVE),
    ("rsqrt", lambda v: 1 / np.sqrt(v), POSITIVE),
    ("square", np.square, X),
    ("negative", np.negative, X),
    ("reciprocal", np.reciprocal, POSITIVE),
    ("sigmoid", lambda v: 1 / (1 + np.exp(-v)), X),
    ("tanh", np.tanh, X),
    ("sin", np.sin, X),
    ("cos", np.cos, X),
    ("tan", np.tan, X),
    ("softplus", lambda v: np.logaddexp(0, v), X * 30),
    ("log_sigmoid", lambda v: -np.logaddexp(0, -v), X * 30),
    ("floor", np.floor, X * 3),
    ("ceil", np.ceil, X * 3),
    ("round", np.round, np.array([0.5, 1.5, 2.5, -0.5, -1.7], np.float32)),
    ("sign", np.sign, X),
]
SMOOTH = ["abs", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "square", "negative", "reciprocal"]
SMOOTH += ["sigmoid", "tanh", "sin", "cos", "tan", "softplus", "log_sigmoid"]


@pytest.mark.parametrize(("name", "reference", "x"), UNARY, ids=[u[0] for u in UNARY])
def test_unary_math_matches_numpy(name, reference, x):
    close(getattr(tf.math, name)(x, name="op"), reference(x.astype(np.float64)))


@pytest.mark.parametrize("name", SMOOTH)
def test_unary_math_gradients(name):
    x = next(u[2] for u in UNARY if u[0] == name).astype(np.float64)
    assert_gradients_match(getattr(tf.math, name), [x], [0])


def test_softplus_is_stable_with_the_slope_one_half_at_zero():
    values = np.array([-80.0, -20.0, 0.0, 20.0, 100.0], np.float32)  # exp(-80) is a normal float32
    close(tf.math.softplus(values), np.logaddexp(0, values.astype(np.float64)), rtol=1e-6, atol=0)
    slope = tf.grad(lambda v: tf.math.softplus(v).sum())(tf.tensor(np.zeros(1)))
    np.testing.assert_allclose(slope.numpy(), [0.5])


BINARY = [
    ("add", np.add),
    ("subtract", np.subtract),
    ("multiply", np.multiply),
    ("divide", np.divide),
    ("truediv", np.divide),
    ("maximum", np.maximum),
    ("minimum", np.minimum),
    ("squared_difference", lambda a, b: (a - b) ** 2),
    ("pow", np.power),
    ("floordiv", np.floor_divide),
    ("floormod", np.mod),
    ("atan2", np.arctan2),
]


@pytest.mark.parametrize(("name", "reference"), BINARY, ids=[b[0] for b in BINARY])
def test_binary_math_matches_numpy(name, reference):
    base = POSITIVE if name == "pow" else X
    close(getattr(tf.math, name)(base, Y), reference(base.astype(np.float64), Y.astype(np.float64)), atol=1e-5)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "truediv", "squared_difference", "pow"])
def test_binary_math_gradients(name):
    base = POSITIVE if name == "pow" else X
    assert_gradients_match(getattr(tf.math, name), [base.astype(np.float64), Y.astype(np.float64) + 3.0], [0, 1])


def test_integer_division_is_float64_as_in_tensorflow():
    out = tf.math.truediv(np.array([7, -7], np.int32), 2)
    assert out.dtype == tf.float64
    np.testing.assert_array_equal(out.numpy(), [3.5, -3.5])


def test_divide_no_nan_gives_zero_and_a_finite_gradient_where_y_is_zero():
    x, y = np.array([1.0, 2.0, 3.0]), np.array([2.0, 0.0, -4.0])
    close(tf.math.divide_no_nan(x, y), [0.5, 0.0, -0.75])
    grads = tf.grad(lambda a, b: tf.math.divide_no_nan(a, b).sum(), argnums=(0, 1))(tf.tensor(x), tf.tensor(y))
    np.testing.assert_allclose([g.numpy()[1] for g in grads], [0.0, 0.0])  # no NaN from the unused quotient
    assert_gradients_match(tf.math.divide_no_nan, [x, y + 1.0], [0, 1])  # away from the jump at y = 0


def test_comparisons_and_logic():
    a, b = np.array([True, True, False, False]), np.array([True, False, True, False])
    np.testing.assert_array_equal(tf.math.logical_xor(a, b).numpy(), a ^ b)
    np.testing.assert_array_equal(tf.math.logical_and(a, b, name="and").numpy(), a & b)
    for name, reference in [("equal", np.equal), ("greater", np.greater), ("less_equal", np.less_equal)]:
        np.testing.assert_array_equal(getattr(tf.math, name)(X, Y).numpy(), reference(X, Y))
    special = np.array([1.0, np.nan, np.inf, -np.inf], np.float32)
    np.testing.assert_array_equal(tf.math.is_nan(special).numpy(), np.isnan(special))
    np.testing.assert_array_equal(tf.math.is_inf(special).numpy(), np.isinf(special))
    np.testing.assert_array_equal(tf.math.is_finite(special).numpy(), np.isfinite(special))


# tf.math: reductions, scans and the rest --------------------------------------------------

REDUCTIONS = [
    ("reduce_sum", np.sum),
    ("reduce_mean", np.mean),
    ("reduce_max", np.max),
    ("reduce_min", np.min),
    ("reduce_prod", np.prod),
    ("reduce_variance", np.var),
    ("reduce_std", np.std),
    ("reduce_logsumexp", lambda v, axis, keepdims: np.log(np.sum(np.exp(v), axis=axis, keepdims=keepdims))),
    ("reduce_euclidean_norm", lambda v, axis, keepdims: np.sqrt(np.sum(v * v, axis=axis, keepdims=keepdims))),
]


@pytest.mark.parametrize(("name", "reference"), REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
@pytest.mark.parametrize(("axis", "keepdims"), [(None, False), (1, False), (0, True), ((0, 1), True)])
def test_reductions_match_numpy(name, reference, axis, keepdims):
    got = getattr(tf.math, name)(X, axis=axis, keepdims=keepdims, name="r")
    close(got, reference(X.astype(np.float64), axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("name", [r[0] for r in REDUCTIONS if r[0] not in ("reduce_max", "reduce_min")])
def test_reduction_gradients(name):
    assert_gradients_match(lambda v: getattr(tf.math, name)(v, axis=1), [X.astype(np.float64)], [0])


def test_the_mean_of_integers_is_an_integer_rounded_toward_zero():
    values = np.array([[-1, -2], [1, 2], [7, 0]], np.int32)
    out = tf.reduce_mean(values, axis=1)
    assert out.dtype == tf.int32
    np.testing.assert_array_equal(out.numpy(), [-1, 1, 3])
    assert tf.math.reduce_mean(values).item() == 1  # 7 // 6


def test_any_and_all():
    mask = np.array([[True, False], [True, True], [False, False]])
    np.testing.assert_array_equal(tf.math.reduce_any(mask, axis=1).numpy(), mask.any(1))
    np.testing.assert_array_equal(tf.math.reduce_all(mask, axis=1, keepdims=True).numpy(), mask.all(1, keepdims=True))
    assert tf.math.reduce_all(np.zeros((0,), bool)).item() is True
    with pytest.raises(tf.DTypeError, match="bool"):
        tf.math.reduce_any(X)


def test_argmax_reduces_axis_zero_as_int64_by_default():
    ties = np.array([[1.0, 5.0], [5.0, 5.0], [0.0, 2.0]], np.float32)
    out = tf.math.argmax(ties)
    assert out.dtype == tf.int64
    np.testing.assert_array_equal(out.numpy(), np.argmax(ties, axis=0))
    np.testing.assert_array_equal(tf.math.argmin(ties, axis=1, output_type=tf.int32).numpy(), np.argmin(ties, 1))


def numpy_cumulative(op, x, axis, exclusive, reverse, identity):
    x = np.flip(x, axis) if reverse else x
    out = op(x, axis=axis)
    if exclusive:
        shape = list(x.shape)
        shape[axis] = 1
        out = np.concatenate([np.full(shape, identity), np.delete(out, -1, axis)], axis)
    return np.flip(out, axis) if reverse else out


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
def test_cumsum_and_cumprod_match_numpy(exclusive, reverse, axis):
    x = X.astype(np.float64)
    close(tf.math.cumsum(X, axis, exclusive, reverse), numpy_cumulative(np.cumsum, x, axis, exclusive, reverse, 0))
    expected = numpy_cumulative(np.cumprod, x, axis, exclusive, reverse, 1)
    close(tf.math.cumprod(X, axis, exclusive=exclusive, reverse=reverse), expected)
    assert_gradients_match(lambda v: tf.math.cumsum(v, axis, exclusive, reverse), [x], [0])


def test_top_k_returns_sorted_values_and_indices():
    result = tf.math.top_k(X, k=2)
    order = np.argsort(-X, axis=-1, kind="stable")[:, :2]
    np.testing.assert_array_equal(result.indices.numpy(), order)
    close(result.values, np.take_along_axis(X, order, -1))
    assert result.indices.dtype == tf.int32
    assert tf.math.top_k(X, 1, index_type=tf.int64).indices.dtype == tf.int64
    assert_gradients_match(lambda v: tf.math.top_k(v, 3).values, [X.astype(np.float64)], [0])


def test_l2_normalize_count_nonzero_add_n():
    x = X.astype(np.float64)
    close(tf.math.l2_normalize(X, axis=1), x / np.sqrt(np.maximum((x * x).sum(1, keepdims=True), 1e-12)))
    close(tf.math.l2_normalize(X), x / np.sqrt((x * x).sum()))
    assert_gradients_match(lambda v: tf.math.l2_normalize(v, axis=0), [x], [0])
    sparse = np.array([[0.0, 1.0, np.nan], [0.0, 0.0, 2.0]], np.float32)
    counts = tf.math.count_nonzero(sparse, axis=1)
    assert counts.dtype == tf.int64
    np.testing.assert_array_equal(counts.numpy(), np.count_nonzero(sparse, axis=1))
    close(tf.math.add_n([X, Y, X]), x + Y + x)


def numpy_segment_sum(data, ids, count):
    out = np.zeros((count, *data.shape[ids.ndim :]))
    kept = (ids >= 0) & (ids < count)
    np.add.at(out, ids[kept], data[kept])
    return out


def test_unsorted_segment_sum_drops_ids_outside_the_segments():
    data = RNG.standard_normal((5, 3))
    ids = np.array([2, 0, 2, -1, 4], np.int32)  # -1 and 4 are outside 3 segments
    close(tf.math.unsorted_segment_sum(data.astype(np.float32), ids, 3), numpy_segment_sum(data, ids, 3))
    pairs = np.array([[0, 1], [1, 1]], np.int32)  # ids over the two leading axes
    grid = RNG.standard_normal((2, 2, 3))
    close(tf.math.unsorted_segment_sum(grid, pairs, 2), numpy_segment_sum(grid, pairs, 2))
    assert_gradients_match(lambda v: tf.math.unsorted_segment_sum(v, ids, 3), [data], [0])


def test_softmax_and_float_only_functions():
    x = X.astype(np.float64)
    close(tf.math.softmax(X), np.exp(x) / np.exp(x).sum(-1, keepdims=True))
    close(tf.math.log_softmax(X, axis=0), x - np.log(np.exp(x).sum(0, keepdims=True)))
    with pytest.raises(tf.DTypeError, match="reciprocal"):
        tf.math.reciprocal(np.array([2], np.int32))


# Arrays -------------------------------------------------------------------------------------


def test_tile_repeat_split_unstack_gather_match_numpy():
    x = X.astype(np.float64)
    close(tf.tile(X, [2, 3]), np.tile(x, (2, 3)))
    close(tf.repeat(X, 2, axis=1), np.repeat(x, 2, axis=1))
    close(tf.repeat(X, [1, 0, 2], axis=0), np.repeat(x, [1, 0, 2], axis=0))
    close(tf.repeat(X, 2), np.repeat(x, 2))
    for got, expected in zip(tf.split(X, [1, -1, 2], axis=1), np.split(x, [1, 2], axis=1), strict=True):
        close(got, expected)
    assert [p.shape for p in tf.split(X, 2, axis=1)] == [(3, 2), (3, 2)]
    for got, expected in zip(tf.unstack(X, axis=1), np.moveaxis(x, 1, 0), strict=True):
        close(got, expected)
    close(tf.gather(X, [[2, 0], [1, 1]]), x[[[2, 0], [1, 1]]])
    close(tf.gather(X, np.array([3, 0]), axis=1), x[:, [3, 0]])
    close(tf_nn.embedding_lookup(X, [2, 2, 0]), x[[2, 2, 0]])
    close(tf_nn.embedding_lookup([tf.constant(X)], [1]), x[[1]])


@pytest.mark.parametrize(
    "fn",
    [
        lambda v: tf.tile(v, [2, 1]),
        lambda v: tf.repeat(v, [2, 1, 0], axis=0),
        lambda v: tf.split(v, [3, 1], axis=1)[0] * 2.0 + tf.split(v, [3, 1], axis=1)[1],
        lambda v: tf.unstack(v)[2] * tf.unstack(v)[0],
        lambda v: tf.gather(v, [0, 2, 0], axis=0),
        lambda v: tf_nn.embedding_lookup(v, [[1, 1], [0, 2]]),
    ],
    ids=["tile", "repeat", "split", "unstack", "gather", "embedding_lookup"],
)
def test_array_function_gradients(fn):
    assert_gradients_match(fn, [X.astype(np.float64)], [0])


def test_array_functions_refuse_what_tensorflow_refuses():
    with pytest.raises(NotImplementedError, match="batch_dims"):
        tf.gather(X, [[0], [1], [2]], batch_dims=1)
    with pytest.raises(IndexError, match="gather"):
        tf.gather(X, [-1])
    with pytest.raises(ValueError, match="one per axis"):
        tf.tile(X, [2])
    with pytest.raises(ValueError, match="equal pieces"):
        tf.split(X, 3, axis=1)
    with pytest.raises(ValueError, match="num=2"):
        tf.unstack(X, num=2)
    with pytest.raises(NotImplementedError, match="max_norm"):
        tf_nn.embedding_lookup(X, [0], max_norm=1.0)


def test_range_as_tensorflow_counts():
    np.testing.assert_array_equal(tf.range(5).numpy(), np.arange(5))
    assert tf.range(5).dtype == tf.int32 and tf.range(0.0, 1.0, 0.25).dtype == tf.float32
    close(tf.range(3, 1.0, -0.5), np.arange(3, 1.0, -0.5))
    np.testing.assert_array_equal(tf.range(tf.constant(2), 8, 3, dtype=tf.int64).numpy(), [2, 5])
    assert tf.range(4, 1).shape == (0,)


def test_identity_where_and_python_functions_as_tensorflow_gives_them():
    v = tf.Variable(tf.tensor([1.0, 2.0]))
    copy = tf.identity(v)
    v.assign(tf.tensor([5.0, 5.0]))
    assert copy.tolist() == [1.0, 2.0]  # a new tensor, not the variable
    np.testing.assert_array_equal(tf.where(tf.tensor([[True, False], [False, True]])).numpy(), [[0, 0], [1, 1]])
    assert tf.where(tf.tensor([True, False]), 1.0, 2.0, name="choice").tolist() == [1.0, 2.0]
    doubled = tf.numpy_function(lambda a: (a * 2).astype(np.float32), [tf.ones(2)], tf.float32)
    assert doubled.dtype == tf.float32 and doubled.tolist() == [2.0, 2.0]
    total, zero = tf.py_function(lambda a, b: [a + b, a * 0], [tf.ones(2), tf.ones(2)], [tf.float32, tf.float32])
    assert total.tolist() == [2.0, 2.0] and zero.tolist() == [0.0, 0.0]


def test_gelu_and_swish_in_tf_nn_match_their_formulas():
    from math import erf

    x = np.array([-2.0, -0.5, 0.0, 1.5], np.float32)
    exact = [v * 0.5 * (1 + erf(v / np.sqrt(2))) for v in x]
    np.testing.assert_allclose(tf.nn.gelu(tf.tensor(x)).numpy(), exact, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tf.nn.swish(tf.tensor(x)).numpy(), x / (1 + np.exp(-x)), rtol=1e-6)
    np.testing.assert_allclose(tf.nn.silu(tf.tensor(x), beta=2.0).numpy(), x / (1 + np.exp(-2 * x)), rtol=1e-6)


def test_crop_and_pad_to_bounding_boxes_match_numpy():
    images = np.arange(2 * 4 * 5 * 1, dtype=np.float32).reshape(2, 4, 5, 1)
    np.testing.assert_array_equal(tf.image.crop_to_bounding_box(images, 1, 2, 2, 3).numpy(), images[:, 1:3, 2:5])
    padded = tf.image.pad_to_bounding_box(images[0], 1, 1, 6, 8).numpy()
    expected = np.zeros((6, 8, 1), np.float32)
    expected[1:5, 1:6] = images[0]
    np.testing.assert_array_equal(padded, expected)
    with pytest.raises(ValueError, match="does not fit"):
        tf.image.crop_to_bounding_box(images, 3, 0, 2, 5)


def test_tensorflow_device_names_open_blocks_of_the_default_device():
    with tf.device("/CPU:0") as device:
        assert tf.ones(2).device == device == tf.CPU
    tf.config.set_jit(True)
    try:
        with tf.device("/device:CPU:0"):  # TensorFlow's names keep the mode: lazy here
            assert tf.ones(2).device.is_lazy
    finally:
        tf.config.set_jit(False)
    assert tf.default_device() == tf.CPU
