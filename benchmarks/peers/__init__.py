"""Peer frameworks (PyTorch on the CPU or a CUDA GPU, JAX, TensorFlow) on braze's benchmark
workloads: LeNet, the XLA article's CNN and nanoGPT's GPT (two sizes).

Each framework module (``torch_impl``, ``torch_cuda_impl``, ``jax_impl``, ``tf_impl``) has
``MODES``, ``version()`` and ``make_step(workload, mode) -> (step, description)``; ``step()``
runs one full training step on the shared synthetic batch and returns the loss as a float
once the step has finished.

``run_peers`` measures every installed framework and mode and returns one row per
(workload, framework, mode)::

    {"workload", "framework", "mode", "median_ms", "first_step_s", "version",
     "first_loss", "steps", "description"}

By default each framework runs in its own subprocess (so their thread pools and compilers do
not share a process) under the interpreter named by ``python=``, else the environment variable
``BRAZE_PEERS_PYTHON``, else the running one: braze's venv can measure the peers installed in
another venv. A framework that is not importable there is skipped with a note.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from . import gpt_common  # noqa: F401 - registers the GPT workloads
from .common import WORKLOADS, workload

# torch-cuda: PyTorch on the GPU, the peer of braze's GPU backend (bench_step.py --device gpu).
FRAMEWORKS = {"torch": "torch_impl", "jax": "jax_impl", "tf": "tf_impl", "torch-cuda": "torch_cuda_impl"}
DEFAULT_WORKLOADS = tuple(WORKLOADS)
DEFAULT_FRAMEWORKS = ("torch", "jax", "tf")
WARMUP_STEPS = 2
SCRIPT = Path(__file__).resolve().parent.parent / "bench_peers.py"

Steps = int | Mapping[str, int] | None

__all__ = [
    "DEFAULT_FRAMEWORKS",
    "DEFAULT_WORKLOADS",
    "FRAMEWORKS",
    "Result",
    "collect",
    "format_table",
    "machine_info",
    "run_peers",
    "time_step",
]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class Result:
    rows: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)


def steps_for(name: str, steps: Steps) -> int:
    if steps is None:
        return workload(name).default_steps
    if isinstance(steps, Mapping):
        return int(steps.get(name, workload(name).default_steps))
    return int(steps)


def time_step(step: Callable[[], float], steps: int, warmup: int = WARMUP_STEPS) -> tuple[float, float, float]:
    """(first step seconds, median of ``steps`` timed steps in ms, first-step loss); the first
    step (trace + compile + run) is timed alone, then ``warmup`` untimed steps."""
    start = time.perf_counter()
    first_loss = step()
    first = time.perf_counter() - start
    for _ in range(warmup):
        step()
    times = []
    for _ in range(max(steps, 1)):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return first, statistics.median(times) * 1e3, first_loss


def peak_rss_mb(reset: bool = False) -> float | None:
    """This process's resident high-water mark in MiB (Linux's VmHWM), or None where there is
    none; ``reset`` starts it over instead (Linux 4.0+), so each mode's peak is its own."""
    try:
        if reset:
            Path("/proc/self/clear_refs").write_text("5")
            return None
        line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return None
    return round(int(line.split()[1]) / 1024, 1)


def _load(framework: str):
    if framework not in FRAMEWORKS:
        raise ValueError(f"unknown framework {framework!r}; choose from {', '.join(FRAMEWORKS)}")
    return importlib.import_module(f".{FRAMEWORKS[framework]}", __name__)


def _measure_in_process(
    workloads: Iterable[str], frameworks: Iterable[str], steps: Steps, log: Callable[[str], None]
) -> Result:
    import numpy

    result = Result(versions={"python": f"{platform.python_version()} ({sys.executable})", "numpy": numpy.__version__})
    workloads = list(workloads)
    for framework in frameworks:
        module = _load(framework)
        try:
            version = module.version()
        except Exception as error:  # ImportError, or a broken install
            note = f"{framework}: skipped, not importable in {sys.executable} ({type(error).__name__}: {error})"
            result.notes.append(note)
            log(note)
            continue
        result.versions[framework] = version
        for name in workloads:
            workload(name)
            n = steps_for(name, steps)
            for mode in module.MODES:
                log(f"{name} {framework}/{mode}: first step, {WARMUP_STEPS} warm-up, {n} timed ...")
                try:
                    peak_rss_mb(reset=True)
                    step, description = module.make_step(name, mode)
                    first, median_ms, first_loss = time_step(step, n)
                    rss = peak_rss_mb()
                except Exception as error:
                    note = f"{name} {framework}/{mode}: failed ({type(error).__name__}: {str(error)[:300]})"
                    result.notes.append(note)
                    log(note)
                    continue
                finally:
                    step = None
                    gc.collect()
                row = {
                    "workload": name,
                    "framework": framework,
                    "mode": mode,
                    "median_ms": round(median_ms, 3),
                    "first_step_s": round(first, 3),
                    "version": version,
                    "first_loss": first_loss,
                    "peak_rss_mb": rss,
                    "steps": n,
                    "description": description,
                }
                result.rows.append(row)
                log(f"  median {median_ms:.1f} ms, first step {first:.2f} s, first loss {first_loss:.5f}")
    return result


