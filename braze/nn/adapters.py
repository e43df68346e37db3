"""What ``fit``, ``evaluate`` and ``predict`` accept, turned into batches, as Keras does.

``x`` may be a NumPy array or tensor (with ``y`` beside it), an ``(x, y)`` pair of arrays,
or anything that yields ``(x, y)`` batches: a braze ``DataLoader`` or ``ImageFolder``, a
list, a generator. Arrays are cut into ``batch_size`` batches (32 by default), reshuffled
each epoch with braze's default generator (so ``braze.manual_seed`` makes runs repeatable).
A re-iterable source starts over each epoch; a one-shot iterator (a generator) continues
where the last epoch stopped, as Keras's ``fit_generator`` did.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from braze.data import DataLoader
from braze.ops.random import default_generator
from braze.tensor import Tensor

DEFAULT_BATCH_SIZE = 32  # Keras's


def is_array(value: Any) -> bool:
    return isinstance(value, (np.ndarray, Tensor))


def as_input(value: Any, model: Any) -> np.ndarray:
    """A host array for ``model``: float64 becomes the dtype of its parameters (float32,
    Keras's floatx, unless the model was converted with ``model.to(dtype=...)``)."""
    array = np.asarray(value)
    if array.dtype != np.float64:
        return array
    params = model.parameters()
    return array.astype(params[0].dtype.numpy if params else np.float32)


class Batches:
    """The batches of one epoch at a time from ``source``; each is ``(x, y)``, or ``x`` for
    ``predict`` (``inputs_only``), which takes the first item of a pair."""

    def __init__(self, source: Iterable, caller: str, inputs_only: bool = False) -> None:
        self.source, self.caller, self.inputs_only = source, caller, inputs_only
        self.one_shot = isinstance(source, Iterator)

    def __len__(self) -> int:
        return len(self.source) if self.sized else 0

    @property
    def sized(self) -> bool:
        """Whether the source knows its number of batches (a generator does not)."""
        return hasattr(self.source, "__len__")

    def epoch(self, steps: int | None = None) -> Iterator[Any]:
        if steps is not None and steps < 1:
            raise ValueError(f"{self.caller}: steps must be at least 1 (or None for all batches), got {steps}")
        iterator = self.source if self.one_shot else iter(self.source)
        try:
            for batch in itertools.islice(iterator, steps):
                yield self._unpack(batch)
        finally:
            if not self.one_shot and hasattr(iterator, "close"):
                iterator.close()  # a prefetching loader stops its thread now, not at collection

    def _unpack(self, batch: Any) -> Any:
        if self.inputs_only:
            return batch[0] if isinstance(batch, (tuple, list)) else batch
        if not isinstance(batch, (tuple, list)) or len(batch) != 2:
            what = f"a {len(batch)}-tuple" if isinstance(batch, (tuple, list)) else type(batch).__name__
            extra = (
                " (sample weights are not supported)" if isinstance(batch, (tuple, list)) and len(batch) == 3 else ""
            )
            raise ValueError(f"{self.caller}: each batch must be an (x, y) pair, got {what}{extra}")
        return batch


def _pair(x: Any, y: Any, caller: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The arrays of ``x, y`` or of an ``(x, y)`` pair given as ``x``; None for a source of batches."""
    if y is None and isinstance(x, tuple) and len(x) == 2 and all(is_array(a) for a in x):
        x, y = x
    if not is_array(x):
        if y is not None:
            raise ValueError(f"{caller}: y must not be given when x yields (x, y) batches ({type(x).__name__})")
        return None
    if y is None:
        raise ValueError(f"{caller}: x is an array of inputs but y (the targets) is missing")
    x, y = np.asarray(x), np.asarray(y)
    if len(x) != len(y):
        raise ValueError(f"{caller}: x has {len(x)} samples but y has {len(y)}; they must have one target per input")
    return x, y


def _arrays(arrays: tuple[np.ndarray, ...], batch_size: int | None, shuffle: bool) -> DataLoader:
    seed = default_generator.next_key() if shuffle else None
    return DataLoader(arrays, batch_size or DEFAULT_BATCH_SIZE, shuffle=shuffle, seed=seed, prefetch=0)


def batches(x: Any, y: Any, batch_size: int | None, caller: str, shuffle: bool = False) -> Batches:
    """The (x, y) batches of ``evaluate`` or of ``fit``'s validation data."""
    if x is None:
        raise ValueError(f"{caller}: no data: give x and y arrays, an (x, y) pair or a loader of batches")
    pair = _pair(x, y, caller)
    return Batches(x if pair is None else _arrays(pair, batch_size, shuffle), caller)


def training_batches(
    x: Any, y: Any, batch_size: int | None, shuffle: bool, validation_split: float, validation_data: Any
) -> tuple[Batches, Batches | None]:
    """``fit``'s training batches and validation batches (or None)."""
    if not 0 <= validation_split < 1:
        raise ValueError(f"fit: validation_split must be in [0, 1), got {validation_split}")
    validation = None
    if validation_data is not None:
        if isinstance(validation_data, tuple) and len(validation_data) == 3:
            raise ValueError("fit: validation_data with sample weights (x, y, weights) is not supported")
        validation = batches(validation_data, None, batch_size, "fit (validation_data)")
    if x is None:
        raise ValueError("fit: no data: give x and y arrays, an (x, y) pair or a loader of batches")
    pair = _pair(x, y, "fit")
    if pair is None:
        if validation_split:
            raise ValueError("fit: validation_split needs arrays; give a loader validation_data instead")
        return Batches(x, "fit"), validation
    if validation_split and validation is None:
        # Keras holds out the last samples, before any shuffling; validation_data wins.
        split = int(len(pair[0]) * (1.0 - validation_split))
        if split == 0 or split == len(pair[0]):
            raise ValueError(f"fit: validation_split={validation_split} of {len(pair[0])} samples leaves a part empty")
        if validation is None:
            validation = Batches(_arrays(tuple(a[split:] for a in pair), batch_size, False), "fit (validation)")
        pair = tuple(a[:split] for a in pair)
    return Batches(_arrays(pair, batch_size, shuffle), "fit"), validation


def prediction_batches(x: Any, batch_size: int | None) -> Batches:
    if x is None:
        raise ValueError("predict: no data: give an array of inputs or a loader of batches")
    if is_array(x):
        return Batches(_arrays((np.asarray(x),), batch_size, False), "predict", inputs_only=True)
    return Batches(x, "predict", inputs_only=True)
