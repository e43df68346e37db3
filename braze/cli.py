"""The ``braze`` command line: ``braze train lenet|cnn`` (more commands arrive with the compiler)."""

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
