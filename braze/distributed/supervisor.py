"""A watcher per rank, so that a rank killed outright is named, not only counted.

A rank that raises says so itself (``world.py``); one killed by a signal (SIGKILL, the
kernel's out-of-memory killer, a crash in native code) cannot, and ``mpiexec`` names only
its process id. So, before MPI starts, ``init()`` forks each rank launched by an
``mpiexec``: the child goes on to run the program as the rank, and the parent, the process
``mpiexec`` started, only waits for it. When the child dies of a signal the parent reports
the rank and the signal and exits with the child's status, so ``mpiexec`` ends the job as
it would have; signals for the parent are passed on to the child, and the child dies with
the parent (``mpiexec`` cleaning up). Linux only; ``BRAZE_SUPERVISE=0`` turns it off.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Callable
from types import FrameType

from braze.runtime.collectives import launched_rank

_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
_PR_SET_PDEATHSIG = 1


def supervise() -> None:
    """Fork a watcher for this rank (returns in the child only); call before MPI starts."""
    rank = launched_rank()
    if rank is None or not sys.platform.startswith("linux") or os.environ.get("BRAZE_SUPERVISE") == "0":
        return
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    child = os.fork()
    if child == 0:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)
        os.environ["BRAZE_SUPERVISE"] = "0"  # a program that calls init() again is already watched
        return
    _wait(child, rank)


def _forwarder(child: int) -> Callable[[int, FrameType | None], None]:
    """A signal handler passing the signal on to ``child``, which may have just exited: an
    error raised in the handler would end ``_wait`` with a traceback, not the child's status."""

    def forward(received: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, received)

    return forward


def _wait(child: int, rank: str) -> None:
    for number in _FORWARDED:
        signal.signal(number, _forwarder(child))
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        message = (
            f"braze.distributed: rank {rank} (pid {child}) was killed by signal {number} "
            f"({signal.Signals(number).name}); ending the job\n"
        )
        os.write(2, message.encode())
        os._exit(128 + number)
    os._exit(os.waitstatus_to_exitcode(status))
