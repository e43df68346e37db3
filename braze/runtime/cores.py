"""How many cores this process may use: a question of the machine, not of a backend
(the CPU target sizes its thread pool by it; the launcher splits it between ranks)."""

from __future__ import annotations

import math
import os
from pathlib import Path


def _cgroup_cpus() -> float | None:
    """The CPU quota of this process's cgroup, in cores (None when unlimited)."""
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").read_text())
        period = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us").read_text())
        return quota / period if quota > 0 else None
    except (OSError, ValueError):
        return None


def available_cores() -> int:
    """The cores this process may use: its affinity mask, capped by its cgroup's quota."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = _cgroup_cpus()
    return max(1, min(cores, math.ceil(quota))) if quota else max(1, cores)
