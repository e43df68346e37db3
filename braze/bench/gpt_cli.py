"""The GPT's commands: ``braze train gpt``, ``braze sample gpt`` and ``braze bench gpt``,
with nanoGPT's settings as their defaults and its names as their options."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path

from braze.bench.arguments import (
    existing_path,
    fraction,
    non_negative_float,
    non_negative_int,
    output_file,
    output_folder,
    positive_float,
    positive_int,
)
from braze.bench.gpt import MODES, TrainSettings
from braze.ir.errors import BrazeError
from braze.models.gpt_config import GPTConfig

DEFAULT_OUT = "runs/gpt"


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = GPTConfig()
    model = parser.add_argument_group("model (nanoGPT's CPU run by default)")
    model.add_argument("--block-size", type=positive_int, default=defaults.block_size, help="context length")
    model.add_argument("--n-layer", type=positive_int, default=defaults.n_layer)
    model.add_argument("--n-head", type=positive_int, default=defaults.n_head)
    model.add_argument("--n-embd", type=positive_int, default=defaults.n_embd)
    model.add_argument("--dropout", type=fraction, default=defaults.dropout)
    model.add_argument("--bias", action="store_true", help="biases in the linear layers and layer norms")


def add_training_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = TrainSettings()
    parser.add_argument(
        "--data", type=existing_path, default=None, help="Tiny Shakespeare's input.txt[.gz], or its folder"
    )
    parser.add_argument("--seed", type=non_negative_int, default=defaults.seed)
    training = parser.add_argument_group("training (nanoGPT's CPU run by default)")
    training.add_argument("--iters", type=positive_int, default=defaults.iters, help="training iterations")
    training.add_argument("--batch-size", type=positive_int, default=defaults.batch_size)
    training.add_argument("--lr", type=positive_float, default=defaults.learning_rate, help="the largest learning rate")
    training.add_argument("--min-lr", type=positive_float, default=defaults.min_lr, help="the rate the cosine ends at")
    training.add_argument("--warmup-iters", type=non_negative_int, default=defaults.warmup_iters)
    training.add_argument(
        "--lr-decay-iters", type=positive_int, default=None, help="where the cosine reaches --min-lr (default: --iters)"
    )
    training.add_argument("--weight-decay", type=non_negative_float, default=defaults.weight_decay)
    training.add_argument(
        "--grad-clip", type=non_negative_float, default=defaults.grad_clip, help="0 turns clipping off"
    )
    training.add_argument("--eval-interval", type=positive_int, default=defaults.eval_interval)
    training.add_argument("--eval-iters", type=positive_int, default=defaults.eval_iters, help="batches per evaluation")
    training.add_argument("--log-interval", type=positive_int, default=defaults.log_interval)


@contextlib.contextmanager
def _settings_checked() -> Iterator[None]:
    """Settings that do not fit together (``--n-embd`` and ``--n-head``, the warm-up and the
    decay) are the user's error, said in one line, not a failure of braze."""
    try:
        yield
    except ValueError as error:
        raise BrazeError(str(error)) from None


@_settings_checked()
def model_config(args: argparse.Namespace) -> GPTConfig:
    return GPTConfig(
        block_size=args.block_size,
        n_layer=args.n_layer,
        n_head=args.n_head,
        n_embd=args.n_embd,
        dropout=args.dropout,
        bias=args.bias,
    )


@_settings_checked()
def train_settings(args: argparse.Namespace) -> TrainSettings:
    settings = TrainSettings(
        iters=args.iters,
        batch_size=args.batch_size,
        learning_rate=args.lr,
        min_lr=args.min_lr,
        warmup_iters=args.warmup_iters,
        lr_decay_iters=args.lr_decay_iters or max(args.iters, args.warmup_iters + 1),
        weight_decay=args.weight_decay,
        grad_clip=args.grad_clip,
        eval_interval=args.eval_interval,
        eval_iters=args.eval_iters,
        log_interval=args.log_interval,
        seed=args.seed,
    )
    settings.schedule()  # its warm-up and decay checked before any work
    return settings


