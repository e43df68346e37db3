"""What a training step holds in memory, in each mode, and the process's resident peak.

- eager: the parameters and optimizer slots, plus the most bytes that the step's NumPy
  arrays (activations, gradients, new values) held at once, as ``tracemalloc`` counts them
  (NumPy reports every array buffer to it);
- compiled: the parameters and optimizer slots, plus the step executable's temporary arena
  and its kernels' scratch buffers, the only memory a compiled step adds (its outputs are
  written over the parameters they update);
- the process's peak resident set (``VmHWM``), reset before each mode where Linux allows,
  so each mode's figure is its own.
"""

from __future__ import annotations

import os
import resource
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from braze.backends.cpu.emit import scratch_layout
from braze.bench.steps import Workload
from braze.lazy import EXECUTOR
from braze.runtime.cache import ExecutableCache
from braze.runtime.device import CPU, LAZY_CPU

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def reset_peak_rss() -> bool:
    """Start the process's resident high-water mark over (Linux 4.0+); False where it cannot."""
    try:
        _CLEAR_REFS.write_text("5")
        return True
    except OSError:
        return False


def peak_rss_bytes() -> int:
    """The process's peak resident set since the last reset (or since it started)."""
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux


def _state_bytes(workload: Workload) -> int:
    """Parameters and optimizer slots."""
    slots = [value for state in workload.optimizer.state for value in (state or {}).values()]
    return sum(t.size * t.dtype.itemsize for t in [*workload.model.parameters(), *slots])


def eager_step_bytes(make: Callable[..., Workload]) -> int:
    workload = make(CPU)
    x, y = workload.batch(CPU)
    workload.step(x, y)  # the optimizer's slots exist from the first step on
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        workload.step(x, y)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return _state_bytes(workload) + peak - before


def compiled_step_bytes(make: Callable[..., Workload]) -> int:
    workload = make(LAZY_CPU)
    x, y = workload.batch(LAZY_CPU)
    # A cache of its own, so the step's executables are the ones found, whatever this
    # process compiled before (the disk cache keeps compiling them again cheap).
    shared, EXECUTOR.cache = EXECUTOR.cache, ExecutableCache()
    try:
        workload.step(x, y)
        workload.step(x, y)
        executables = EXECUTOR.cache.executables()
    finally:
        EXECUTOR.cache = shared
    return _state_bytes(workload) + max(map(_temporary_bytes, executables), default=0)


def _temporary_bytes(executable: object) -> int:
    """An executable's arena and scratch bytes (none for the reference interpreter's)."""
    plan = getattr(executable, "plan", None)
    if plan is None:
        return 0
    threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    kept, _, region = scratch_layout(plan.scratch, threads)
    return plan.arena_bytes + sum(kept.values()) + region
