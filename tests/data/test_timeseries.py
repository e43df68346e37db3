"""keras.utils.timeseries_dataset_from_array against windows cut by hand from its
definition (start, stride, sampling rate, the index range), shuffled as a permutation of
the same windows, and fed to fit."""

from __future__ import annotations

import numpy as np
import pytest

from braze import keras

SERIES = np.arange(40, dtype=np.float32).reshape(20, 2)
TARGETS = np.arange(20) * 10


def windows_by_hand(length, stride, rate, start, end):
    found = []
    i = start
    while i + (length - 1) * rate < end:
        found.append(([SERIES[i + k * rate] for k in range(length)], TARGETS[i]))
        i += stride
    return found


@pytest.mark.parametrize(("length", "stride", "rate", "start", "end"), [(3, 1, 1, None, None), (4, 3, 2, 2, 17)])
def test_windows_and_targets_follow_the_definition(length, stride, rate, start, end):
    dataset = keras.utils.timeseries_dataset_from_array(
        SERIES,
        TARGETS,
        length,
        sequence_stride=stride,
        sampling_rate=rate,
        batch_size=4,
        start_index=start,
        end_index=end,
    )
    batches = list(dataset)
    assert len(dataset) == len(batches) and all(len(x) <= 4 for x, _ in batches)
    got = [(x, y) for xs, ys in batches for x, y in zip(xs, ys, strict=True)]
    expected = windows_by_hand(length, stride, rate, start or 0, end or len(SERIES))
    assert len(got) == len(expected)
    for (x, y), (want_x, want_y) in zip(got, expected, strict=True):
        np.testing.assert_array_equal(x, np.stack(want_x))
        assert y == want_y


def test_shuffled_windows_are_the_same_windows_in_an_order_fixed_by_the_seed():
    def shuffled(seed):
        return keras.utils.timeseries_dataset_from_array(SERIES, None, 5, batch_size=None, shuffle=True, seed=seed)

    def firsts(dataset):
        return [int(window[0, 0]) for window in dataset]

    dataset = shuffled(3)
    assert sorted(firsts(dataset)) == [2 * i for i in range(16)]
    # Shuffled once, as Keras does: every pass, and the same seed, give the same order.
    assert firsts(dataset) == firsts(dataset) == firsts(shuffled(3)) != firsts(shuffled(4))


def test_a_model_fits_on_the_windows_and_bad_arguments_are_named():
    x = np.sin(np.arange(200, dtype=np.float32) / 5)[:, None]
    dataset = keras.utils.timeseries_dataset_from_array(x[:-8], x[8:, 0], sequence_length=8, batch_size=32)
    model = keras.Sequential([keras.Input((8, 1)), keras.layers.LSTM(4), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(dataset, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2 and np.isfinite(history.history["loss"]).all()
    with pytest.raises(ValueError, match="sampling_rate must be a positive integer"):
        keras.utils.timeseries_dataset_from_array(x, None, 4, sampling_rate=0)
    with pytest.raises(ValueError, match="0 <= start_index < end_index"):
        keras.utils.timeseries_dataset_from_array(x, None, 4, start_index=150, end_index=100)