def train(args: argparse.Namespace) -> int:
    from braze.bench.gpt import save_checkpoint, split_loss, train_gpt
    from braze.data import load_shakespeare

    shakespeare = load_shakespeare(args.data)
    config, settings = model_config(args), train_settings(args)
    shortest = min(len(shakespeare.train), len(shakespeare.val))
    if config.block_size >= shortest:  # before a model of that many positions is made
        raise BrazeError(f"--block-size {config.block_size:,} leaves no block in a split of {shortest:,} characters")
    model, tokenizer, result = train_gpt(config, settings, args.mode, shakespeare)
    print(f"trained {len(result.losses)} iterations in {result.seconds:.1f} s ({args.mode})")
    blocks = (len(shakespeare.val) - 1) // model.config.block_size
    print(f"val loss over the whole split ({blocks:,} blocks): {split_loss(model, shakespeare.val):.4f}")
    folder = save_checkpoint(args.out_dir, model, tokenizer, result)
    print(f"saved the checkpoint to {folder}")
    return 0


def sample(args: argparse.Namespace) -> int:
    from braze.bench.gpt import load_checkpoint
    from braze.bench.gpt_sample import max_graphs, sample_text
    from braze.runtime import metrics

    model, tokenizer = load_checkpoint(args.out_dir)
    with _settings_checked():
        texts, sampler = sample_text(
            model,
            tokenizer,
            args.prompt,
            args.max_new_tokens,
            args.num_samples,
            args.temperature,
            args.top_k,
            args.seed,
        )
    for text in texts:
        print(text)
        print("---------------")
    limit = max_graphs(model.config.block_size)
    print(f"graphs compiled: {sampler.graphs} (at most {limit} for a block of {model.config.block_size})")
    if args.metrics:
        print(metrics.report())
    return 0


def bench(args: argparse.Namespace) -> int:
    from braze.bench.gpt_compare import bench_gpt

    comparison = bench_gpt(train_settings(args), model_config(args), args.eager_iters, args.data)
    print()
    print(comparison.summary())
    print()
    print("Metrics of the compiled run:")
    print(comparison.metrics_report)
    for path in comparison.save(Path(args.out or "runs/bench-gpt.json")):
        print(f"wrote {path}")
    return 0


def add_train(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    add_training_arguments(parser)
    parser.add_argument("--mode", choices=MODES, default="jit", help="how the step runs (default: jit)")
    parser.add_argument("--out-dir", type=output_folder, default=DEFAULT_OUT, help=f"checkpoint folder ({DEFAULT_OUT})")
    parser.set_defaults(run=train)


def add_sample(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out-dir", default=DEFAULT_OUT, help=f"the checkpoint folder of braze train gpt ({DEFAULT_OUT})"
    )
    parser.add_argument("--prompt", default="\n", help="the text to continue (default: a newline, as nanoGPT)")
    parser.add_argument("--num-samples", type=positive_int, default=1)
    parser.add_argument("--max-new-tokens", type=positive_int, default=500)
    parser.add_argument("--temperature", type=positive_float, default=0.8)
    parser.add_argument("--top-k", type=positive_int, default=200, help="sample from the k most likely tokens only")
    parser.add_argument("--seed", type=non_negative_int, default=1337)
    parser.add_argument("--metrics", action="store_true", help="print braze's metrics after the samples")
    parser.set_defaults(run=sample)


def add_bench(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    add_training_arguments(parser)
    parser.add_argument(
        "--eager-iters", type=positive_int, default=100, help="eager iterations (its time is extrapolated; 100)"
    )
    parser.add_argument("--out", type=output_file, default=None, help="JSON record (default runs/bench-gpt.json)")
    parser.set_defaults(run=bench)
