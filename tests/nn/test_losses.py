"""Losses against NumPy formulas, including their numerical stability."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_gradients_match

import braze
from braze.nn import binary_cross_entropy, mean_squared_error, softmax_cross_entropy, sparse_categorical_crossentropy


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
    with pytest.raises(braze.ShapeError, match=r"logits \(4, 3\) need integer labels of shape \(4,\), got \(5,\)"):
        softmax_cross_entropy(braze.zeros((4, 3)), braze.zeros((5,), dtype="int32"))
