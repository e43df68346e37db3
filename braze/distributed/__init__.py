"""Data-parallel training over MPI: one program on many processes and hosts.

Start the program with ``mpiexec -n N``; each process calls ``init()``, trains on its
shard of the data (``DataLoader(..., shard=True)``) and steps a ``DistributedOptimizer``,
which averages gradients with ``all_reduce`` (an IR primitive, so a lazy or jitted step
stays one compiled call). Needs ``pip install 'braze[distributed]'`` (mpi4py and MPICH).
"""

from braze.distributed.collectives import all_reduce, broadcast
from braze.distributed.optimizer import DistributedOptimizer
from braze.distributed.world import barrier, init, is_initialized, local_rank, rank, size

__all__ = [
    "DistributedOptimizer",
    "all_reduce",
    "barrier",
    "broadcast",
    "init",
    "is_initialized",
    "local_rank",
    "rank",
    "size",
]
