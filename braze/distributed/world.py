"""Joining an MPI job: ranks, sizes, barriers, and a job that ends when one rank fails.

``init()`` reads the MPI environment that ``mpiexec`` set up (a program started without
it is a job of one). A rank whose program raises prints its error, naming itself, and
aborts the whole job through MPI, so the other ranks never wait in a collective for a rank
that is gone; a rank killed outright is named by its watcher (``supervisor.py``), and the
job ended by ``mpiexec`` or, failing that, by the ranks on its host, which notice while
they wait for it (``runtime/peers.py``).
"""

from __future__ import annotations

import os
import sys
import time
from types import TracebackType

from braze.distributed.supervisor import supervise
from braze.ir.errors import MissingDependency
from braze.runtime.collectives import MpiTransport, join, joined
from braze.runtime.cores import available_cores


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise MissingDependency(
            "braze.distributed needs mpi4py and an MPI library: pip install 'braze[distributed]'"
        ) from error
    return MPI


def init() -> MpiTransport:
    """Join the job ``mpiexec`` started (idempotent); returns the transport.

    Call it before the first compiled step: each rank's OpenMP threads default to its share
    of this host's cores (``OMP_NUM_THREADS``, unless set), which the OpenMP runtime reads
    once, when the first kernel library loads."""
    job = joined()
    if job is not None:
        return job
    supervise()
    mpi = _mpi()
    world = MpiTransport(mpi.COMM_WORLD)
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, available_cores() // world.local_size)))
    _abort_on_error(world)
    join(world)
    return world


# How long a failing rank waits, once its error is written, before ending the job: the
# launcher forwards each rank's output asynchronously and drops what is in flight at abort.
_FORWARDING_SECONDS = 0.2


def _abort_on_error(world: MpiTransport) -> None:
    """An uncaught exception on any rank ends the job (mpi4py would leave the others waiting)."""
    previous = sys.excepthook

    def hook(kind: type[BaseException], error: BaseException, traceback: TracebackType | None) -> None:
        # The line naming the rank goes first, in one write: MPI_Abort tears the job down
        # while the launcher may still be forwarding this rank's output, and under load a
        # traceback written first was cut short, with the line after it lost.
        failed = f"rank {world.rank} of {world.size} failed ({kind.__name__}: {error})"
        line = f"braze.distributed: {failed}; ending the job\n"
        sys.stderr.flush()
        os.write(2, line.encode(errors="replace"))
        previous(kind, error, traceback)
        sys.stderr.flush()
        time.sleep(_FORWARDING_SECONDS)
        world.comm.Abort(1)

    sys.excepthook = hook


def _job() -> MpiTransport:
    job = joined()
    if job is None:
        raise RuntimeError("braze.distributed is not initialized: call braze.distributed.init() first")
    return job


def is_initialized() -> bool:
    """Whether this process has called ``init()``."""
    return joined() is not None


def rank() -> int:
    """This process's rank in the job, 0 to size() - 1."""
    return _job().rank


def size() -> int:
    """How many processes the job has."""
    return _job().size


def local_rank() -> int:
    """This process's rank among the job's processes on this host."""
    return _job().local_rank


def barrier() -> None:
    """Wait until every rank has reached this call."""
    _job().barrier()
