"""The collectives' transport: MPI through mpi4py, on whatever MPI it was built for (the
``mpich`` wheel of ``braze[distributed]``, or a system MPI).

``MpiTransport`` is what the IR's ``all_reduce`` calls (eagerly, from the reference
interpreter and from compiled steps alike). Before every reduction the ranks compare what
they are about to reduce, in one 16-byte all-reduce, so ranks that disagree in shape,
dtype or op get an error naming each rank's operand instead of MPI's undefined behaviour
(a hang or a truncated buffer). A rank waiting in a collective watches the other ranks on
its host, so one killed outright ends the job even where the launcher would leave the
others waiting (``peers.py``). Ranks exchange fixed-size numeric buffers only, never
Python objects: an object another rank sends would be unpickled, and could run its code.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import numpy as np

from braze.ir.errors import BrazeError
from braze.ir.prims.checks import fmt_shape
from braze.ir.prims.collectives import set_transport
from braze.runtime.peers import LocalPeers


class ReplicaMismatchError(BrazeError):
    """Ranks reached a collective with operands that disagree (shape, dtype or op)."""


def describe(array: np.ndarray, op: str) -> str:
    return f"{op} of {array.dtype.name}{fmt_shape(array.shape)}"


# How much of each rank's description of its operand the others see when ranks disagree.
_DESCRIPTION_BYTES = 240


def _fingerprint(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=7).digest(), "little")


class MpiTransport:
    """All-reduce, broadcast and barrier over an mpi4py communicator."""

    def __init__(self, comm: Any) -> None:
        from mpi4py import MPI

        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        local = comm.Split_type(MPI.COMM_TYPE_SHARED)  # the ranks on this host
        self.local_rank, self.local_size = local.Get_rank(), local.Get_size()
        self.neighbours = LocalPeers(comm, local)
        local.Free()
        self._ops = {"sum": MPI.SUM, "mean": MPI.SUM, "max": MPI.MAX}

    def agree(self, collective: str, what: str) -> None:
        """Raise ReplicaMismatchError on every rank unless all ranks pass the same ``what``."""
        from mpi4py import MPI

        mine = _fingerprint(what)
        bounds = np.array([mine, -mine], dtype=np.int64)
        self.neighbours.wait(self.comm.Iallreduce(MPI.IN_PLACE, bounds, op=MPI.MAX), collective)
        if bounds[0] == mine and -bounds[1] == mine:
            return
        mine_text = np.zeros(_DESCRIPTION_BYTES, np.uint8)
        encoded = what.encode()[:_DESCRIPTION_BYTES]
        mine_text[: len(encoded)] = np.frombuffer(encoded, np.uint8)
        seen = np.empty((self.size, _DESCRIPTION_BYTES), np.uint8)
        self.neighbours.wait(self.comm.Iallgather(mine_text, seen), collective)
        texts = [bytes(row).rstrip(b"\0").decode(errors="replace") for row in seen]
        ranks = "; ".join(f"rank {r} has {text}" for r, text in enumerate(texts))
        raise ReplicaMismatchError(f"{collective}: the ranks' operands disagree: {ranks}")

    def __call__(self, array: np.ndarray, op: str) -> np.ndarray:
        self.agree("all_reduce", describe(array, op))
        # MPI reads and writes the buffers in memory order: both C order, or a transposed
        # operand's empty_like (Fortran order) would take its elements transposed.
        array = np.require(array, requirements="C")
        result = np.empty_like(array)
        self.neighbours.wait(self.comm.Iallreduce(array, result, op=self._ops[op]), "all_reduce")
        if op == "mean":
            np.divide(result, self.size, out=result)
        return result

    def broadcast(self, array: np.ndarray, root: int) -> np.ndarray:
        """``root``'s array on every rank (each passes one of the same shape and dtype)."""
        self.agree("broadcast", describe(array, f"root {root}"))
        result = np.array(array, order="C")  # a copy of the same shape, 0-d included
        self.neighbours.wait(self.comm.Ibcast(result, root=root), "broadcast")
        return result

    def barrier(self) -> None:
        self.neighbours.wait(self.comm.Ibarrier(), "barrier")


_JOINED: list[MpiTransport] = []


def join(transport: MpiTransport) -> None:
    """Make ``transport`` this process's job: all-reduces go through it from now on."""
    _JOINED[:] = [transport]
    set_transport(transport)


def joined() -> MpiTransport | None:
    """The job this process has joined (None before ``braze.distributed.init()``)."""
    return _JOINED[0] if _JOINED else None


# Where launchers put the rank of the process they start: MPICH's Hydra, Open MPI, PMIx.
_RANK_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")


def launched_rank() -> str | None:
    """The rank a launcher gave this process, from its environment (None without one)."""
    return next((os.environ[v] for v in _RANK_VARIABLES if v in os.environ), None)


def rank_and_size() -> tuple[int, int]:
    """This process's rank and the job's size; (0, 1) outside a job."""
    job = joined()
    return (0, 1) if job is None else (job.rank, job.size)
