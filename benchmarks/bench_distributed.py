"""Data-parallel throughput on this machine, and an estimate for clusters.

    OMP_NUM_THREADS=2 python benchmarks/bench_distributed.py lenet --batch 128
    OMP_NUM_THREADS=1 mpiexec -n 2 python benchmarks/bench_distributed.py lenet --batch 64

Times ``--steps`` jitted training steps of a case study (synthetic batches, after three
warm-up steps that compile) and prints, from rank 0, one JSON line: images per second of
the whole job, the median step, the gradient's bytes and, in a job of several processes,
the mean time of one all-reduce of the whole gradient (what the combined all-reduce of a
step sends), measured over 30 calls. A single process also prints an estimate, labelled as
such, of N hosts each running this process's step on its batch and averaging gradients
with a ring all-reduce over a link of L Gbit/s: each step's communication is
2(N-1)/N x gradient bytes / L (bandwidth only: no latency, no overlap with the backward
pass), so a host's step takes step + communication and the job does N x batch images in it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np

import braze
from braze.bench.steps import WORKLOADS

HOSTS = (8, 64)
LINKS_GBIT = (10, 100)


def ring_seconds(hosts: int, gradient_bytes: int, gbit_per_s: float) -> float:
    """A ring all-reduce's time by its bandwidth term: 2(N-1)/N x bytes / link bandwidth."""
    return 2 * (hosts - 1) / hosts * gradient_bytes / (gbit_per_s * 1e9 / 8)


def estimate(step_s: float, batch: int, gradient_bytes: int) -> list[dict]:
    rows = []
    for hosts in HOSTS:
        for link in LINKS_GBIT:
            communication = ring_seconds(hosts, gradient_bytes, link)
            rows.append(
                {
                    "hosts": hosts,
                    "link_gbit_s": link,
                    "allreduce_ms": communication * 1e3,
                    "images_per_s": hosts * batch / (step_s + communication),
                    "efficiency": step_s / (step_s + communication),
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument("--batch", type=int, required=True, help="images per process and step")
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    job = None
    if "PMI_RANK" in os.environ or "OMPI_COMM_WORLD_RANK" in os.environ:
        from braze import distributed

        job = distributed.init()
    processes, rank = (job.size, job.rank) if job else (1, 0)
    work = WORKLOADS[args.workload](braze.LAZY_CPU, batch_size=args.batch)
    if job:
        work.optimizer = distributed.DistributedOptimizer(work.optimizer)
    x, y = work.batch(braze.LAZY_CPU)
    step = work.jit_step()
    seconds = []
    for k in range(3 + args.steps):
        start = time.perf_counter()
        step(work.model, work.optimizer, work.loss_fn, x, y).item()
        if k >= 3:
            seconds.append(time.perf_counter() - start)
    step_s = statistics.median(seconds)
    gradient_bytes = sum(p.size * p.dtype.itemsize for p in work.model.parameters())
    result = {
        "workload": args.workload,
        "processes": processes,
        "threads": int(os.environ.get("OMP_NUM_THREADS", "0")),
        "batch_per_process": args.batch,
        "step_ms": step_s * 1e3,
        "images_per_s": processes * args.batch / step_s,
        "gradient_bytes": gradient_bytes,
    }
    if job:
        gradient = np.ones(gradient_bytes // 4, np.float32)
        job(gradient, "mean")
        start = time.perf_counter()
        for _ in range(30):
            job(gradient, "mean")
        result["allreduce_ms"] = (time.perf_counter() - start) / 30 * 1e3
    else:
        result["estimate"] = estimate(step_s, args.batch, gradient_bytes)
    if rank == 0:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
