"""Device memory is pooled: freed buffers serve later requests of their size class, a
training step in its steady state asks the driver for nothing, and a request the device
cannot hold empties the pool before it is an out-of-memory error."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from gpu_device import requires_gpu_runtime

import braze
from braze.backends import gpu
from braze.backends.gpu.memory import size_class
from braze.backends.gpu.target import GpuError
from braze.runtime import metrics

pytestmark = requires_gpu_runtime

MIB = 1 << 20


@pytest.mark.parametrize("nbytes", [0, 1, 511, 512, 513, 4096 + 3, MIB - 1, MIB, MIB + 1, 37 * MIB + 12345])
def test_a_size_class_holds_the_request_and_wastes_little(nbytes):
    size = size_class(nbytes)
    assert size >= max(nbytes, 1)
    step = 512 if nbytes < MIB else MIB
    assert size % step == 0 and size - max(nbytes, 1) < step


def test_a_steady_training_step_reuses_its_device_buffers():
    device = "gpu:lazy"
    rng = np.random.default_rng(0)
    w = braze.tensor(rng.standard_normal((6, 3)).astype(np.float32), device=device, requires_grad=True)
    x = braze.tensor(rng.standard_normal((5, 6)).astype(np.float32), device=device)
    optimizer = braze.optim.SGD([w], lr=0.1)
    expected = w.numpy().astype(np.float64)
    xs = x.numpy().astype(np.float64)
    for step in range(5):
        if step == 2:
            allocations, reused = metrics.counter("DeviceAllocation"), metrics.counter("DeviceBufferReused")
        optimizer.zero_grad()
        loss = braze.tanh(x @ w).sum()
        loss.backward()
        optimizer.step()
        expected -= 0.1 * xs.T @ (1 - np.tanh(xs @ expected) ** 2)
    assert metrics.counter("DeviceAllocation") == allocations
    assert metrics.counter("DeviceBufferReused") > reused
    np.testing.assert_allclose(w.numpy(), expected, rtol=1e-4, atol=1e-5)


def test_a_request_that_does_not_fit_empties_the_pool_first(monkeypatch):
    runtime = gpu.runtime()
    pool = runtime.pool
    kept = [runtime.allocate(MIB) for _ in range(2)]
    for buffer in kept:
        runtime.release(buffer)
    assert pool.kept >= 2 * MIB
    # A device with room for what is in use and three more MiB, two of them kept in the pool.
    in_use = pool.held - pool.kept
    monkeypatch.setattr(runtime, "info", dataclasses.replace(runtime.info, global_memory=in_use + 3 * MIB))
    allocations = metrics.counter("DeviceAllocation")
    big = runtime.allocate(3 * MIB)  # fits only once the kept buffers are given back
    assert pool.kept == 0 and metrics.counter("DeviceAllocation") == allocations + 1
    with pytest.raises(GpuError, match=rf"asked for {MIB + 1} bytes, 0 bytes free"):
        runtime.allocate(MIB + 1)
    runtime.release(big)
