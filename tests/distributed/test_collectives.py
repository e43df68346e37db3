"""Collectives across 2 MPI ranks (checked in run_collectives.py against NumPy, on the
native backend and the reference interpreter), and faults: a rank that raises or is
killed ends the job within 30 s with an error naming it, never a hang."""

from __future__ import annotations

import pytest
from mpi import run


def test_all_reduce_gradient_broadcast_sharding_and_mismatches_on_two_ranks():
    done, _ = run(2, "run_collectives.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("ok") == 2, done.stdout  # one per rank (their lines may interleave)


@pytest.mark.parametrize(
    "fault,message",
    [
        ("raise", "braze.distributed: rank 1 of 2 failed (RuntimeError: rank 1 gives up); ending the job"),
        ("kill", "braze.distributed: rank 1 (pid "),
    ],
)
def test_a_failing_rank_ends_the_job_naming_it(fault, message):
    done, seconds = run(2, "run_fault.py", fault, timeout=120)
    assert done.returncode != 0
    assert message in done.stderr, done.stderr
    if fault == "kill":
        assert "was killed by signal 9 (SIGKILL); ending the job" in done.stderr, done.stderr
    assert seconds < 30, f"the job took {seconds:.0f} s to end"
