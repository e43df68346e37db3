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
