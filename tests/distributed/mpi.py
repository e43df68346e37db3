"""Running a script of this folder under ``mpiexec`` from a test."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def mpiexec() -> str:
    """The mpiexec of this interpreter's environment (the mpich wheel puts it beside
    python), else one on PATH; the test is skipped without mpi4py or mpiexec."""
    pytest.importorskip("mpi4py")
    beside = Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if found is None:
        pytest.skip("no mpiexec")
    return found


def run(ranks: int, script: str, *args: str, timeout: float = 300) -> tuple[subprocess.CompletedProcess, float]:
    """(the finished job, its seconds) of ``mpiexec -n ranks python script args``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    command = [mpiexec(), "-n", str(ranks), sys.executable, str(HERE / script), *args]
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    return done, time.monotonic() - start
