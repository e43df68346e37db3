"""The CPU targets native-code tests run for: ``native`` and every x86-64 level this host
can run that ``native`` is not (so each vector width the host supports is covered)."""

from __future__ import annotations

from braze.backends import cpu
from braze.backends.cpu.compiler import find_compiler
from braze.backends.cpu.target import host_levels


def runnable_targets() -> list[str]:
    if not cpu.available():
        return ["native"]
    native = find_compiler("native").target.level
    return ["native", *(level for level in host_levels() if level != native)]


def with_parallel() -> list[str]:
    """runnable_targets and ``native-parallel``: native code with the parallel thresholds at
    zero, so that small kernels run their parallel code too (use_target sets it up)."""
    return [*runnable_targets(), "native-parallel"]


def use_target(target: str, monkeypatch) -> str:
    """Make ``target`` (one of with_parallel) the one compiled for; returns its
    BRAZE_CPU_TARGET name."""
    if target == "native-parallel":
        from braze.backends.cpu import loops

        target = "native"
        monkeypatch.setattr(loops, "PARALLEL_MIN_ELEMENTS", 0)
        monkeypatch.setattr(loops, "PARALLEL_MIN_MACS", 0)
    monkeypatch.setenv("BRAZE_CPU_TARGET", target)
    return target


def capture_sources(monkeypatch) -> list[str]:
    """The C translation units of every library compiled from now on (in the test's
    monkeypatch), appended to the list returned as they are compiled."""
    sources: list[str] = []
    compile_library = cpu.compile_library
    monkeypatch.setattr(
        cpu, "compile_library", lambda c, units, *a: sources.extend(units) or compile_library(c, units, *a)
    )
    return sources
