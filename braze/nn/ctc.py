"""Connectionist temporal classification (Graves et al., 2006): the loss of labelling a
sequence of frames with a shorter sequence of labels, summed over every alignment, and
the greedy decoding of frames into labels. Keras's ``ops.ctc_loss``, ``losses.CTC`` and
``ops.ctc_decode``, and tf.keras's ``backend.ctc_batch_cost`` and ``ctc_decode``.

The loss is the forward algorithm in log space over the labels with a blank before, between
and after them (2 S + 1 states for S labels), vectorized over the batch and run frame by
frame; gradients are those of its ops. A state no alignment reaches holds ``_IMPOSSIBLE``,
a very negative finite number rather than -inf, so that sums of nothing keep finite
gradients; a labelling no alignment of the frames can make (more labels than frames allow)
costs about ``-_IMPOSSIBLE``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from braze import ops
from braze.tensor import Tensor

__all__ = ["backend_ctc_decode", "ctc", "ctc_batch_cost", "ctc_decode", "ctc_loss", "greedy_decode"]

_IMPOSSIBLE = -1e30


def _log_add(*terms: Tensor) -> Tensor:
    """log(sum(exp(terms))), finite where every term is ``_IMPOSSIBLE``."""
    top = terms[0]
    for term in terms[1:]:
        top = ops.maximum(top, term)
    return top + ops.log(sum(ops.exp(term - top) for term in terms))


def _shifted(alpha: Tensor, by: int) -> Tensor:
    """``alpha`` moved ``by`` states along its last axis, ``_IMPOSSIBLE`` coming in."""
    batch, states = alpha.shape
    head = ops.full((batch, min(by, states)), _IMPOSSIBLE, dtype=alpha.dtype, device=alpha.device)
    return ops.concatenate([head, alpha[:, : states - by]], axis=1) if by < states else head


def ctc_loss(target: Any, output: Any, target_length: Any, output_length: Any, mask_index: int = 0) -> Tensor:
    """The negative log-likelihood (one per example) of the labels ``target`` (batch, S),
    of which the first ``target_length`` count, given the logits ``output`` (batch, T,
    classes), of which the first ``output_length`` frames count; class ``mask_index`` is
    the blank: ``keras.ops.ctc_loss``."""
    logits = ops.as_tensor(output)
    if logits.ndim != 3:
        raise ValueError(f"ctc_loss: output of shape (batch, frames, classes), got {logits.shape}")
    labels = ops.as_tensor(target, device=logits.device).astype("int32")
    batch, frames, classes = logits.shape
    if labels.ndim != 2 or labels.shape[0] != batch:
        raise ValueError(f"ctc_loss: target of shape (batch, labels) for a batch of {batch}, got {labels.shape}")
    if not -classes <= mask_index < classes:
        raise ValueError(f"ctc_loss: mask_index {mask_index} is not one of the {classes} classes")
    blank = mask_index % classes
    label_lengths = ops.as_tensor(target_length, device=logits.device).astype("int32").reshape(batch)
    frame_lengths = ops.as_tensor(output_length, device=logits.device).astype("int32").reshape(batch)
    # Labels past each row's length are padding, of any value (keras-io pads with 99): blanks here.
    positions = ops.arange(labels.shape[1], dtype="int32", device=logits.device)
    labels = ops.where(positions[None, :] < label_lengths[:, None], labels, blank)
    log_probs = ops.log_softmax(logits.astype("float32") if not logits.dtype.is_float else logits, axis=-1)
    states = 2 * labels.shape[1] + 1
    # The labels with blanks around them: blank, l1, blank, l2, ..., blank.
    blanks = ops.full((batch, labels.shape[1]), blank, dtype="int32", device=logits.device)
    extended = ops.concatenate([ops.stack([blanks, labels], axis=2).reshape(batch, states - 1), blanks[:, :1]], axis=1)
    emissions = ops.take_along_axis(log_probs, ops.broadcast_to(extended[:, None, :], (batch, frames, states)), axis=2)
    # A state may be reached from two states back when it is a label unlike the one before.
    before = ops.concatenate([extended[:, :2] * 0 + blank, extended[:, :-2]], axis=1)
    skips = (extended != blank) & (extended != before)
    first = np.full(states, _IMPOSSIBLE, np.float32)
    first[:2] = 0.0
    alpha = emissions[:, 0] + ops.as_tensor(first, dtype=log_probs.dtype, device=logits.device)
    impossible = ops.full((batch, states), _IMPOSSIBLE, dtype=alpha.dtype, device=alpha.device)
    for t in range(1, frames):
        moved = _log_add(alpha, _shifted(alpha, 1), ops.where(skips, _shifted(alpha, 2), impossible))
        alpha = ops.where((frame_lengths > t)[:, None], moved + emissions[:, t], alpha)
    last = (2 * label_lengths)[:, None]
    ends = ops.take_along_axis(alpha, ops.concatenate([last, ops.maximum(last - 1, 0)], axis=1), axis=1)
    one_end = (label_lengths == 0)[:, None] & ops.as_tensor(np.array([[False, True]]), device=alpha.device)
    ends = ops.where(one_end, impossible[:, :2], ends)
    return -_log_add(ends[:, 0], ends[:, 1])


def greedy_decode(
    inputs: Any, sequence_lengths: Any, merge_repeated: bool = True, mask_index: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """The most likely class of each frame, repeats merged and blanks (``mask_index``)
    dropped, as (batch, frames) labels padded with -1, and each example's score, minus the
    sum of its frames' greatest inputs (TensorFlow's greedy decoder)."""
    scores = np.asarray(inputs.numpy() if isinstance(inputs, Tensor) else inputs, np.float64)
    if scores.ndim != 3:
        raise ValueError(f"ctc_decode: inputs of shape (batch, frames, classes), got {scores.shape}")
    batch, frames, classes = scores.shape
    lengths = np.asarray(sequence_lengths.numpy() if isinstance(sequence_lengths, Tensor) else sequence_lengths)
    lengths = lengths.reshape(batch).astype(np.int64)
    blank = mask_index % classes
    best = scores.argmax(-1)
    decoded = np.full((batch, frames), -1, np.int64)
    totals = np.zeros(batch)
    for b in range(batch):
        length = min(int(lengths[b]), frames)
        path = best[b, :length]
        totals[b] = -scores[b, np.arange(length), path].sum()
        if merge_repeated:
            path = path[np.r_[True, path[1:] != path[:-1]]] if length else path
        kept = path[path != blank]
        decoded[b, : len(kept)] = kept
    return decoded, totals


def ctc_decode(
    inputs: Any,
    sequence_lengths: Any,
    strategy: str = "greedy",
    beam_width: int = 100,
    top_paths: int = 1,
    merge_repeated: bool = True,
    mask_index: int = 0,
) -> tuple[Tensor, Tensor]:
    """``keras.ops.ctc_decode``: (decoded (top_paths, batch, frames) padded with -1,
    scores (batch, top_paths)); the greedy strategy only."""
    if strategy != "greedy" or top_paths != 1:
        raise NotImplementedError(
            f"ctc_decode: strategy={strategy!r} with top_paths={top_paths}; braze decodes greedily, one path"
        )
    decoded, scores = greedy_decode(inputs, sequence_lengths, merge_repeated, mask_index)
    return ops.tensor(decoded[None].astype(np.int32)), ops.tensor(scores[:, None].astype(np.float32))


def ctc_batch_cost(y_true: Any, y_pred: Any, input_length: Any, label_length: Any) -> Tensor:
    """tf.keras's ``backend.ctc_batch_cost``: the loss (batch, 1) of the labels ``y_true``
    given the softmax probabilities ``y_pred`` (batch, T, classes), whose last class is the
    blank; the lengths come as (batch, 1)."""
    probabilities = ops.as_tensor(y_pred)
    logits = ops.log(probabilities + 1e-7)  # Keras's epsilon; the loss's log-softmax leaves them as they are
    loss = ctc_loss(y_true, logits, label_length, input_length, mask_index=-1)
    return loss.reshape(-1, 1)


def ctc(y_true: Any, y_pred: Any) -> Tensor:
    """``keras.losses.ctc``: ``ctc_loss`` of the labels ``y_true`` (batch, S) given the
    logits ``y_pred`` (batch, T, classes), every frame counted; class 0 is the blank and
    pads the labels, so a row's labels are its nonzero ones, as Keras counts them."""
    labels, logits = ops.as_tensor(y_true), ops.as_tensor(y_pred)
    if labels.ndim != 2 or logits.ndim != 3:
        raise ValueError(
            f"ctc: y_true of shape (batch, labels) and y_pred of shape (batch, frames, classes), got {labels.shape} "
            f"and {logits.shape}"
        )
    lengths = ops.sum((labels != 0).astype("int32"), axis=-1)
    return ctc_loss(labels, logits, lengths, np.full(labels.shape[0], logits.shape[1]), mask_index=0)


def backend_ctc_decode(
    y_pred: Any, input_length: Any, greedy: bool = True, beam_width: int = 100, top_paths: int = 1
) -> tuple[list[Tensor], Tensor]:
    """tf.keras's ``backend.ctc_decode`` of softmax probabilities whose last class is the
    blank: ([decoded (batch, frames) padded with -1], log probabilities (batch, 1))."""
    if not greedy or top_paths != 1:
        raise NotImplementedError("ctc_decode: braze decodes greedily, one path (greedy=True, top_paths=1)")
    probabilities = np.asarray(y_pred.numpy() if isinstance(y_pred, Tensor) else y_pred, np.float64)
    decoded, scores = greedy_decode(np.log(probabilities + 1e-7), input_length, mask_index=-1)
    return [ops.tensor(decoded)], ops.tensor(scores[:, None].astype(np.float32))
