"""Counters and timings of the lazy runtime, as PyTorch/XLA users know them.

Counters count events (``CacheHit``, ``CacheMiss``, ``TransferToDevice``...); timings keep
the number of samples, total, last and maximum seconds of a phase (``TraceTime``,
``CompileTime``, ``ExecuteTime``); values record sizes (``GraphNodes``). ``report()``
prints them all; ``reset()`` starts over.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass
class Timing:
    samples: int = 0
    total: float = 0.0
    last: float = 0.0
    maximum: float = 0.0

    def add(self, seconds: float) -> None:
        self.samples += 1
        self.total += seconds
        self.last = seconds
        self.maximum = max(self.maximum, seconds)


_LOCK = threading.Lock()
_COUNTERS: dict[str, int] = {}
_TIMINGS: dict[str, Timing] = {}
_VALUES: dict[str, Timing] = {}


def count(name: str, amount: int = 1) -> None:
    with _LOCK:
        _COUNTERS[name] = _COUNTERS.get(name, 0) + amount


def record(name: str, value: float) -> None:
    """Record one sample of a size (graph nodes, bytes), kept like a timing."""
    with _LOCK:
        _VALUES.setdefault(name, Timing()).add(value)


@contextlib.contextmanager
def timed(name: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        elapsed = time.perf_counter() - start
        with _LOCK:
            _TIMINGS.setdefault(name, Timing()).add(elapsed)


def counter(name: str) -> int:
    return _COUNTERS.get(name, 0)


def timing(name: str) -> Timing:
    return _TIMINGS.get(name, Timing())


def value(name: str) -> Timing:
    return _VALUES.get(name, Timing())


def counters() -> dict[str, int]:
    return dict(_COUNTERS)


def reset() -> None:
    with _LOCK:
        _COUNTERS.clear()
        _TIMINGS.clear()
        _VALUES.clear()


def report() -> str:
    """Every counter, timing and value, one block each, sorted by name."""
    lines = []
    for name, t in sorted(_TIMINGS.items()):
        mean = t.total / t.samples if t.samples else 0.0
        lines.append(
            f"Metric: {name}\n  TotalSamples: {t.samples}\n  Accumulator: {_seconds(t.total)}\n"
            f"  Mean: {_seconds(mean)}\n  Max: {_seconds(t.maximum)}"
        )
    for name, v in sorted(_VALUES.items()):
        mean = v.total / v.samples if v.samples else 0.0
        lines.append(
            f"Metric: {name}\n  TotalSamples: {v.samples}\n  Last: {v.last:g}\n  Mean: {mean:.1f}\n  Max: {v.maximum:g}"
        )
    for name, n in sorted(_COUNTERS.items()):
        lines.append(f"Counter: {name}\n  Value: {n}")
    return "\n".join(lines) if lines else "(no metrics recorded)"


def _seconds(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms" if seconds < 1 else f"{seconds:.3f} s"
