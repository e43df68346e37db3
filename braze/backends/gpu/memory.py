"""Device memory that is freed into a pool and handed out again, as PyTorch's caching
allocator does.

A training step allocates the same result and gradient buffers every time, and an eager
op one buffer per result: asking the driver each time costs a call per buffer, and
``cuMemFree`` waits for the whole device to go idle, which would serialize every step with
the host. Every runtime's work runs on one in-order queue (one CUDA stream, one OpenCL
command queue), so a buffer freed by the host may be handed to a later kernel at once: the
queue finishes the earlier readers first. Sizes are rounded up to a class, so a buffer
serves any request of its class; an allocation the device refuses empties the pool and is
tried once more before it is an out-of-memory error. At most a quarter of the device's
memory is kept: a workload whose shapes keep changing would otherwise keep every size it
ever used.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from braze.runtime import metrics

_SMALL = 1 << 20  # below this, sizes round up to 512 bytes; above, to 1 MiB (at most 1/16 more than asked)
_SMALL_STEP = 512
_LARGE_STEP = 1 << 20


def size_class(nbytes: int) -> int:
    """The size a request of ``nbytes`` is served with (never 0: drivers refuse empty buffers)."""
    step = _SMALL_STEP if nbytes < _SMALL else _LARGE_STEP
    return max(step, -(-nbytes // step) * step)


class BufferPool:
    """Device buffers by size class: ``allocate`` reuses a freed one or asks ``create``
    (which returns None when the device has no room); ``release`` keeps the buffer for
    reuse, up to ``limit`` bytes kept (past it, freed buffers go back to the driver).
    ``held`` is the bytes of every buffer the pool made, in use or kept.

    ``release`` runs from ``__del__``, so from any thread and in the middle of the pool's
    own work (a garbage collection inside a driver call): it only appends to a queue,
    which the other methods empty under the lock; nothing else waits on the lock from
    inside it, so it never deadlocks.
    """

    def __init__(self, create: Callable[[int], Any | None], destroy: Callable[[Any], None], limit: int) -> None:
        self._create, self._destroy, self.limit = create, destroy, limit
        self._lock = threading.Lock()
        self._released: deque[Any] = deque()
        self._free: dict[int, list[Any]] = {}
        self._sizes: dict[int, int] = {}  # the size class of every buffer made, by id
        self.held = 0
        self.kept = 0  # bytes of freed buffers kept for reuse

    def allocate(self, nbytes: int) -> Any | None:
        """A buffer of at least ``nbytes``, or None when the device has no room for it even
        with every kept buffer given back."""
        size = size_class(nbytes)
        with self._lock:
            self._take_released()
            kept = self._free.get(size)
            if kept:
                self.kept -= size
                metrics.count("DeviceBufferReused")
                return kept.pop()
            buffer = self._create(size)
            if buffer is None and self.kept:
                self._trim()
                buffer = self._create(size)
            if buffer is None:
                return None
            metrics.count("DeviceAllocation")
            self._sizes[id(buffer)] = size
            self.held += size
            return buffer

    def release(self, buffer: Any) -> None:
        self._released.append(buffer)

    def trim(self) -> None:
        """Give every kept buffer back to the driver."""
        with self._lock:
            self._take_released()
            self._trim()

    def _take_released(self) -> None:
        while self._released:
            buffer = self._released.popleft()
            size = self._sizes[id(buffer)]
            if self.kept + size > self.limit:
                self._give_back(buffer)
            else:
                self._free.setdefault(size, []).append(buffer)
                self.kept += size

    def _trim(self) -> None:
        free, self._free = self._free, {}  # taken first: a release during a driver call cannot reach it
        for buffers in free.values():
            for buffer in buffers:
                self.kept -= self._sizes[id(buffer)]
                self._give_back(buffer)

    def _give_back(self, buffer: Any) -> None:
        self.held -= self._sizes.pop(id(buffer))
        self._destroy(buffer)
