"""nanoGPT's Shakespeare run (``braze train gpt``, under ``braze.jit``) with several seeds:
each run's final validation loss as nanoGPT estimates it (the mean of ``eval_iters``
random batches, 20 by default) and over the whole validation split, block by block.

    python benchmarks/gpt_seeds.py [--seeds 1337 1 2 3 4 5] [--iters 2000]

The seed draws the initial weights and the batches. The estimate of 20 batches (15,360
characters of the 111,540) varies by about 0.02 from one draw of its batches to another,
so one run's printed loss says little about a recipe; the whole split's loss has no
sampling error, and the spread over seeds is then the recipe's own.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_chain import print_host  # noqa: E402 - the host line every benchmark prints


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1337, 1, 2, 3, 4, 5])
    parser.add_argument("--iters", type=int, default=2000)
    args = parser.parse_args()

    from braze.bench.gpt import TrainSettings, split_loss, train_gpt
    from braze.data import load_shakespeare

    print_host()
    shakespeare = load_shakespeare(None)  # read and checked once, for every run
    rows = []
    print("| seed | val loss (20 batches) | val loss (whole split) | seconds |")
    print("| --- | --- | --- | --- |")
    for seed in args.seeds:
        settings = replace(TrainSettings(), seed=seed, iters=args.iters, lr_decay_iters=args.iters)
        model, _, result = train_gpt(settings=settings, data=shakespeare, report=lambda line: None)
        rows.append((result.val_loss, split_loss(model, shakespeare.val)))
        print(f"| {seed} | {rows[-1][0]:.4f} | {rows[-1][1]:.4f} | {result.seconds:.0f} |", flush=True)
    for name, values in zip(("20 batches", "whole split"), zip(*rows, strict=True), strict=True):
        spread = statistics.stdev(values) if len(values) > 1 else 0.0
        print(
            f"{name}: mean {statistics.mean(values):.4f}, standard deviation {spread:.4f}, "
            f"from {min(values):.4f} to {max(values):.4f}"
        )


if __name__ == "__main__":
    main()
