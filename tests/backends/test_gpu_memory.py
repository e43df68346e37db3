"""Device memory is pooled: freed buffers serve later requests of their size class, a
training step in its steady state asks the driver for nothing, and a request the device
cannot hold empties the pool before it is an out-of-memory error."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_device import requires_gpu_runtime

import braze
from braze.backends import gpu
from braze.backends.gpu.memory import BufferPool, size_class
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


class FakeDevice:
    """A device of ``budget`` bytes for a pool: buffers are numbered, and what was freed is noted."""

    def __init__(self, budget: int) -> None:
        self.budget, self.used, self.made, self.freed = budget, 0, 0, []

    def create(self, size: int) -> object | None:
        if self.used + size > self.budget:
            return None
        self.used += size
        self.made += 1
        return [self.made, size]  # a fresh object per buffer, as a driver handle is

    def destroy(self, buffer: list) -> None:
        self.used -= buffer[1]
        self.freed.append(buffer[0])


def test_a_request_that_does_not_fit_empties_the_pool_first():
    device = FakeDevice(budget=4 * MIB)
    pool = BufferPool(device.create, device.destroy, limit=4 * MIB)
    first, second = pool.allocate(MIB), pool.allocate(MIB)
    pool.release(first)
    pool.release(second)
    big = pool.allocate(3 * MIB)  # fits only once the two kept buffers are given back
    assert big is not None and sorted(device.freed) == [1, 2]
    assert pool.kept == 0 and pool.held == 3 * MIB == device.used
    assert pool.allocate(2 * MIB) is None  # nothing kept to give back: the device is full
    runtime = gpu.runtime()
    with pytest.raises(GpuError, match=rf"asked for {runtime.info.global_memory + 1} bytes"):
        runtime.allocate(runtime.info.global_memory + 1)


def test_freed_bytes_kept_for_reuse_are_capped():
    device = FakeDevice(budget=64 * MIB)
    pool = BufferPool(device.create, device.destroy, limit=2 * MIB)
    buffers = [pool.allocate(MIB) for _ in range(3)]
    for buffer in buffers:
        pool.release(buffer)
    pool.allocate(512)  # the pool takes in what was released when it next works
    assert pool.kept == 2 * MIB and device.freed == [3]  # the third went back to the driver
    assert pool.held == device.used == 2 * MIB + 512


def test_a_buffer_released_while_the_pool_gives_others_back_is_kept():
    """A garbage collection inside a driver call can free a tensor, whose buffer comes back
    to the pool in the middle of its own trim: it must be kept, neither lost nor leaked."""
    device = FakeDevice(budget=64 * MIB)
    pool = BufferPool(device.create, lambda buffer: (device.destroy(buffer), pool.release(late)), limit=64 * MIB)
    kept, late = pool.allocate(MIB), pool.allocate(2 * MIB)
    pool.release(kept)
    pool.trim()  # gives `kept` back; its driver call "collects" `late`
    assert device.freed == [1]
    again = pool.allocate(2 * MIB)
    assert again is late and pool.held == device.used == 2 * MIB
