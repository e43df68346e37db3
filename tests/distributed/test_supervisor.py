"""The rank watcher's signal forwarding (the watcher itself is exercised by the killed-rank
test in test_collectives.py)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from braze.distributed.supervisor import _forwarder


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the watcher is Linux only")
def test_a_signal_for_a_rank_that_just_exited_is_dropped():
    # A pid above the kernel's largest names no process, as a reaped rank's does (without
    # the risk that the pid is reused, by then, by a process not ours).
    gone = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    _forwarder(gone)(signal.SIGTERM, None)


def test_a_signal_reaches_the_rank():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    _forwarder(child.pid)(signal.SIGTERM, None)
    assert child.wait(timeout=30) == -signal.SIGTERM
