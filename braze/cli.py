"""The ``braze`` command line: ``braze train`` runs a case study, ``braze bench`` runs it eagerly
then compiled and compares, ``braze hlo`` shows what the compiler makes of its training step."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from braze.runtime.device import as_device


def _train(args: argparse.Namespace) -> int:
    device = as_device(args.device)
    print(f"Device: {device!r}")
    if args.model == "lenet":
        from braze.bench.lenet import train_lenet

        model, _ = train_lenet(
            device,
            epochs=args.epochs,
            batch_size=args.batch_size or 128,
            lr=args.lr or 0.1,
            data=args.data,
            seed=args.seed,
            steps_per_epoch=args.steps_per_epoch,
        )
    else:
        from braze.bench.cnn import train_cnn

        model, _ = train_cnn(
            device,
            epochs=args.epochs,
            batch_size=args.batch_size or 64,
            lr=args.lr or 1e-3,
            data=args.data,
            seed=args.seed,
            steps_per_epoch=args.steps_per_epoch,
        )
    if args.save:
        model.save(args.save)
        print(f"saved the parameters to {args.save}")
    return 0


def _hlo(args: argparse.Namespace) -> int:
    from braze.bench.steps import WORKLOADS
    from braze.lazy import explain
    from braze.passes.report import to_dot
    from braze.runtime.device import LAZY_CPU

    batch = {"batch_size": args.batch_size} if args.batch_size else {}
    workload = WORKLOADS[args.model](LAZY_CPU, **batch)
    report = explain(workload.step, *workload.batch(LAZY_CPU))
    print(f"{workload.name} training step (batch {len(workload.images)}), after braze's pass pipeline")
    print(report.summary() if args.summary else report.text())
    if args.dot:
        with open(args.dot, "w") as handle:
            handle.write(to_dot(report.optimized) + "\n")
        print(f"wrote the fused graph to {args.dot} (render with: dot -Tsvg {args.dot} -o graph.svg)")
    return 0


def _bench(args: argparse.Namespace) -> int:
    from pathlib import Path

    from braze.bench.compare import bench_cnn, bench_lenet

    if args.model == "lenet":
        comparison = bench_lenet(args.epochs or 5, args.batch_size or 128, args.data, args.seed, args.steps_per_epoch)
    else:
        comparison = bench_cnn(
            args.epochs or 3, args.batch_size or 64, args.data, args.seed, args.steps_per_epoch, args.image_size
        )
    print()
    print(comparison.summary())
    print()
    print("Metrics of the compiled run:")
    print(comparison.metrics_report)
    out = Path(args.out or f"runs/bench-{args.model}.json")
    for path in comparison.save(out):
        print(f"wrote {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="braze", description="braze: eager and lazy tensors, an XLA-style compiler")
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser("train", help="train a case-study model and print one line per epoch")
    train.add_argument("model", choices=["lenet", "cnn"])
    train.add_argument("--device", default="cpu", help="cpu, gpu, lazy, cpu:0:lazy, ... (default: cpu)")
    train.add_argument("--epochs", type=int, default=5)
    train.add_argument("--batch-size", type=int, default=None, help="default: 128 for lenet, 64 for cnn")
    train.add_argument("--lr", type=float, default=None, help="default: 0.1 (SGD) for lenet, 0.001 (Adam) for cnn")
    train.add_argument("--data", default=None, help="MNIST directory, or an image folder with train/ and validation/")
    train.add_argument("--seed", type=int, default=1)
    train.add_argument("--steps-per-epoch", type=int, default=None, help="cut epochs short (quick runs)")
    train.add_argument("--save", default=None, help="write the trained parameters to this .npz file")
    train.set_defaults(run=_train)
    hlo = commands.add_parser("hlo", help="print the optimized graph of a case study's training step")
    hlo.add_argument("model", choices=["lenet", "cnn"])
    hlo.add_argument("--batch-size", type=int, default=None, help="default: 128 for lenet, 64 for cnn")
    hlo.add_argument("--summary", action="store_true", help="only the kernel count and peak memory")
    hlo.add_argument("--dot", default=None, help="also write the fused graph as Graphviz source to this file")
    hlo.set_defaults(run=_hlo)
    bench = commands.add_parser("bench", help="train a case study eagerly, then compiled, and compare")
    bench.add_argument("model", choices=["lenet", "cnn"])
    bench.add_argument("--epochs", type=int, default=None, help="default: 5 for lenet, 3 for cnn")
    bench.add_argument("--batch-size", type=int, default=None, help="default: 128 for lenet, 64 for cnn")
    bench.add_argument("--data", default=None, help="MNIST directory, or an image folder with train/ and validation/")
    bench.add_argument("--seed", type=int, default=1)
    bench.add_argument("--steps-per-epoch", type=int, default=None, help="cut epochs short (quick runs)")
    bench.add_argument("--image-size", type=int, default=150, help="cnn only: image side in pixels")
    bench.add_argument("--out", default=None, help="JSON record (default runs/bench-MODEL.json; a .png beside it)")
    bench.set_defaults(run=_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
