"""keras.metrics and keras.losses against NumPy: accuracies, mean errors, Precision,
Recall, AUC (ROC and PR), per-example loss functions in Keras's (y_true, y_pred) order,
Loss classes with sample weights and reductions, and metrics over several batches."""

from __future__ import annotations

import numpy as np
import pytest

from braze import keras
from braze.keras import losses, metrics

RNG = np.random.default_rng(0)
LABELS = RNG.integers(0, 2, 200).astype(np.float32)
SCORES = np.clip(0.3 * LABELS + 0.7 * RNG.random(200), 0, 1).astype(np.float32)


def numpy_confusion(threshold):
    predicted = np.greater(SCORES, threshold)
    tp = np.sum(predicted & (LABELS == 1))
    fp = np.sum(predicted & (LABELS == 0))
    fn = np.sum(~predicted & (LABELS == 1))
    tn = np.sum(~predicted & (LABELS == 0))
    return tp, fp, fn, tn


def test_confusion_counts_match_numpy():
    counts = [metrics.TruePositives(), metrics.FalsePositives(), metrics.FalseNegatives(), metrics.TrueNegatives()]
    for metric in counts:
        metric.update_state(LABELS, SCORES)
    assert [float(m.result()) for m in counts] == list(numpy_confusion(0.5))


def test_precision_and_recall_match_numpy_over_two_batches():
    precision, recall = metrics.Precision(), metrics.Recall(thresholds=[0.3, 0.6])
    for part in (slice(0, 120), slice(120, 200)):
        precision.update_state(LABELS[part], SCORES[part])
        recall.update_state(LABELS[part], SCORES[part])
    tp, fp, _, _ = numpy_confusion(0.5)
    assert float(precision.result()) == pytest.approx(tp / (tp + fp), rel=1e-6)
    expected = [numpy_confusion(t)[0] / (numpy_confusion(t)[0] + numpy_confusion(t)[2]) for t in (0.3, 0.6)]
    np.testing.assert_allclose(recall.result().numpy(), expected, rtol=1e-6)
    precision.reset_state()
    assert float(precision.result()) == 0.0


