"""Running a script of this folder under ``mpiexec`` from a test."""

from __future__ import annotations

import os
import shutil
import signal
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


def hydra() -> str:
    """mpiexec if it is MPICH's Hydra (whose options a test passes), else the test is skipped."""
    found = mpiexec()
    version = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30).stdout
    if "HYDRA" not in version:
        pytest.skip("mpiexec is not MPICH's Hydra")
    return found


def run(
    ranks: int, script: str, *args: str, timeout: float = 300, options: tuple[str, ...] = ()
) -> tuple[subprocess.CompletedProcess, float]:
    """(the finished job, its seconds) of ``mpiexec options -n ranks python script args``.

    The job runs in a session of its own: one that runs past ``timeout`` fails the test with
    the processes it still had, and is killed whole, so no rank outlives the test."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    command = [mpiexec(), *options, "-n", str(ranks), sys.executable, str(HERE / script), *args]
    start = time.monotonic()
    with subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    ) as job:
        try:
            stdout, stderr = job.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            listing = ["ps", "-o", "pid,ppid,stat,wchan:24,args", "-s", str(job.pid)]
            alive = subprocess.run(listing, capture_output=True, text=True, check=False).stdout
            os.killpg(job.pid, signal.SIGKILL)
            _, stderr = job.communicate()
            pytest.fail(f"the job ran past {timeout:.0f} s; its processes then:\n{alive}\nits stderr:\n{stderr}")
    done = subprocess.CompletedProcess(command, job.returncode, stdout, stderr)
    return done, time.monotonic() - start
