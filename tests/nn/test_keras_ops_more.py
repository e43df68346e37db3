"""More of ``keras.ops`` against NumPy: arrays (tile, split, take, meshgrid...), math (sort,
cumsum, normalize, nan_to_num...) and the cross-entropies, on tensors and arrays, with
gradients against float64 finite differences, and on the functional API's symbolic tensors."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_gradients_match

import braze
from braze import keras
from braze.keras import ops

RNG = np.random.default_rng(1)
X = RNG.standard_normal((3, 4)).astype(np.float32)
X64 = X.astype(np.float64)
INDICES = np.array([[0, 3], [2, 2], [1, 0]], np.int32)


def close(got, expected, rtol=1e-5, atol=1e-6):
    assert type(got) is braze.Tensor  # braze's tensors, as the other keras.ops return
    np.testing.assert_allclose(got.numpy(), expected, rtol=rtol, atol=atol)


def all_close(got, expected):
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        close(g, e)


# (name, call on ops, the same on NumPy); the NumPy side sees X in float64.
VALUES = [
    ("tile", lambda x: ops.tile(x, (2, 1, 2)), lambda x: np.tile(x, (2, 1, 2))),
    ("repeat", lambda x: ops.repeat(x, 2, axis=0), lambda x: np.repeat(x, 2, axis=0)),
    ("repeat_flat", lambda x: ops.repeat(x, 3), lambda x: np.repeat(x, 3)),
    ("take", lambda x: ops.take(x, INDICES, axis=1), lambda x: np.take(x, INDICES, axis=1)),
    ("take_flat", lambda x: ops.take(x, [-1, 5]), lambda x: np.take(x, [-1, 5])),
    ("take_along_axis", lambda x: ops.take_along_axis(x, INDICES, 1), lambda x: np.take_along_axis(x, INDICES, 1)),
    ("roll", lambda x: ops.roll(x, -1, axis=1), lambda x: np.roll(x, -1, axis=1)),
    ("roll_flat", lambda x: ops.roll(x, 5), lambda x: np.roll(x, 5)),
    ("tensordot", lambda x: ops.tensordot(x, x.T, axes=1), lambda x: np.tensordot(x, x.T, axes=1)),
    ("tensordot_pairs", lambda x: ops.tensordot(x, x, axes=(0, 0)), lambda x: np.tensordot(x, x, axes=(0, 0))),
    ("moveaxis", lambda x: ops.moveaxis(x[None], 0, -1), lambda x: np.moveaxis(x[None], 0, -1)),
    ("dot", lambda x: ops.dot(x, x.T), lambda x: np.dot(x, x.T)),
    ("dot_vector", lambda x: ops.dot(x, x[0]), lambda x: np.dot(x, x[0])),
    ("dot_3d", lambda x: ops.dot(x[None], x.T), lambda x: np.dot(x[None], x.T)),
    ("outer", lambda x: ops.outer(x[0], x[1]), lambda x: np.outer(x[0], x[1])),
    ("cumsum", lambda x: ops.cumsum(x, axis=1), lambda x: np.cumsum(x, axis=1)),
    ("cumsum_flat", lambda x: ops.cumsum(x), lambda x: np.cumsum(x)),
    ("sort", lambda x: ops.sort(x, axis=0), lambda x: np.sort(x, axis=0)),
    ("round", lambda x: ops.round(x * 10, decimals=1), lambda x: np.round(x * 10, 1)),
    ("round_tens", lambda x: ops.round(x * 100, decimals=-1), lambda x: np.round(x * 100, -1)),
    ("floor", lambda x: ops.floor(x * 3), lambda x: np.floor(x * 3)),
    ("ceil", lambda x: ops.ceil(x * 3), lambda x: np.ceil(x * 3)),
    ("sin", ops.sin, np.sin),
    ("cos", ops.cos, np.cos),
    ("log1p", lambda x: ops.log1p(abs(x)), lambda x: np.log1p(abs(x))),
    ("expm1", ops.expm1, np.expm1),
    ("stop_gradient", ops.stop_gradient, lambda x: x),
    ("normalize", ops.normalize, lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)),
    ("normalize_l1", lambda x: ops.normalize(x, axis=0, order=1), lambda x: x / abs(x).sum(0, keepdims=True)),
    ("vstack", lambda x: ops.vstack([x, x[0]]), lambda x: np.vstack([x, x[0]])),
    ("hstack", lambda x: ops.hstack([x, x[:, :1]]), lambda x: np.hstack([x, x[:, :1]])),
    ("hstack_vectors", lambda x: ops.hstack([x[0], x[1]]), lambda x: np.hstack([x[0], x[1]])),
    ("ravel", ops.ravel, np.ravel),
    ("average", lambda x: ops.average(x, axis=0), lambda x: np.average(x, axis=0)),
    (
        "average_weighted",
        lambda x: ops.average(x, axis=1, weights=np.arange(1.0, 5.0)),
        lambda x: np.average(x, axis=1, weights=np.arange(1.0, 5.0)),
    ),
    ("average_full", lambda x: ops.average(x, weights=abs(x)), lambda x: np.average(x, weights=abs(x))),
    ("slice", lambda x: ops.slice(x, (1, 1), (2, 3)), lambda x: x[1:3, 1:4]),
]


@pytest.mark.parametrize(("name", "call", "reference"), VALUES, ids=[v[0] for v in VALUES])
def test_values_match_numpy(name, call, reference):
    close(call(X), reference(X64))
    close(call(braze.tensor(X)), reference(X64))


DIFFERENTIABLE = [v for v in VALUES if v[0] not in ("sort", "round", "round_tens", "floor", "ceil", "stop_gradient")]


@pytest.mark.parametrize(("name", "call", "reference"), DIFFERENTIABLE, ids=[v[0] for v in DIFFERENTIABLE])
def test_gradients_match_finite_differences(name, call, reference):
    assert_gradients_match(call, [X64], [0])


def test_pieces_match_numpy():
    all_close(ops.split(X, 2, axis=1), np.split(X64, 2, axis=1))
    all_close(ops.split(X, [1, 3]), np.split(X64, [1, 3]))
    all_close(ops.split(X, [3, 1], axis=1), np.split(X64, [3, 1], axis=1))  # NumPy's indices, not sizes
    all_close(ops.unstack(X, axis=1), list(np.moveaxis(X64, 1, 0)))
    all_close(ops.meshgrid(X[0], X[1, :2]), np.meshgrid(X64[0], X64[1, :2]))
    all_close(ops.meshgrid(X[0], X[1, :2], indexing="ij"), np.meshgrid(X64[0], X64[1, :2], indexing="ij"))
    values, indices = ops.top_k(X, 2)
    order = np.argsort(-X, axis=-1, kind="stable")[:, :2]
    np.testing.assert_array_equal(indices.numpy(), order)
    close(values, np.take_along_axis(X64, order, -1))
    assert_gradients_match(lambda v: ops.split(v, [1])[1] * ops.unstack(v)[0], [X64], [0])
    assert_gradients_match(lambda v: ops.top_k(v, 3)[0], [X64], [0])
    assert_gradients_match(lambda v: ops.meshgrid(v[0], v[1, :2])[0] * ops.meshgrid(v[0], v[1, :2])[1], [X64], [0])


def test_creation_and_tests_match_numpy():
    close(ops.linspace(-1, 2, 7), np.linspace(-1, 2, 7))
    close(ops.linspace(0, 1, 4, endpoint=False), np.linspace(0, 1, 4, endpoint=False))
    values, step = ops.linspace(0, 3, 4, retstep=True)
    assert step == 1.0 and values.numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
    close(ops.eye(3, 4, k=1), np.eye(3, 4, k=1))
    close(ops.identity(2, dtype="float64"), np.identity(2))
    special = np.array([[1.0, np.nan], [np.inf, -np.inf]], np.float32)
    np.testing.assert_array_equal(ops.isnan(special).numpy(), np.isnan(special))
    np.testing.assert_array_equal(ops.isfinite(special).numpy(), np.isfinite(special))
    close(ops.nan_to_num(special), np.nan_to_num(special))
    close(ops.nan_to_num(special, nan=1.0, posinf=2.0, neginf=-2.0), [[1, 1], [2, -2]])
    mask = X > 0
    np.testing.assert_array_equal(ops.all(mask, axis=1).numpy(), mask.all(1))
    np.testing.assert_array_equal(ops.any(mask, axis=0, keepdims=True).numpy(), mask.any(0, keepdims=True))
    counts = ops.count_nonzero(np.array([[0, 1, 2], [0, 0, 3]]), axis=1)
    assert counts.dtype == braze.int32 and counts.numpy().tolist() == [2, 1]
    np.testing.assert_array_equal(ops.argmin(X, axis=1).numpy(), np.argmin(X, 1))
    np.testing.assert_array_equal(ops.argsort(X).numpy(), np.argsort(X, kind="stable"))
    assert int(ops.size(X)) == 12 and ops.ndim(X) == 2


def test_integers_take_floats_where_keras_does():
    integers = np.array([1, -2, 3], np.int32)
    for name in ("floor", "ceil", "sin", "cos", "expm1"):
        out = getattr(ops, name)(integers)
        assert out.dtype == braze.float32
        close(out, getattr(np, name)(integers.astype(np.float64)))
    assert ops.round(integers).dtype == braze.int32
    assert ops.cumsum(integers, dtype="float32").dtype == braze.float32


def test_segment_sum_drops_ids_outside_the_segments():
    ids = np.array([1, 0, 1], np.int32)
    expected = np.stack([X64[1], X64[0] + X64[2], np.zeros(4)])
    close(ops.segment_sum(X, ids, num_segments=3), expected)
    close(ops.segment_sum(X, np.array([5, 0, -1]), num_segments=2), np.stack([X64[1], np.zeros(4)]))
    assert_gradients_match(lambda v: ops.segment_sum(v, ids, 2), [X64], [0])
    with pytest.raises(NotImplementedError, match="num_segments"):
        ops.segment_sum(X, ids)


# Cross-entropies, as Keras's backends compute them -----------------------------------------

PROBABILITIES = RNG.uniform(0.1, 0.9, (4, 3))
TARGETS = np.eye(3)[[0, 2, 1, 2]]
LABELS = np.array([0, 2, 1, 2])


def numpy_log_probabilities(output, from_logits):
    if from_logits:
        return output - np.log(np.exp(output).sum(-1, keepdims=True))
    return np.log(np.clip(output / output.sum(-1, keepdims=True), 1e-7, 1 - 1e-7))


@pytest.mark.parametrize("from_logits", [False, True])
def test_cross_entropies_match_numpy(from_logits):
    output = np.log(PROBABILITIES) if from_logits else PROBABILITIES
    expected = -(TARGETS * numpy_log_probabilities(output, from_logits)).sum(-1)
    close(ops.categorical_crossentropy(TARGETS, output.astype(np.float32), from_logits=from_logits), expected)
    close(ops.sparse_categorical_crossentropy(LABELS, output.astype(np.float32), from_logits), expected)
    close(ops.sparse_categorical_crossentropy(LABELS[:, None], output, from_logits), expected)
    p = 1 / (1 + np.exp(-output)) if from_logits else output
    binary = -(TARGETS * np.log(p) + (1 - TARGETS) * np.log(1 - p))
    close(ops.binary_crossentropy(TARGETS, output.astype(np.float32), from_logits=from_logits), binary)
    for loss in (ops.categorical_crossentropy, ops.binary_crossentropy):
        assert_gradients_match(lambda o, loss=loss: loss(TARGETS, o, from_logits), [output], [0])
    assert_gradients_match(lambda o: ops.sparse_categorical_crossentropy(LABELS, o, from_logits), [output], [0])
    with pytest.raises(ValueError, match="one shape"):
        ops.categorical_crossentropy(TARGETS[:2], output)


# cond -------------------------------------------------------------------------------------


def test_cond_runs_the_branch_of_a_known_predicate():
    assert ops.cond(True, lambda: "yes", lambda: "no") == "yes"
    assert ops.cond(braze.tensor(0.0) > 1.0, lambda: "yes", lambda: "no") == "no"
    with pytest.raises(TypeError, match="keras.ops.cond: the predicate is symbolic"):
        ops.cond(keras.Input(shape=()) > 0, lambda: 1, lambda: 2)
    traced = braze.jit(lambda v: ops.cond(v > 0, lambda: v, lambda: -v))
    with pytest.raises(braze.TraceError, match="keras.ops.cond: the predicate is traced"):
        traced(braze.tensor(1.0))


# The functional API's symbolic tensors -----------------------------------------------------

SYMBOLIC = [
    ("tile", lambda t: ops.tile(t, (1, 2)), lambda x: np.tile(x, (1, 2))),
    ("take", lambda t: ops.take(t, [2, 0], axis=1), lambda x: x[:, [2, 0]]),
    ("split", lambda t: ops.split(t, [1], axis=1)[1], lambda x: x[:, 1:]),
    ("cumsum", lambda t: ops.cumsum(t, axis=1), lambda x: np.cumsum(x, 1)),
    ("moveaxis", lambda t: ops.moveaxis(t, 0, 1), lambda x: x.T),
    ("normalize", ops.normalize, lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)),
    ("top_k", lambda t: ops.top_k(t, 2)[0], lambda x: -np.sort(-x, axis=-1)[:, :2]),
]


@pytest.mark.parametrize(("name", "call", "reference"), SYMBOLIC, ids=[s[0] for s in SYMBOLIC])
def test_symbolic_tensors_record_the_ops(name, call, reference):
    inputs = keras.Input(shape=(3,))
    model = keras.Model(inputs, call(inputs))
    x = RNG.standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(model.predict(x, verbose=0), reference(x.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_symbolic_size_and_ndim():
    inputs = keras.Input(shape=(3,))
    assert ops.ndim(inputs) == 2
    model = keras.Model(inputs, ops.size(inputs))
    assert int(model(np.zeros((4, 3), np.float32))) == 12