@pytest.mark.parametrize("curve", ["ROC", "PR"])
def test_auc_matches_the_curve_computed_in_numpy(curve):
    auc = metrics.AUC(num_thresholds=50, curve=curve)
    auc.update_state(LABELS, SCORES)
    thresholds = [-1e-7, *[(i + 1) / 49 for i in range(48)], 1 + 1e-7]
    tp, fp, fn, tn = (np.array(v, np.float64) for v in zip(*(numpy_confusion(t) for t in thresholds), strict=True))
    if curve == "ROC":
        tpr, fpr = tp / (tp + fn), fp / (fp + tn)
        expected = np.sum((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2)
    else:  # Davis and Goadrich's interpolation, as Keras computes it
        dtp, p = tp[:-1] - tp[1:], tp + fp
        dp = p[:-1] - p[1:]
        slope = np.divide(dtp, dp, out=np.zeros_like(dtp), where=dp > 0)
        intercept = tp[1:] - slope * p[1:]
        ratio = np.where((p[:-1] > 0) & (p[1:] > 0), p[:-1] / np.where(p[1:] > 0, p[1:], 1), 1.0)
        denominator = tp[1:] + fn[1:]
        terms = slope * (dtp + intercept * np.log(ratio))
        expected = np.sum(np.divide(terms, denominator, out=np.zeros_like(terms), where=denominator > 0))
    assert float(auc.result()) == pytest.approx(expected, rel=1e-5)


def test_accuracies_and_errors_match_numpy():
    y_true = RNG.integers(0, 4, 30)
    scores = RNG.random((30, 4)).astype(np.float32)
    sparse = metrics.SparseCategoricalAccuracy()
    sparse.update_state(y_true, scores)
    assert float(sparse.result()) == pytest.approx(np.mean(scores.argmax(1) == y_true))
    onehot = metrics.CategoricalAccuracy()
    onehot.update_state(keras.utils.to_categorical(y_true, 4), scores)
    assert float(onehot.result()) == pytest.approx(np.mean(scores.argmax(1) == y_true))
    mae, rmse = metrics.MeanAbsoluteError(), metrics.RootMeanSquaredError()
    targets = RNG.random((30, 4)).astype(np.float32)
    weights = RNG.random(30).astype(np.float32)
    mae.update_state(targets, scores, sample_weight=weights)
    rmse.update_state(targets, scores)
    per_example = np.abs(targets - scores).mean(1)
    assert float(mae.result()) == pytest.approx(np.sum(per_example * weights) / np.sum(weights), rel=1e-5)
    assert float(rmse.result()) == pytest.approx(np.sqrt(np.mean((targets - scores) ** 2)), rel=1e-5)
    binary = metrics.BinaryAccuracy(threshold=0.6)
    binary.update_state(LABELS[:, None], SCORES[:, None])
    assert float(binary.result()) == pytest.approx(np.mean((SCORES > 0.6) == (LABELS > 0.5)))
    # Keras compares the thresholded prediction with the target as it is: soft targets never match.
    soft = metrics.BinaryAccuracy()
    soft.update_state(np.array([[0.3], [0.8], [1.0]], np.float32), np.array([[0.2], [0.9], [0.7]], np.float32))
    assert float(soft.result()) == pytest.approx(1 / 3)


def test_loss_functions_take_y_true_first_and_return_one_value_per_example():
    y_true = RNG.random((5, 3)).astype(np.float32)
    y_pred = RNG.random((5, 3)).astype(np.float32)
    np.testing.assert_allclose(losses.mean_squared_error(y_true, y_pred).numpy(), ((y_true - y_pred) ** 2).mean(1))
    np.testing.assert_allclose(losses.mae(y_true, y_pred).numpy(), np.abs(y_true - y_pred).mean(1), rtol=1e-6)
    p = np.clip(y_pred, 1e-7, 1 - 1e-7)
    bce = -(y_true * np.log(p) + (1 - y_true) * np.log(1 - p)).mean(1)
    np.testing.assert_allclose(losses.binary_crossentropy(y_true, y_pred).numpy(), bce, rtol=1e-5)
    error = np.abs(y_true - y_pred)
    huber = np.where(error <= 0.3, 0.5 * error**2, 0.3 * (error - 0.15)).mean(1)
    np.testing.assert_allclose(losses.huber(y_true, y_pred, delta=0.3).numpy(), huber, rtol=1e-5, atol=1e-7)
    labels = np.array([0, 2, 1, 1, 0])
    log_p = y_pred - np.log(np.exp(y_pred).sum(1, keepdims=True))
    sparse = losses.sparse_categorical_crossentropy(labels, y_pred, from_logits=True).numpy()
    np.testing.assert_allclose(sparse, -log_p[np.arange(5), labels], rtol=1e-5)


def test_loss_classes_reduce_weighted_examples_as_keras_does():
    y_true = np.array([[1.0], [0.0], [1.0], [0.0]], np.float32)
    y_pred = np.array([[0.9], [0.2], [0.4], [0.6]], np.float32)
    weights = np.array([1.0, 2.0, 0.0, 0.5], np.float32)
    per_example = -(y_true * np.log(y_pred) + (1 - y_true) * np.log(1 - y_pred))[:, 0]
    loss = losses.BinaryCrossentropy()
    assert float(loss(y_true, y_pred, sample_weight=weights)) == pytest.approx(np.sum(per_example * weights) / 4)
    summed = losses.BinaryCrossentropy(reduction="sum")
    assert float(summed(y_true, y_pred)) == pytest.approx(per_example.sum(), rel=1e-6)
    smoothed = losses.BinaryCrossentropy(label_smoothing=0.2)(y_true, y_pred)
    target = y_true * 0.8 + 0.1
    expected = -(target * np.log(y_pred) + (1 - target) * np.log(1 - y_pred)).mean()
    assert float(smoothed) == pytest.approx(expected, rel=1e-6)
    with pytest.raises(NotImplementedError, match="ignore_class"):
        losses.SparseCategoricalCrossentropy(ignore_class=0)


def test_names_resolve_as_keras_resolves_them():
    assert type(losses.get("mse")).__name__ == "LossFunctionWrapper"
    assert isinstance(losses.get("BinaryCrossentropy"), losses.BinaryCrossentropy)
    assert metrics.get("mae").name == "mae" and isinstance(metrics.get("AUC"), metrics.AUC)
    with pytest.raises(ValueError, match="unknown metric 'f1'"):
        metrics.get("f1")


def test_top_k_accuracies_count_a_label_among_the_k_highest_ties_included():
    scores = np.array([[0.1, 0.5, 0.4], [0.9, 0.05, 0.05], [0.2, 0.3, 0.5]], np.float32)
    labels = np.array([0, 2, 1])
    ranks = np.array([(row > row[label]).sum() for row, label in zip(scores, labels, strict=True)])  # 2, 1, 1
    for k in (1, 2, 3):
        sparse = keras.metrics.SparseTopKCategoricalAccuracy(k)
        sparse.update_state(labels, scores)
        dense = keras.metrics.TopKCategoricalAccuracy(k=k, name="top")
        dense.update_state(np.eye(3, dtype=np.float32)[labels], scores)
        np.testing.assert_allclose([float(sparse.result()), float(dense.result())], [(ranks < k).mean()] * 2)
