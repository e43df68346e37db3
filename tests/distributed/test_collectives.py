"""Collectives across 2 MPI ranks (checked in run_collectives.py against NumPy, on the
native backend and the reference interpreter), and faults: a rank that raises or is
killed ends the job within 30 s with an error naming it, never a hang, even where the
launcher leaves the other ranks running."""

from __future__ import annotations

import pytest
from mpi import hydra, run


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


def test_a_killed_rank_ends_the_job_where_the_launcher_would_leave_the_others_waiting():
    # -disable-auto-cleanup: Hydra lets the survivors run on, so rank 0 must notice itself,
    # while it waits in the all-reduce, that its neighbour's process is gone.
    hydra()
    done, seconds = run(2, "run_fault.py", "kill", timeout=120, options=("-disable-auto-cleanup",))
    assert done.returncode != 0
    assert "rank 1 (pid " in done.stderr and "was killed by signal 9 (SIGKILL)" in done.stderr, done.stderr
    assert "braze.distributed: rank 0 of 2 failed (RankLostError: all_reduce: rank 1 (pid " in done.stderr, done.stderr
    assert "ended while this rank waited for it" in done.stderr, done.stderr
    assert seconds < 30, f"the job took {seconds:.0f} s to end"
