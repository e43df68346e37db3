"""The ``all_reduce`` primitive in one process (a single replica, no MPI job): its value is
its operand's, of the operand's shape, on every path to the transport. tests/distributed
runs it on two ranks."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze.ir.prims.collectives import REDUCE_OPS, all_reduce


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("path", ["eager", "reference", "cpu"])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3)], ids=["0-d", "1-d", "2-d"])
def test_one_replica_gives_back_its_operand_with_its_shape(monkeypatch, op, path, shape):
    value = np.arange(1.0, 1.0 + np.prod(shape, dtype=int), dtype=np.float32).reshape(shape) * np.float32(0.5)
    if path != "eager":
        monkeypatch.setenv("BRAZE_BACKEND", path)
    device = braze.CPU if path == "eager" else braze.LAZY_CPU
    reduced = all_reduce.bind(braze.tensor(value, device=device) * 2.0, op=op)
    result = reduced.numpy()
    assert reduced.shape == shape and result.shape == shape, (reduced.shape, result.shape)
    np.testing.assert_array_equal(result, value * 2)
