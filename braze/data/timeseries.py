"""``keras.utils.timeseries_dataset_from_array``: windows over a series, with the value
each window predicts, as a ``tf.data.Dataset`` of batches."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from braze.data.dataset import Dataset


def _positive(name: str, value: int | None, allow_none: bool = False) -> None:
    if (value is None and not allow_none) or (value is not None and (int(value) != value or value < 1)):
        raise ValueError(f"timeseries_dataset_from_array: {name} must be a positive integer, got {value!r}")


def timeseries_dataset_from_array(
    data: Any,
    targets: Any,
    sequence_length: int,
    sequence_stride: int = 1,
    sampling_rate: int = 1,
    batch_size: int | None = 128,
    shuffle: bool = False,
    seed: int | None = None,
    start_index: int | None = None,
    end_index: int | None = None,
) -> Dataset:
    """Keras's windows over ``data[start_index:end_index]``: the window starting at row ``i``
    holds rows ``i, i + sampling_rate, ...`` (``sequence_length`` of them), windows start
    every ``sequence_stride`` rows, and its target is ``targets[start_index + i]`` (None: the
    windows alone). ``shuffle`` orders the windows once, by ``seed``, as Keras does;
    ``batch_size`` None gives single windows."""
    for name, value in (("sequence_length", sequence_length), ("sequence_stride", sequence_stride)):
        _positive(name, value)
    _positive("sampling_rate", sampling_rate)
    _positive("batch_size", batch_size, allow_none=True)
    series = np.asarray(data.numpy() if hasattr(data, "numpy") else data)
    start = 0 if start_index is None else int(start_index)
    end = len(series) if end_index is None else int(end_index)
    if not 0 <= start < end <= len(series):
        raise ValueError(
            f"timeseries_dataset_from_array: start_index {start_index} and end_index {end_index} must satisfy "
            f"0 <= start_index < end_index <= {len(series)}"
        )
    series = series[start:end]
    answers = None if targets is None else np.asarray(targets.numpy() if hasattr(targets, "numpy") else targets)
    count = len(series) - (sequence_length - 1) * sampling_rate
    if answers is not None:
        answers = answers[start:end]
        count = min(count, len(answers))
    starts = np.arange(0, max(count, 0), sequence_stride)
    if shuffle:
        np.random.RandomState(np.random.randint(1e6) if seed is None else seed).shuffle(starts)
    offsets = np.arange(sequence_length) * sampling_rate
    step = batch_size or 1

    def generate() -> Iterator[Any]:
        for first in range(0, len(starts), step):
            chosen = starts[first : first + step] if batch_size else starts[first]
            windows = series[np.add.outer(chosen, offsets)]
            yield windows if answers is None else (windows, answers[chosen])

    return Dataset(generate, -(-len(starts) // step))
