"""Keras's data utilities on NumPy arrays: ``to_categorical``, ``pad_sequences``, and the
``Sequence`` (``PyDataset``) base class of a batch source that ``fit`` takes."""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Sequence as Seq
from typing import Any

import numpy as np


def to_categorical(y: Any, num_classes: int | None = None, dtype: str = "float32") -> np.ndarray:
    """One-hot rows for integer class labels (a trailing axis of 1 is dropped, as Keras does)."""
    labels = np.asarray(y, dtype=np.int64)
    if labels.ndim > 1 and labels.shape[-1] == 1:
        labels = labels.reshape(labels.shape[:-1])
    if labels.size and labels.min() < 0:
        raise ValueError(f"to_categorical: labels must be non-negative, got {labels.min()}")
    classes = int(labels.max()) + 1 if num_classes is None else int(num_classes)
    if labels.size and labels.max() >= classes:
        raise ValueError(f"to_categorical: label {labels.max()} does not fit num_classes={classes}")
    return np.eye(classes, dtype=dtype)[labels]


def pad_sequences(
    sequences: Seq[Seq[Any]],
    maxlen: int | None = None,
    dtype: str = "int32",
    padding: str = "pre",
    truncating: str = "pre",
    value: float = 0.0,
) -> np.ndarray:
    """A ``(len(sequences), maxlen)`` array: each sequence cut to ``maxlen`` (its start
    dropped for ``truncating="pre"``) and filled with ``value`` (before it for
    ``padding="pre"``), as Keras does."""
    if padding not in ("pre", "post") or truncating not in ("pre", "post"):
        raise ValueError(
            f"pad_sequences: padding and truncating must be 'pre' or 'post', got {padding!r}, {truncating!r}"
        )
    rows = [np.asarray(s) for s in sequences]
    length = max((len(r) for r in rows), default=0) if maxlen is None else int(maxlen)
    tail = next((r.shape[1:] for r in rows if len(r)), ())
    out = np.full((len(rows), length, *tail), value, dtype=dtype)
    for i, row in enumerate(rows):
        if not len(row) or not length:
            continue
        kept = row[-length:] if truncating == "pre" else row[:length]
        if padding == "post":
            out[i, : len(kept)] = kept
        else:
            out[i, length - len(kept) :] = kept
    return out


class Sequence:
    """Keras's ``Sequence`` / ``PyDataset``: define ``__len__`` (batches per epoch) and
    ``__getitem__(i)`` (batch i, an ``(x, y)`` tuple); ``on_epoch_end`` runs after each
    epoch (to reshuffle)."""

    def __init__(self, workers: int = 1, use_multiprocessing: bool = False, max_queue_size: int = 10) -> None:
        """Keras's loading options change nothing here: batches are made in order, in this process."""

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__ (the number of batches)")

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__ (batch number index)")

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]

    def on_epoch_end(self) -> None:
        """Called after every epoch."""


PyDataset = Sequence
"""Keras 3's name of ``Sequence``."""
