"""The ``braze`` command line: ``braze train`` runs a case study, ``braze bench`` runs it eagerly
then compiled and compares, ``braze hlo`` shows what the compiler makes of its training step,
``braze fuzz`` tests the compiler on random programs, ``braze cache`` shows or clears the cache."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from braze.bench.arguments import (
    checkpoint_file,
    existing_directory,
    non_negative_int,
    output_file,
    parse_device,
    positive_float,
    positive_int,
)
from braze.data import DataError
from braze.ir.errors import BrazeError, ConfigError
from braze.ops.autocast import autocast

# What the user can fix: braze's own errors (shapes, devices, checkpoints...), bad data,
# and the file system refusing a path. Any other exception is a bug in braze.
USER_ERRORS = (BrazeError, DataError, OSError)
EXIT_USER_ERROR = 1
EXIT_BUG = 70  # EX_SOFTWARE in sysexits.h: an internal software error
DEBUG_HELP = "show the traceback of an error (as BRAZE_DEBUG=1 does)"


def _train(args: argparse.Namespace) -> int:
    device = args.device
    report = print
    batch = args.batch_size or (128 if args.model == "lenet" else 64)
    if args.distributed:
        from braze import distributed

        distributed.init()  # before the first compiled step: it sets each rank's OpenMP threads
        if batch % distributed.size():
            raise SystemExit(f"braze train: --batch-size {batch} does not split over {distributed.size()} processes")
        if distributed.rank() != 0:
            report = _silent  # rank 0 reports the job's statistics, summed over the ranks
        report(
            f"Data-parallel over {distributed.size()} processes, {batch // distributed.size()} of each batch of {batch}"
        )
    report(f"Device: {device!r}")
    if args.autocast:
        report("Mixed precision: bfloat16 products and convolutions, float32 accumulation and weights")
    with autocast("bfloat16", enabled=args.autocast == "bf16"):
        model = _train_model(args, device, batch, report)
    if args.save and report is print:  # one checkpoint per job: rank 0's (the ranks' parameters are equal)
        model.save(args.save)
        print(f"saved the parameters to {args.save}")
    return 0


def _train_model(args: argparse.Namespace, device: object, batch: int, report: Callable[[str], None]) -> object:
    if args.model == "lenet":
        from braze.bench.lenet import train_lenet

        model, _ = train_lenet(
            device,
            epochs=args.epochs,
            batch_size=batch,
            lr=args.lr or 0.1,
            data=args.data,
            seed=args.seed,
            steps_per_epoch=args.steps_per_epoch,
            eval_steps=args.eval_steps,
            report=report,
            distributed=args.distributed,
        )
    else:
        from braze.bench.cnn import train_cnn

        model, _ = train_cnn(
            device,
            epochs=args.epochs,
            batch_size=batch,
            lr=args.lr or 1e-3,
            data=args.data,
            seed=args.seed,
            steps_per_epoch=args.steps_per_epoch,
            eval_steps=args.eval_steps,
            report=report,
            distributed=args.distributed,
        )
    return model


def _silent(line: str) -> None:
    """The report of a rank other than 0: nothing."""


def _hlo(args: argparse.Namespace) -> int:
    from braze.bench.steps import WORKLOADS
    from braze.lazy import explain
    from braze.passes.report import to_dot
    from braze.runtime.device import LAZY_CPU

    batch = {"batch_size": args.batch_size} if args.batch_size else {}
    workload = WORKLOADS[args.model](LAZY_CPU, **batch)
    with autocast("bfloat16", enabled=args.autocast == "bf16"):
        report = explain(workload.step, *workload.batch(LAZY_CPU))
    mixed = ", bfloat16 autocast" if args.autocast else ""
    print(f"{workload.name} training step (batch {len(workload.images)}{mixed}), after braze's pass pipeline")
    print(report.summary() if args.summary else report.text())
    if args.dot:
        Path(args.dot).parent.mkdir(parents=True, exist_ok=True)
        with open(args.dot, "w") as handle:
            handle.write(to_dot(report.optimized) + "\n")
        print(f"wrote the fused graph to {args.dot} (render with: dot -Tsvg {args.dot} -o graph.svg)")
    return 0


def _bench(args: argparse.Namespace) -> int:
    from pathlib import Path

    from braze.bench.compare import bench_cnn, bench_lenet

    epochs = args.epochs or (5 if args.model == "lenet" else 3)
    if args.eager_epochs is not None and args.eager_epochs > epochs:
        raise ConfigError(f"--eager-epochs {args.eager_epochs} is more than the {epochs} epochs of the compiled run")
    if args.model == "lenet" and args.image_size is not None:
        raise ConfigError("--image-size is an option of bench cnn; LeNet-5 reads MNIST's 28 x 28 images")
    if args.model == "lenet":
        comparison = bench_lenet(
            epochs, args.batch_size or 128, args.data, args.seed, args.steps_per_epoch, args.eager_epochs
        )
    else:
        comparison = bench_cnn(
            epochs,
            args.batch_size or 64,
            args.data,
            args.seed,
            args.steps_per_epoch,
            args.image_size or 150,
            args.eager_epochs,
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


def fuzz_backends(text: str) -> tuple[str, ...]:
    """argparse type: a comma-separated list of the fuzzer's backends."""
    from braze.testing.oracle import BACKENDS

    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in BACKENDS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"expected some of {','.join(BACKENDS)}, got {text!r}")
    return names


