"""Losses against NumPy formulas, including their numerical stability."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_gradients_match

import braze
from braze import lazy
from braze.nn import (
    binary_cross_entropy,
    categorical_crossentropy,
    mean_squared_error,
    softmax_cross_entropy,
    sparse_categorical_crossentropy,
)


def test_softmax_cross_entropy_matches_numpy():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((6, 4)).astype(np.float32)
    labels = rng.integers(0, 4, 6).astype(np.int32)
    shifted = logits - logits.max(1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    expected = -log_probs[np.arange(6), labels].mean()
    assert softmax_cross_entropy(braze.tensor(logits), braze.tensor(labels)).item() == pytest.approx(expected, rel=1e-5)
    probs = np.exp(log_probs)
    got = sparse_categorical_crossentropy(braze.tensor(probs), braze.tensor(labels)).item()
    assert got == pytest.approx(expected, rel=1e-4)


def test_softmax_cross_entropy_gradient():
    labels = braze.tensor([1, 0, 2])
    assert_gradients_match(
        lambda z: softmax_cross_entropy(z, labels), [np.random.default_rng(1).normal(size=(3, 3))], [0]
    )


def test_binary_cross_entropy_from_logits_is_stable_and_matches():
    x = np.array([-100.0, -3.0, 0.0, 2.0, 100.0], dtype=np.float32)
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0], dtype=np.float32)
    got = binary_cross_entropy(braze.tensor(x), braze.tensor(y), from_logits=True).item()
    expected = np.mean(np.logaddexp(0, x) - x * y)
    assert np.isfinite(got) and got == pytest.approx(expected, rel=1e-5)


def test_binary_cross_entropy_from_probabilities_clips():
    p = np.array([[0.0], [1.0], [0.3]], dtype=np.float32)
    y = np.array([0.0, 1.0, 1.0], dtype=np.float32)
    got = binary_cross_entropy(braze.tensor(p), braze.tensor(y)).item()
    clipped = np.clip(p[:, 0], 1e-7, 1 - 1e-7)
    expected = -np.mean(y * np.log(clipped) + (1 - y) * np.log(1 - clipped))
    assert got == pytest.approx(expected, rel=1e-4)
    assert_gradients_match(
        lambda q: binary_cross_entropy(q, braze.tensor(y.astype(np.float64))), [np.array([0.2, 0.7, 0.4])], [0]
    )


def test_mean_squared_error():
    assert mean_squared_error(braze.tensor([1.0, 2.0]), braze.tensor([0.0, 4.0])).item() == pytest.approx(2.5)


def test_label_shape_mismatch_is_reported():
    expected = r"scores \(4, 3\) and targets \(5,\) do not match: expected integer labels of shape \(4,\) or \(4, 1\)"
    with pytest.raises(braze.ShapeError, match=expected):
        softmax_cross_entropy(braze.zeros((4, 3)), braze.zeros((5,), dtype="int32"))


def numpy_log_softmax(z: np.ndarray) -> np.ndarray:
    shifted = z - z.max(1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(1, keepdims=True))


@pytest.mark.parametrize(("p_shape", "y_shape"), [((8, 1), (8, 1)), ((8, 1), (8,)), ((8,), (8, 1)), ((8,), (8,))])
def test_one_output_losses_take_the_target_shapes_keras_takes(p_shape, y_shape):
    rng = np.random.default_rng(2)
    p = rng.uniform(0.05, 0.95, 8).astype(np.float32)
    y = (rng.random(8) > 0.5).astype(np.float32)
    predictions, targets = braze.tensor(p.reshape(p_shape)), braze.tensor(y.reshape(y_shape))
    expected_bce = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
    assert binary_cross_entropy(predictions, targets).item() == pytest.approx(expected_bce, rel=1e-5)
    assert mean_squared_error(predictions, targets).item() == pytest.approx(np.mean((p - y) ** 2), rel=1e-5)


@pytest.mark.parametrize("loss", [binary_cross_entropy, mean_squared_error])
def test_one_output_shape_errors_state_the_real_mismatch(loss):
    with pytest.raises(braze.ShapeError, match=r"predictions \(8, 3\) and targets \(8,\) do not match"):
        loss(braze.zeros((8, 3)), braze.zeros((8,)))
    with pytest.raises(braze.ShapeError, match=r"targets of shape \(8, 1\) or \(8,\) are expected"):
        loss(braze.zeros((8, 1)), braze.zeros((6, 1)))


@pytest.mark.parametrize(
    "loss", [softmax_cross_entropy, categorical_crossentropy, sparse_categorical_crossentropy], ids=lambda f: f.__name__
)
def test_categorical_losses_take_integer_labels_and_one_hot_targets(loss):
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((6, 4)).astype(np.float32)
    labels = rng.integers(0, 4, 6)
    log_probs = numpy_log_softmax(logits.astype(np.float64))
    expected = -log_probs[np.arange(6), labels].mean()
    scores = logits if loss is softmax_cross_entropy else np.exp(log_probs).astype(np.float32)
    for targets in (labels.astype(np.int32), labels[:, None], np.eye(4, dtype=np.float32)[labels]):
        got = loss(braze.tensor(scores), braze.tensor(targets)).item()
        assert got == pytest.approx(expected, rel=1e-4), targets.shape


def test_categorical_crossentropy_from_logits_and_soft_targets():
    rng = np.random.default_rng(4)
    logits = rng.standard_normal((5, 3))
    soft = rng.dirichlet(np.ones(3), 5)
    expected = -(soft * numpy_log_softmax(logits)).sum(1).mean()
    got = categorical_crossentropy(braze.tensor(logits), braze.tensor(soft), from_logits=True).item()
    assert got == pytest.approx(expected, rel=1e-10)


def test_cross_entropy_of_sequence_labels_gathers_and_its_gradient_matches():
    """Integer labels of a sequence, (N, T, C) scores, with repeated labels: the loss is the
    label's logit gathered (its gradient a scatter-add), checked against float64 finite
    differences and NumPy; the graph holds no one-hot comparison of the class axis."""
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(2, 3, 5))
    labels = np.array([[1, 1, 4], [0, 4, 4]], dtype=np.int32)
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    expected = -np.take_along_axis(log_probs, labels[..., None], -1).sum() / 2
    got = softmax_cross_entropy(braze.tensor(logits), braze.tensor(labels)).item()
    assert got == pytest.approx(expected, rel=1e-12)
    assert_gradients_match(lambda z: softmax_cross_entropy(z, braze.tensor(labels)), [logits], [0])
    x = braze.tensor(logits.astype(np.float32), device=braze.LAZY_CPU)
    loss = softmax_cross_entropy(x, labels)
    gradient = braze.grad(lambda z: softmax_cross_entropy(z, labels))(x)
    for value, op in ((loss, "gather"), (gradient, "scatter_add")):
        ops = {n.op.name for n in lazy.build_graph([value._value]).graph.nodes()}
        assert op in ops and "eq" not in ops, ops
    lazy.EXECUTOR._live.clear()


def test_cross_entropy_label_out_of_range_raises_eagerly():
    with pytest.raises(IndexError, match="softmax_cross_entropy: index 4 is out of bounds for axis 1 of size 4"):
        softmax_cross_entropy(braze.tensor(np.zeros((2, 4), np.float32)), braze.tensor([1, 4]))
    with pytest.raises(IndexError, match="index -1"):
        sparse_categorical_crossentropy(braze.tensor(np.zeros((2, 4), np.float32)), [1, -1], from_logits=True)
