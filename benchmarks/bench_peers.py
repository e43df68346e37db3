"""Median training-step time and first-step (compile) time of the peer frameworks on braze's
two workloads: LeNet-5 (batch 128, SGD) and the XLA article's CNN (batch 64, Adam).

    BRAZE_PEERS_PYTHON=/work/peers-venv/bin/python python benchmarks/bench_peers.py --json peers.json
    /work/peers-venv/bin/python benchmarks/bench_peers.py --workloads lenet --frameworks torch,jax --steps 5

Frameworks that are not installed are skipped with a note. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peers import (  # noqa: E402
    DEFAULT_FRAMEWORKS,
    DEFAULT_WORKLOADS,
    collect,
    format_table,
    machine_info,
    parse_steps,
)


def _names(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", default=",".join(DEFAULT_WORKLOADS), help="comma-separated: lenet,cnn,resnet")
    parser.add_argument("--frameworks", default=",".join(DEFAULT_FRAMEWORKS), help="comma-separated: torch,jax,tf")
    parser.add_argument(
        "--steps", default=None, help="timed steps per workload: N, or lenet=20,cnn=5 (default: 20 LeNet, 5 CNN)"
    )
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the rows and machine info here")
    parser.add_argument(
        "--python", default=None, help="interpreter that has the peers (default: $BRAZE_PEERS_PYTHON, else this one)"
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="measure all frameworks in this process (default: one subprocess each)",
    )
    parser.add_argument("--timeout", type=float, default=None, help="seconds allowed per framework subprocess")
    parser.add_argument("--quiet", action="store_true", help="print no table (progress still goes to stderr)")
    args = parser.parse_args(argv)

    result = collect(
        _names(args.workloads),
        _names(args.frameworks),
        parse_steps(args.steps),
        python=args.python,
        isolate=not args.in_process,
        timeout=args.timeout,
    )
    if not args.quiet:
        print(format_table(result.rows))
        for note in result.notes:
            print(f"note: {note}")
    if args.json:
        data = {"machine": machine_info(result.versions), "rows": result.rows, "notes": result.notes}
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
