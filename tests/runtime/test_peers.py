"""The neighbour watch of a rank waiting in a collective (runtime/peers.py), without MPI."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from braze.runtime.peers import LocalPeers, RankLostError, _running


class _Pending:
    """A request that completes after ``tests`` calls to Test() (never with None)."""

    def __init__(self, tests: int | None) -> None:
        self.left = tests

    def Test(self) -> bool:  # noqa: N802 - mpi4py's name
        if self.left is None:
            return False
        self.left -= 1
        return self.left < 0


def _watching(*peers: tuple[int, int]) -> LocalPeers:
    watch = LocalPeers.__new__(LocalPeers)
    watch.peers = list(peers)
    return watch


def _ended_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_running_tells_live_ended_and_zombie_processes_apart():
    assert _running(os.getpid())
    assert not _running(_ended_pid())
    if sys.platform.startswith("linux"):
        zombie = subprocess.Popen([sys.executable, "-c", "pass"])
        deadline = time.monotonic() + 30
        while Path(f"/proc/{zombie.pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] != b"Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert not _running(zombie.pid)  # exited, not yet reaped
        zombie.wait()


def test_a_wait_returns_when_the_request_completes_with_every_neighbour_alive():
    request = _Pending(tests=3)
    _watching((1, os.getpid())).wait(request, "all_reduce")
    assert request.left == -1


def test_a_wait_on_a_neighbour_that_ended_raises_naming_it():
    pid = _ended_pid()
    start = time.monotonic()
    with pytest.raises(RankLostError, match=rf"^broadcast: rank 3 \(pid {pid}, on this host\) ended while"):
        _watching((1, os.getpid()), (3, pid)).wait(_Pending(tests=None), "broadcast")
    assert time.monotonic() - start < 20  # checked four times a second, not at the end of a timeout
