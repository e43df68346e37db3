"""Boolean masks as indices, as NumPy and PyTorch read them (``x[x > 0]``, ``x[:, keep]``):
the positions of the mask's True elements, eagerly and on a lazy device (a barrier), an
error naming the cause under ``@jit``, with gradients that add up where they select."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze.ir.errors import TraceError

DEVICES = [braze.CPU, braze.LAZY_CPU]
DEVICE_IDS = ["eager", "lazy"]
VALUES = np.arange(60, dtype=np.float32).reshape(3, 4, 5) - 29.5
ROWS = np.array([True, False, True])
COLUMNS = np.array([False, True, True, False, True])

MASK_INDICES = [
    ROWS,
    VALUES > 0,  # a mask of the whole shape: a 1-D result
    VALUES[:, :, 0] > 0,  # two axes of three
    (slice(None), [True, False, False, True]),
    (Ellipsis, COLUMNS),
    (ROWS, 1),
    (ROWS, slice(None), COLUMNS[[0, 1, 2, 3, 4]] & np.array([1, 1, 0, 0, 1], bool)),  # two masks broadcast
    (0, slice(None), COLUMNS),  # the integer and the mask are apart: their axis goes first
    (None, ROWS, None),
    (ROWS, [0, 3]),  # two True elements beside two indices: broadcast together
    (True, ROWS),
    [True, False, True],  # a list of booleans is a mask
    np.zeros(3, bool),  # selects nothing
    (np.array(True), ROWS),
]


@pytest.mark.parametrize("index", MASK_INDICES, ids=repr)
@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
def test_a_numpy_boolean_mask_selects_what_numpy_selects(index, device):
    expected = VALUES[index]
    got = braze.tensor(VALUES, device=device)[index]
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got.numpy(), expected)


@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
def test_a_tensor_mask_is_read_and_selects_as_numpy(device):
    x = braze.tensor(VALUES, device=device)
    np.testing.assert_array_equal((x[x > 0]).numpy(), VALUES[VALUES > 0])
    keep = braze.tensor(COLUMNS, device=device)
    np.testing.assert_array_equal(x[:, 1:, keep].numpy(), VALUES[:, 1:, COLUMNS])
    np.testing.assert_array_equal(x[braze.tensor(True, device=device)].numpy(), VALUES[True])


def test_a_mask_on_the_lazy_device_runs_what_it_depends_on_first():
    x = braze.tensor(VALUES, device=braze.LAZY_CPU)
    before = braze.metrics.counter("DataDependentShape")
    selected = x[(x * 2.0) > 10.0] + 1.0
    assert braze.metrics.counter("DataDependentShape") == before + 1
    np.testing.assert_array_equal(selected.numpy(), VALUES[VALUES * 2.0 > 10.0] + 1.0)


def test_a_masked_selection_differentiates_into_the_selected_elements():
    weights = np.random.default_rng(0).standard_normal(int((VALUES > 3).sum())).astype(np.float32)

    def loss(t):
        return (t[t > 3.0] * braze.tensor(weights)).sum()

    grad = braze.grad(loss)(braze.tensor(VALUES))
    expected = np.zeros_like(VALUES)
    expected[VALUES > 3] = weights
    np.testing.assert_array_equal(grad.numpy(), expected)
    x = braze.tensor(VALUES, requires_grad=True)
    x[:, :, COLUMNS].sum().backward()
    expected = np.zeros_like(VALUES)
    expected[:, :, COLUMNS] = 1.0
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_a_constant_mask_compiles_and_a_traced_one_is_refused_by_name():
    x = braze.tensor(VALUES)
    np.testing.assert_array_equal(braze.jit(lambda t: t[:, :, COLUMNS])(x).numpy(), VALUES[:, :, COLUMNS])
    with pytest.raises(TraceError, match="indexing: the shape of its result depends on the values"):
        braze.jit(lambda t: t[t > 0])(x)


def test_masks_that_do_not_fit_are_numpys_index_errors():
    x = braze.tensor(VALUES)
    for index in (np.ones(4, bool), (slice(None), np.ones(5, bool)), np.ones((3, 5), bool)):
        with pytest.raises(IndexError):
            VALUES[index]
        with pytest.raises(IndexError, match="boolean mask of shape"):
            x[index]
    with pytest.raises(IndexError, match="too many indices"):
        x[np.ones((3, 4), bool), 0, 0]
