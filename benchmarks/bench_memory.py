"""Memory over a long lazy training run: resident memory of 10,000 LeNet steps on a lazy
device (X10 style: a barrier per step), sampled as it goes, and how many times it compiled.

    python benchmarks/bench_memory.py [--steps 10000] [--every 500] [--warmup 200]

A new batch tensor every step, as a data loader gives. Prints each sample, then the growth
from the end of the warm-up to the end (the issue's bound: at most 2%) and the compile count
(one).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import braze
from braze.bench.steps import lenet_workload
from braze.runtime import metrics


def resident_mib() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--every", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=200)
    args = parser.parse_args()
    work = lenet_workload(braze.LAZY_CPU)
    metrics.reset()
    start, after_warmup = time.perf_counter(), None
    for step in range(1, args.steps + 1):
        x, y = work.batch(braze.LAZY_CPU)
        work.step(x, y).item()
        if step == args.warmup:
            after_warmup = resident_mib()
        if step % args.every == 0:
            print(f"step {step:6d}: {resident_mib():8.1f} MiB resident, {time.perf_counter() - start:7.1f} s")
    end = resident_mib()
    base = after_warmup if after_warmup is not None else end
    growth = 100 * (end - base) / base
    compiles = metrics.counter("DiskCacheMiss") + metrics.counter("DiskCacheHit")
    print(f"{args.steps} steps: {base:.1f} MiB after {args.warmup} steps, {end:.1f} MiB at the end ({growth:+.2f}%)")
    print(f"native compiles: {compiles}; {sys.platform}, braze {braze.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
