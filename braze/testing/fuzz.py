"""The differential fuzzer: random programs and their gradients, run eagerly and on every
backend asked for (``oracle.py`` compares them); each failure is shrunk to a minimal
program (``shrink.py``) and written out.

Program ``i`` of a run with seed ``K`` is drawn from seed ``K + i``, so a failure is
reproduced exactly by ``braze fuzz --seed K+i --programs 1``.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from braze.backends import cpu
from braze.testing.generate import draw_program
from braze.testing.oracle import BACKENDS, Failure, check_batch
from braze.testing.shrink import shrink_failure, write_failure, write_stateful_failure
from braze.testing.stateful import StatefulProgram

DEFAULT_BACKENDS = BACKENDS[:3]  # "jit" and "jit-state" (the user's path, compiles per program) on request


@dataclass
class FuzzReport:
    seed: int
    backends: tuple[str, ...]
    programs: int = 0
    seconds: float = 0.0
    failures: list[Failure] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        crashes = sum(f.kind == "crash" for f in self.failures)
        mismatches = len(self.failures) - crashes
        rate = self.programs / self.seconds if self.seconds else 0.0
        head = (
            f"braze fuzz: {self.programs} programs (seeds {self.seed}..{self.seed + self.programs - 1}) "
            f"on {', '.join(self.backends)}: {crashes} crashes, {mismatches} mismatches "
            f"in {self.seconds:.1f} s ({rate:.1f} programs/s)"
        )
        return "\n".join([head, *(f.describe() for f in self.failures)])


def available_backends() -> tuple[str, ...]:
    return DEFAULT_BACKENDS if cpu.available() else ("reference",)


def fuzz(
    programs: int | None = None,
    seconds: float | None = None,
    seed: int = 0,
    backends: Sequence[str] | None = None,
    out: str | Path | None = "fuzz-failures",
    shrink: bool = True,
    batch_size: int = 32,
    log: TextIO | None = None,
) -> FuzzReport:
    """Run ``programs`` random programs (or as many as fit in ``seconds``) from ``seed``.

    Each failure is shrunk to a minimal failing program and written under ``out`` (with
    ``shrink``); the report lists them. ``log`` (``braze fuzz``: stderr) receives a progress
    line and the summary."""
    backends = tuple(backends or available_backends())
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown:
        raise ValueError(f"unknown backend(s) {unknown}: expected some of {list(BACKENDS)}")
    if any(b != "reference" for b in backends) and not cpu.available():
        raise ValueError("the cpu backends need a C compiler (set $CC or install gcc or clang)")
    if programs is None and seconds is None:
        programs = 100
    report = FuzzReport(seed, backends)
    start = time.perf_counter()
    progress = _Progress(log, programs)
    # Every batch is a new library: they go in a cache of their own, removed with the run.
    with tempfile.TemporaryDirectory(prefix="braze-fuzz-") as scratch:
        cache = cpu.DiskCache(Path(scratch)) if cpu.available() else None
        while programs is None or report.programs < programs:
            if seconds is not None and time.perf_counter() - start >= seconds:
                break
            count = batch_size if programs is None else min(batch_size, programs - report.programs)
            batch = [draw_program(seed + report.programs + k) for k in range(count)]
            failures = check_batch(batch, backends, cache)
            report.programs += count
            for failure in _first_per_program(failures):
                if isinstance(failure.program, StatefulProgram):  # reproduced by its seed, not shrunk
                    failure.folder = None if out is None else write_stateful_failure(failure, Path(out))
                elif shrink and out is not None:
                    failure.folder = write_failure(shrink_failure(failure, cache), Path(out))
                report.failures.append(failure)
            report.seconds = time.perf_counter() - start
            progress.update(report)
    report.seconds = time.perf_counter() - start
    progress.finish(report)
    return report


def _first_per_program(failures: list[Failure]) -> list[Failure]:
    seen: dict[int, Failure] = {}
    for failure in failures:
        seen.setdefault(failure.program.seed, failure)
    return list(seen.values())


class _Progress:
    """One line, rewritten in place on a terminal (otherwise a line every 5%, or every 500 programs)."""

    def __init__(self, stream: TextIO | None, total: int | None) -> None:
        self.stream, self.total = stream, total
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self.printed = -1

    def update(self, report: FuzzReport) -> None:
        if self.stream is None:
            return
        done = report.programs
        of = f"/{self.total}" if self.total else ""
        rate = done / report.seconds if report.seconds else 0.0
        line = f"fuzz: {done}{of} programs, {len(report.failures)} failing, {rate:.1f} programs/s"
        if self.tty:
            self.stream.write("\r" + line)
        else:
            step = max(1, (self.total or 10000) // 20)
            if done // step == self.printed:
                return
            self.printed = done // step
            self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self, report: FuzzReport) -> None:
        if self.stream is None:
            return
        self.stream.write(("\n" if self.tty else "") + report.summary() + "\n")
        self.stream.flush()