def _measure_subprocess(
    workloads: list[str],
    framework: str,
    steps: Steps,
    python: str,
    log: Callable[[str], None],
    timeout: float | None,
) -> Result:
    with tempfile.TemporaryDirectory(prefix="braze-peers-") as tmp:
        out = Path(tmp) / "peers.json"
        command = [python, str(SCRIPT), "--in-process", "--quiet", "--json", str(out)]
        command += ["--frameworks", framework, "--workloads", ",".join(workloads)]
        if steps is not None:
            command += ["--steps", format_steps(steps)]
        try:
            proc = subprocess.run(command, stdin=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            note = f"{framework}: timed out after {timeout} s; its rows are lost"
            log(note)
            return Result(notes=[note])
        except OSError as error:
            note = f"{framework}: could not start {python} ({error})"
            log(note)
            return Result(notes=[note])
        if proc.returncode != 0 or not out.exists():
            note = f"{framework}: subprocess exited with {proc.returncode}"
            log(note)
            return Result(notes=[note])
        data = json.loads(out.read_text())
    return Result(data["rows"], data["notes"], data["machine"]["versions"])


def collect(
    workloads: Iterable[str] = DEFAULT_WORKLOADS,
    frameworks: Iterable[str] = DEFAULT_FRAMEWORKS,
    steps: Steps = None,
    *,
    python: str | None = None,
    isolate: bool = True,
    log: Callable[[str], None] = _stderr,
    timeout: float | None = None,
) -> Result:
    """Rows, notes (skips and failures) and framework versions; see ``run_peers``."""
    workloads, frameworks = list(workloads), list(frameworks)
    for name in workloads:
        workload(name)
    for framework in frameworks:
        _load(framework)
    if not isolate:
        if python is not None and python != sys.executable:
            raise ValueError("python= needs isolate=True")
        return _measure_in_process(workloads, frameworks, steps, log)
    python = python or os.environ.get("BRAZE_PEERS_PYTHON") or sys.executable
    result = Result()
    for framework in frameworks:
        part = _measure_subprocess(workloads, framework, steps, python, log, timeout)
        result.rows += part.rows
        result.notes += part.notes
        result.versions.update(part.versions)
    order = {name: i for i, name in enumerate(workloads)}
    result.rows.sort(key=lambda row: order[row["workload"]])  # stable: framework order kept
    return result


def run_peers(
    workloads: Iterable[str] = DEFAULT_WORKLOADS,
    frameworks: Iterable[str] = DEFAULT_FRAMEWORKS,
    steps: Steps = None,
    *,
    python: str | None = None,
    isolate: bool = True,
    log: Callable[[str], None] = _stderr,
    timeout: float | None = None,
) -> list[dict]:
    """Measure each installed peer framework and mode on each workload.

    ``steps``: timed steps per workload (an int, a ``{workload: n}`` mapping, or None for the
    defaults, 20 for LeNet and 5 for the CNN). ``python``: interpreter that has the peers
    (default ``$BRAZE_PEERS_PYTHON``, else this one). ``isolate``: one subprocess per framework
    (``False`` measures in this process). ``log`` gets progress lines and the notes for skipped
    or failed frameworks/modes. ``timeout``: seconds per framework subprocess.
    Returns rows ``{"workload", "framework", "mode", "median_ms", "first_step_s", "version",
    "first_loss", "steps", "description"}``, workloads in the order given.
    """
    return collect(workloads, frameworks, steps, python=python, isolate=isolate, log=log, timeout=timeout).rows


def format_steps(steps: Steps) -> str:
    if isinstance(steps, Mapping):
        return ",".join(f"{name}={n}" for name, n in steps.items())
    return str(steps)


def parse_steps(text: str | None) -> Steps:
    """``"20"`` -> 20, ``"lenet=20,cnn=5"`` -> {"lenet": 20, "cnn": 5}, None -> None."""
    if text is None:
        return None
    if "=" not in text:
        return int(text)
    pairs = (item.split("=", 1) for item in text.split(",") if item)
    return {name.strip(): int(n) for name, n in pairs}


def machine_info(versions: Mapping[str, str] | None = None) -> dict:
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "affinity_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": platform.python_version(),
        "versions": dict(versions or {}),
    }


def format_table(rows: Iterable[Mapping]) -> str:
    """A plain-text table: workload, framework/mode, median step ms, first step s, version."""
    header = ("workload", "framework/mode", "median step ms", "first step s", "version")
    lines = [header]
    for row in rows:
        median = row.get("median_ms")
        first = row.get("first_step_s")
        lines.append(
            (
                str(row["workload"]),
                f"{row['framework']}/{row['mode']}",
                "-" if median is None else f"{median:.2f}",
                "-" if first is None else f"{first:.2f}",
                str(row.get("version", "")),
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    right = (False, False, True, True, False)
    out = []
    for i, line in enumerate(lines):
        cells = [
            cell.rjust(width) if r else cell.ljust(width) for cell, width, r in zip(line, widths, right, strict=True)
        ]
        out.append("  ".join(cells).rstrip())
        if i == 0:
            out.append("  ".join("-" * width for width in widths))
    return "\n".join(out)
