"""Waiting in a collective while watching the ranks on this host.

A rank killed outright (SIGKILL, the out-of-memory killer, a crash in native code) cannot
tell the others, and MPI offers no timeout: the survivors would wait in their collective
until the launcher ends the job, and a launcher that does not (``mpiexec
-disable-auto-cleanup``, a launcher's own bug or race) leaves them waiting forever. So a
collective is started non-blocking and, while it is pending, each rank checks every
``_CHECK_SECONDS`` that the processes of the other ranks on its host still run; one that is
gone ends the wait with ``RankLostError`` naming it, which ends the job like any other
error (``braze.distributed`` aborts on an uncaught error). Ranks on other hosts are left to
the launcher: a process id means nothing across hosts.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from braze.ir.errors import BrazeError

# How often a waiting rank looks at its neighbours, and how long it polls the request
# without sleeping first (most collectives complete within it: the ranks arrive together).
_CHECK_SECONDS = 0.25
_SPIN_SECONDS = 0.002
_NAP_SECONDS = 0.0002


class RankLostError(BrazeError):
    """A rank of the job ended while this one waited for it in a collective."""


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (dead, not yet reaped)."""
    if sys.platform.startswith("linux"):
        try:
            stat = Path(f"/proc/{pid}/stat").read_bytes()
        except FileNotFoundError:
            return False
        # The state follows the command name, which is in parentheses and may hold any byte.
        return stat.rsplit(b")", 1)[1].split()[0] != b"Z"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        pass
    return True


class LocalPeers:
    """The other ranks on this host, by world rank and process id."""

    def __init__(self, world: Any, local: Any) -> None:
        mine = np.array([world.Get_rank(), os.getpid()], np.int64)
        everyone = np.empty((local.Get_size(), 2), np.int64)
        local.Allgather(mine, everyone)
        self.peers = [(int(rank), int(pid)) for rank, pid in everyone if int(rank) != mine[0]]

    def lost(self) -> tuple[int, int] | None:
        """(rank, pid) of a neighbour whose process has ended, if any."""
        return next(((rank, pid) for rank, pid in self.peers if not _running(pid)), None)

    def wait(self, request: Any, what: str) -> None:
        """Complete ``request``; raise RankLostError if a neighbour ends meanwhile."""
        start = time.monotonic()
        next_check = start + _CHECK_SECONDS
        while not request.Test():
            now = time.monotonic()
            if now >= next_check:
                gone = self.lost()
                if gone is not None:
                    rank, pid = gone
                    raise RankLostError(
                        f"{what}: rank {rank} (pid {pid}, on this host) ended while this rank waited for it"
                    )
                next_check = now + _CHECK_SECONDS
            if now - start > _SPIN_SECONDS:
                time.sleep(_NAP_SECONDS)
