"""CTC against its definition: the loss is minus the log of the probability summed over
every alignment of the frames that collapses (repeats merged, blanks dropped) to the
labels, enumerated here in float64 for small cases; its gradient against float64 finite
differences; greedy decoding against the same collapse of each frame's best class."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import braze
from braze import keras
from braze.keras import ops
from braze.nn import ctc as braze_ctc


def collapse(path, blank):
    merged = [c for i, c in enumerate(path) if i == 0 or c != path[i - 1]]
    return [c for c in merged if c != blank]


def brute_force_loss(logits, labels, label_length, frame_length, blank):
    """-log sum over every path of frame_length frames collapsing to the labels."""
    losses = []
    for b in range(logits.shape[0]):
        z = logits[b, : frame_length[b]].astype(np.float64)
        log_p = z - np.log(np.exp(z - z.max(-1, keepdims=True)).sum(-1, keepdims=True)) - z.max(-1, keepdims=True)
        target = list(labels[b, : label_length[b]])
        total = 0.0
        for path in itertools.product(range(z.shape[1]), repeat=frame_length[b]):
            if collapse(list(path), blank) == target:
                total += np.exp(sum(log_p[t, c] for t, c in enumerate(path)))
        losses.append(-np.log(total))
    return np.array(losses)


CASES = [
    # (frames, classes, labels, label lengths, frame lengths, blank)
    (4, 3, [[1, 2], [2, 2]], [2, 2], [4, 4], 0),
    (5, 3, [[1, 1], [2, 0]], [2, 1], [5, 3], 0),
    (4, 4, [[0, 2], [1, 1]], [2, 1], [4, 2], 3),  # the blank is the last class, as tf.keras's
    (3, 3, [[0, 0], [1, 0]], [0, 1], [3, 3], 2),  # an empty labelling
]


@pytest.mark.parametrize(("frames", "classes", "labels", "label_length", "frame_length", "blank"), CASES)
def test_ctc_loss_sums_every_alignment(frames, classes, labels, label_length, frame_length, blank):
    rng = np.random.default_rng(frames * 10 + classes)
    logits = rng.standard_normal((2, frames, classes)).astype(np.float32)
    labels = np.array(labels)
    expected = brute_force_loss(logits, labels, label_length, frame_length, blank)
    got = ops.ctc_loss(labels, logits, np.array(label_length), np.array(frame_length), mask_index=blank)
    # A handful of float32 logsumexps per frame: a few ulps of the loss.
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5)


def test_ctc_loss_gradient_matches_float64_finite_differences():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((2, 5, 4))
    labels, label_length, frame_length = np.array([[1, 3], [2, 2]]), np.array([2, 2]), np.array([5, 5])

    def loss(z):
        return braze_ctc.ctc_loss(labels, z, label_length, frame_length).sum()

    analytic = braze.grad(loss)(braze.tensor(logits)).numpy()
    numeric = np.zeros_like(logits)
    step = 1e-6
    for index in np.ndindex(logits.shape):
        up, down = logits.copy(), logits.copy()
        up[index] += step
        down[index] -= step
        numeric[index] = (loss(braze.tensor(up)).item() - loss(braze.tensor(down)).item()) / (2 * step)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7)


def test_ctc_loss_of_labels_the_frames_cannot_hold_is_huge_but_finite_with_finite_gradients():
    logits = braze.tensor(np.zeros((1, 2, 3), np.float32))
    loss = braze.grad(lambda z: braze_ctc.ctc_loss([[1, 1]], z, [2], [2]).sum())  # 1, blank, 1 needs 3 frames
    assert np.isfinite(loss(logits).numpy()).all()
    assert braze_ctc.ctc_loss([[1, 1]], logits, [2], [2]).item() > 1e29


def test_keras_ctc_loss_class_and_compiled_training():
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((2, 4, 3)).astype(np.float32)
    labels = np.array([[1, 2], [2, 1]])
    expected = brute_force_loss(logits, labels, [2, 2], [4, 4], 0)
    np.testing.assert_allclose(keras.losses.CTC()(labels, logits).numpy(), expected.mean(), rtol=1e-5)
    np.testing.assert_allclose(keras.losses.ctc(labels, logits).numpy(), expected, rtol=1e-5)
    x = rng.standard_normal((8, 6, 5)).astype(np.float32)
    y = rng.integers(1, 4, (8, 2))
    histories = []
    for jit in (False, True):
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((6, 5)), keras.layers.Dense(4)])
        model.compile(optimizer="adam", loss=keras.losses.CTC(), jit_compile=jit)
        histories.append(model.fit(x, y, epochs=3, batch_size=4, verbose=0).history["loss"])
    np.testing.assert_allclose(histories[1], histories[0], rtol=1e-4)
    assert histories[0][-1] < histories[0][0]


def test_tf_keras_ctc_batch_cost_takes_probabilities_with_the_blank_last():
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((2, 4, 4))
    probabilities = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    labels = np.array([[0, 2], [1, 0]])
    cost = keras.backend.ctc_batch_cost(labels, probabilities.astype(np.float32), [[4], [3]], [[2], [1]])
    assert cost.shape == (2, 1)
    expected = brute_force_loss(np.log(probabilities + 1e-7), labels, [2, 1], [4, 3], 3)
    np.testing.assert_allclose(cost.numpy()[:, 0], expected, rtol=1e-5)


def test_greedy_decoding_collapses_each_frames_best_class():
    rng = np.random.default_rng(3)
    scores = rng.standard_normal((3, 7, 4)).astype(np.float32)
    lengths = np.array([7, 4, 0])
    (decoded,), totals = ops.ctc_decode(scores, lengths)
    for b in range(3):
        best = scores[b, : lengths[b]].argmax(-1)
        want = collapse(list(best), 0)
        assert decoded.numpy()[b].tolist() == want + [-1] * (7 - len(want))
        np.testing.assert_allclose(totals.numpy()[b, 0], -scores[b, np.arange(lengths[b]), best].sum(), rtol=1e-6)
    unmerged, _ = ops.ctc_decode(scores, lengths, merge_repeated=False)
    best = scores[0].argmax(-1)
    assert unmerged.numpy()[0, 0, : int((best != 0).sum())].tolist() == [c for c in best if c != 0]
    [dense], log_probs = keras.backend.ctc_decode(np.exp(scores), [7, 4, 0])  # tf.keras: the blank is last
    assert dense.numpy()[0].tolist()[: len(collapse(list(scores[0].argmax(-1)), 3))] == collapse(
        list(scores[0].argmax(-1)), 3
    )
    with pytest.raises(NotImplementedError, match="greedily"):
        ops.ctc_decode(scores, lengths, strategy="beam_search")


def test_label_padding_is_left_out_whatever_its_value():
    rng = np.random.default_rng(4)
    logits = rng.standard_normal((2, 6, 4)).astype(np.float32)
    expected = brute_force_loss(logits, np.array([[1, 2], [3, 0]]), [2, 1], [6, 6], 0)
    padded_with_zeros = np.array([[1, 2, 0, 0], [3, 0, 0, 0]])  # keras.losses.ctc: the nonzero labels count
    np.testing.assert_allclose(keras.losses.ctc(padded_with_zeros, logits).numpy(), expected, rtol=1e-5)
    padded_past_the_classes = np.array([[1, 2, 99, 99], [3, 99, 99, 99]])  # keras-io's handwriting pads with 99
    got = ops.ctc_loss(padded_past_the_classes, logits, np.array([2, 1]), np.array([6, 6]))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5)
