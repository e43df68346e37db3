"""Where a compiled training step spends its time, kernel by kernel.

    python benchmarks/profile_kernels.py [cnn|lenet|gpt|resnet|...] [--steps 3] [--top 20] [--autocast bf16]

Compiles the workload's step with ``@braze.jit`` and BRAZE_PROFILE=1 (the generated entry
function times every kernel call), runs it a few times and prints the slowest kernels with
their share of the step (``--autocast bf16``: the step under ``braze.autocast``). Timings
are wall-clock on a shared machine: run it idle.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time

os.environ["BRAZE_PROFILE"] = "1"

import braze  # noqa: E402
from braze.bench.steps import WORKLOADS  # noqa: E402
from braze.passes.buffers import schedule  # noqa: E402


def profile(workload: str, steps: int, with_kernels: bool = False) -> tuple[float, list[tuple[object, float]]]:
    """(mean step seconds, [(kernel label, seconds per step)]); with the kernel nodes
    themselves instead of their labels when ``with_kernels``."""
    work = WORKLOADS[workload](braze.CPU)
    x, y = work.batch(braze.CPU)
    step = work.jit_step()
    for _ in range(3):  # the first step makes the optimizer's slots; the next compiles once
        step(work.model, work.optimizer, work.loss_fn, x, y)
    compiled = step._compiled.values()[-1]  # the steady step's (the first step's comes before it)
    before = [seconds for _, seconds in compiled.executable.kernel_seconds()]
    start = time.perf_counter()
    for _ in range(steps):
        step(work.model, work.optimizer, work.loss_fn, x, y)
    wall = (time.perf_counter() - start) / steps
    after = compiled.executable.kernel_seconds()
    names = schedule(compiled.executable.graph) if with_kernels else [label for label, _ in after]
    return wall, [(name, (seconds - b) / steps) for name, (_, seconds), b in zip(names, after, before, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", nargs="?", default="cnn", choices=sorted(WORKLOADS))
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--autocast", choices=["bf16"], help="bfloat16 products with float32 accumulation")
    args = parser.parse_args()
    with braze.autocast() if args.autocast else contextlib.nullcontext():
        wall, kernels = profile(args.workload, args.steps)
    total = sum(seconds for _, seconds in kernels)
    print(f"{args.workload}: step {wall * 1e3:.1f} ms, of which {len(kernels)} kernels {total * 1e3:.1f} ms")
    for label, seconds in sorted(kernels, key=lambda k: -k[1])[: args.top]:
        print(f"{seconds * 1e3:9.2f} ms {100 * seconds / total:5.1f}%  {label}")


if __name__ == "__main__":
    main()