def _fuzz(args: argparse.Namespace) -> int:
    import random

    from braze.testing.fuzz import fuzz

    seed = args.seed if args.seed is not None else random.randrange(10**9)
    print(f"braze fuzz: seed {seed} (program i is seed {seed}+i; rerun one with --seed SEED --programs 1)")
    report = fuzz(args.programs, args.seconds, seed, args.backends, args.out, not args.no_shrink, log=sys.stderr)
    return 0 if report.ok else 1


def _cache(args: argparse.Namespace) -> int:
    from braze.runtime import cachedir, diskcache

    if args.action == "info":
        print(cachedir.describe())
        cap = diskcache.size_limit()  # checked: a value that is no size is an error, not echoed
        print(f"size cap of the kernels: {cap / 2**20:.0f} MiB (BRAZE_CACHE_MAX_SIZE)")
    else:
        files, size = cachedir.clear()
        print(f"removed {files} files ({size / 2**20:.1f} MiB) from {cachedir.default_root()}")
    return 0


IMAGE_MODELS = {"lenet": "LeNet-5 on MNIST (the X10 tutorial)", "cnn": "the XLA article's CNN on an image folder"}
GPT_MODEL = "nanoGPT's character model of Tiny Shakespeare"


def build_parser() -> argparse.ArgumentParser:
    from braze.bench import gpt_cli
    from braze.bench.steps import WORKLOADS

    parser = argparse.ArgumentParser(prog="braze", description="braze: eager and lazy tensors, an XLA-style compiler")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    # Also accepted after the subcommand; SUPPRESS keeps the subcommand's default from
    # overwriting a --debug given before it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP)
    training = argparse.ArgumentParser(add_help=False)  # what train and bench share
    training.add_argument(
        "--data",
        type=existing_directory,
        default=None,
        help="MNIST directory, or an image folder with train/ and validation/",
    )
    training.add_argument("--seed", type=non_negative_int, default=1)
    training.add_argument("--steps-per-epoch", type=positive_int, default=None, help="cut epochs short (quick runs)")
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser("train", parents=[common], help="train a case-study model and report its progress")
    train_models = train.add_subparsers(dest="model", required=True, metavar="model")
    image_training = argparse.ArgumentParser(add_help=False)  # train's options for lenet and cnn
    image_training.add_argument(
        "--device", type=parse_device, default="cpu", help="cpu, gpu, lazy, cpu:0:lazy, ... (default: cpu)"
    )
    image_training.add_argument("--epochs", type=positive_int, default=5)
    image_training.add_argument(
        "--batch-size", type=positive_int, default=None, help="default: 128 for lenet, 64 for cnn"
    )
    image_training.add_argument(
        "--lr", type=positive_float, default=None, help="default: 0.1 (SGD) for lenet, 0.001 (Adam) for cnn"
    )
    image_training.add_argument(
        "--eval-steps",
        type=positive_int,
        default=None,
        help="evaluate each epoch on the first N test (validation) batches only (quick runs; default: all)",
    )
    image_training.add_argument(
        "--save", type=checkpoint_file, default=None, help="write the trained parameters to this .npz file"
    )
    image_training.add_argument(
        "--autocast",
        choices=["bf16"],
        default=None,
        help="matrix products and convolutions in bfloat16 with float32 accumulation (mixed precision)",
    )
    image_training.add_argument(
        "--distributed",
        action="store_true",
        help="one rank of a data-parallel job: run under mpiexec -n N (needs braze[distributed])",
    )
    for name, what in IMAGE_MODELS.items():
        model = train_models.add_parser(name, parents=[common, training, image_training], help=f"train {what}")
        model.set_defaults(run=_train)
    gpt_cli.add_train(train_models.add_parser("gpt", parents=[common], help=f"train {GPT_MODEL}"))
    hlo = commands.add_parser("hlo", parents=[common], help="print the optimized graph of a case study's training step")
    hlo.add_argument("model", choices=list(WORKLOADS))
    hlo.add_argument(
        "--batch-size",
        type=positive_int,
        default=None,
        help="default: 128 for lenet, 64 for cnn and resnet, 12 for gpt, 8 for gpt-wide",
    )
    hlo.add_argument("--summary", action="store_true", help="only the kernel count and peak memory")
    hlo.add_argument(
        "--autocast", choices=["bf16"], default=None, help="the step under bfloat16 autocast (mixed precision)"
    )
    hlo.add_argument(
        "--dot", type=output_file, default=None, help="also write the fused graph as Graphviz source to this file"
    )
    hlo.set_defaults(run=_hlo)
    bench = commands.add_parser(
        "bench", parents=[common], help="train a case study eagerly, then compiled, and compare"
    )
    bench_models = bench.add_subparsers(dest="model", required=True, metavar="model")
    image_bench = argparse.ArgumentParser(add_help=False)  # bench's options for lenet and cnn
    image_bench.add_argument("--epochs", type=positive_int, default=None, help="default: 5 for lenet, 3 for cnn")
    image_bench.add_argument("--batch-size", type=positive_int, default=None, help="default: 128 for lenet, 64 for cnn")
    image_bench.add_argument(
        "--image-size", type=positive_int, default=None, help="cnn only: image side in pixels (default 150)"
    )
    image_bench.add_argument(
        "--eager-epochs",
        type=positive_int,
        default=None,
        help="run fewer eager epochs than compiled ones; eager's wall time is extrapolated (and labelled so)",
    )
    image_bench.add_argument(
        "--out", type=output_file, default=None, help="JSON record (default runs/bench-MODEL.json; a .png beside it)"
    )
    for name, what in IMAGE_MODELS.items():
        model = bench_models.add_parser(name, parents=[common, training, image_bench], help=f"bench {what}")
        model.set_defaults(run=_bench)
    gpt_cli.add_bench(bench_models.add_parser("gpt", parents=[common], help=f"bench {GPT_MODEL}"))
    sample = commands.add_parser("sample", parents=[common], help="print text generated by a model braze train made")
    sample.add_argument("model", choices=["gpt"])
    gpt_cli.add_sample(sample)
    fuzz = commands.add_parser(
        "fuzz", parents=[common], help="run random programs eagerly and compiled, compare, shrink failures"
    )
    amount = fuzz.add_mutually_exclusive_group()
    amount.add_argument("--programs", type=positive_int, default=None, help="how many programs (default: 100)")
    amount.add_argument("--seconds", type=positive_float, default=None, help="run programs for this long instead")
    fuzz.add_argument("--seed", type=non_negative_int, default=None, help="the first program's seed (default: random)")
    fuzz.add_argument(
        "--backends",
        type=fuzz_backends,
        default=None,
        help="some of reference,cpu,cpu-unfused,jit,jit-state (default: the first three, those available)",
    )
    fuzz.add_argument("--out", default="fuzz-failures", help="folder for the shrunk failing programs")
    fuzz.add_argument("--no-shrink", action="store_true", help="report failures without shrinking them")
    fuzz.set_defaults(run=_fuzz)
    cache = commands.add_parser(
        "cache", parents=[common], help="show what the cache folder holds ($BRAZE_CACHE, ~/.cache/braze), or clear it"
    )
    cache.add_argument("action", choices=["info", "clear"])
    cache.set_defaults(run=_cache)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Argument errors exit with status 2 (argparse); braze's own errors,
    bad data and refused paths print one line on stderr and exit with 1 (with the
    traceback under ``--debug`` or ``BRAZE_DEBUG=1``); anything else is a bug in braze:
    its traceback is kept, with a request to report it, and the status is 70."""
    args = build_parser().parse_args(argv)
    debug = args.debug or os.environ.get("BRAZE_DEBUG") == "1"
    try:
        return args.run(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except USER_ERRORS as error:
        if debug:
            traceback.print_exc()
        print(f"braze {args.command}: error: {error}", file=sys.stderr)
        return EXIT_USER_ERROR
    except Exception:
        traceback.print_exc()
        print(
            f"braze {args.command}: internal error: this is a bug in braze, not in your input; please report it "
            "to the braze developers with the command line and the traceback above",
            file=sys.stderr,
        )
        return EXIT_BUG


if __name__ == "__main__":
    sys.exit(main())
