"""The GPT case study: nanoGPT's learning-rate schedule, eager and compiled training that
agree, checkpoints, sampling from padded contexts, and the commands."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from transformer_layers import needs_transformer_layers

import braze
from braze import cli
from braze.bench.gpt import Trainer, TrainSettings, load_checkpoint, save_checkpoint, split_loss, train_gpt
from braze.data import DataError
from braze.models import GPTConfig
from braze.nn import CheckpointError

TINY = GPTConfig(block_size=8, n_layer=2, n_head=2, n_embd=16)
QUICK = TrainSettings(iters=5, batch_size=4, eval_interval=5, eval_iters=1, log_interval=1, warmup_iters=2)


def nanogpt_lr(it: int, learning_rate=1e-3, min_lr=1e-4, warmup_iters=100, lr_decay_iters=2000) -> float:
    """nanoGPT's train.py ``get_lr``, as written there."""
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


def test_the_schedule_is_nanogpts_get_lr():
    schedule = TrainSettings().schedule()
    steps = np.arange(0, 2101)
    got = schedule(braze.tensor(steps.astype(np.int64))).numpy()
    expected = np.array([nanogpt_lr(int(s)) for s in steps])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="warmup_iters 10 must be below lr_decay_iters 10"):
        TrainSettings(warmup_iters=10, lr_decay_iters=10).schedule()


@needs_transformer_layers
def test_eager_lazy_and_compiled_training_agree_to_float32_rounding():
    runs = {}
    for mode in ("eager", "lazy", "jit"):
        _, _, result = train_gpt(TINY, QUICK, mode, report=lambda line: None)
        runs[mode] = result
    eager = np.array(runs["eager"].losses)
    assert len(eager) == 5 and np.all(np.diff(eager) < 0.5)
    for mode in ("lazy", "jit"):
        # The same float32 arithmetic in other orders (fused, vectorized kernels): a few
        # steps of AdamW keep the losses within a few hundred units of float32 rounding.
        np.testing.assert_allclose(runs[mode].losses, eager, rtol=2e-5)
        np.testing.assert_allclose(runs[mode].val_loss, runs["eager"].val_loss, rtol=2e-5)
    assert runs["jit"].compiles == 2  # the training step and the evaluation, once each


@needs_transformer_layers
def test_the_jitted_step_updates_the_parameters_and_moments_in_place():
    from braze.models.gpt import GPT

    tokens = np.random.default_rng(3).integers(0, TINY.vocab_size, 400).astype(np.int32)
    trainer = Trainer(GPT(TINY, seed=2), QUICK, (tokens[:300], tokens[300:]), mode="jit")
    trainer.step()  # traces and compiles
    weight = trainer.model.parameters()[1]  # a matrix that AdamW decays
    held = weight.numpy()  # an array of the caller's: the step copies the buffer it shares
    before = held.copy()
    trainer.step()
    address = weight._value.ctypes.data  # the address alone: holding the array would make it shared
    trainer.step()
    assert weight._value.ctypes.data == address  # written over, not replaced by a new buffer
    assert not np.array_equal(weight.numpy(), before)
    np.testing.assert_array_equal(held, before)


@needs_transformer_layers
def test_training_learns_and_reports_as_nanogpt_does():
    lines = []
    settings = TrainSettings(iters=60, batch_size=8, eval_interval=30, eval_iters=4, log_interval=20, warmup_iters=5)
    model, tokenizer, result = train_gpt(TINY, settings, "jit", report=lines.append)
    assert lines[0] == f"number of parameters: {model.num_params() / 1e6:.2f}M"
    assert [e.iteration for e in result.evaluations] == [0, 30, 60]
    assert lines[1].startswith("step 0: train loss 4.1") and ", val loss 4.1" in lines[1]
    assert [line.split(":")[0] for line in lines if line.startswith("iter")] == ["iter 0", "iter 20", "iter 40"]
    assert result.evaluations[-1].val_loss < result.evaluations[0].val_loss - 0.5  # from ln(65) = 4.17
    assert tokenizer.vocab_size == model.config.vocab_size == 65


@needs_transformer_layers
def test_the_whole_split_loss_is_the_mean_over_its_blocks():
    from braze.models.gpt import GPT

    model = GPT(TINY, seed=4)
    model.train()
    tokens = np.random.default_rng(5).integers(0, TINY.vocab_size, 8 * 7 + 5)  # 7 blocks; 4 tokens left over
    inputs, targets = tokens[:56].reshape(7, 8).astype(np.int32), tokens[1:57].reshape(7, 8).astype(np.int32)
    model.eval()
    logits = model(braze.tensor(inputs), braze.tensor(targets))[0].numpy().astype(np.float64)
    model.train()
    shifted = logits - logits.max(-1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    expected = -np.take_along_axis(log_softmax, targets[..., None], -1).mean()
    assert split_loss(model, tokens, blocks_per_batch=3) == pytest.approx(expected, rel=1e-5)
    assert model.training  # evaluated in inference mode, left as it was
    with pytest.raises(DataError, match="8 tokens hold no block of 8"):
        split_loss(model, tokens[:8])


@needs_transformer_layers
def test_bench_compares_eager_and_compiled_runs_from_one_start(tmp_path):
    from braze.bench.gpt_compare import bench_gpt

    comparison = bench_gpt(QUICK, TINY, eager_iters=3)
    eager, compiled = comparison.modes
    assert (eager.mode, eager.iterations, compiled.mode, compiled.iterations) == ("eager", 3, "compiled", 5)
    np.testing.assert_allclose(compiled.losses[:3], eager.losses, rtol=2e-5)
    assert compiled.compiles == 2 and eager.step_bytes > 0 and compiled.step_bytes > 0
    summary = comparison.summary()
    assert (
        "(extrapolated to 5 iterations from the 3 run)" in summary
        and "Counter: JitCompile" in comparison.metrics_report
    )
    assert json.loads(comparison.save(tmp_path / "bench.json")[0].read_text())["modes"][1]["mode"] == "compiled"


@needs_transformer_layers
def test_a_checkpoint_folder_round_trips(tmp_path):
    model, tokenizer, result = train_gpt(TINY, QUICK, "eager", report=lambda line: None)
    folder = save_checkpoint(tmp_path / "run", model, tokenizer, result)
    record = json.loads((folder / "config.json").read_text())
    assert record["model"] == {**TINY.to_dict(), "vocab_size": 65} and record["iterations"] == 5
    assert record["vocabulary"] == "".join(tokenizer.itos)
    loaded, loaded_tokenizer = load_checkpoint(folder)
    assert loaded_tokenizer.itos == tokenizer.itos
    for (name, p), (_, q) in zip(model.named_parameters(), loaded.named_parameters(), strict=True):
        np.testing.assert_array_equal(q.numpy(), p.numpy(), err_msg=name)


def test_a_folder_that_is_no_checkpoint_is_named(tmp_path):
    with pytest.raises(CheckpointError, match="no config.json: not a checkpoint of braze train gpt"):
        load_checkpoint(tmp_path)
    (tmp_path / "config.json").write_text('{"model": {"n_layers": 3}, "vocabulary": "ab"}')
    with pytest.raises(CheckpointError, match=r"not a GPT checkpoint's settings .*unknown settings \['n_layers'\]"):
        load_checkpoint(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model": TINY.to_dict(), "vocabulary": "ab"}))
    with pytest.raises(CheckpointError, match="2 characters for a vocabulary of 65"):
        load_checkpoint(tmp_path)


@needs_transformer_layers
def test_the_commands_train_save_and_sample(tmp_path, capsys):
    folder = tmp_path / "run"
    tiny = ["--block-size", "8", "--n-layer", "1", "--n-head", "2", "--n-embd", "8"]
    quick = ["--iters", "3", "--eval-interval", "3", "--eval-iters", "1", "--batch-size", "2"]
    assert cli.main(["train", "gpt", *tiny, *quick, "--out-dir", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "step 3: train loss" in out and f"saved the checkpoint to {folder}" in out
    assert "val loss over the whole split (13,942 blocks): " in out  # 111,540 characters, blocks of 8
    assert cli.main(["sample", "gpt", "--out-dir", str(folder), "--prompt", "R", "--max-new-tokens", "12"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("R") and len("\n".join(lines[: lines.index("---------------")])) == 13
    # Contexts of 1, 2, 3 to 4 and 5 to 8 tokens; longer ones keep their last 8.
    assert lines[-1] == "graphs compiled: 4 (at most 4 for a block of 8)"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--n-head", "3", "--n-embd", "8"], "GPTConfig: n_embd 8 is not a multiple of n_head 3"),
        (["--warmup-iters", "10", "--lr-decay-iters", "3"], "warmup_iters 10 must be below lr_decay_iters 3"),
        (["--block-size", "100000000"], "--block-size 100,000,000 leaves no block in a split of 111,540 characters"),
    ],
    ids=["heads", "schedule", "block"],
)
def test_settings_that_do_not_fit_are_one_line_errors_before_any_work(tmp_path, capsys, arguments, message):
    base = ["--iters", "1", "--n-layer", "1", "--batch-size", "1", "--eval-iters", "1", "--mode", "eager"]
    assert cli.main(["train", "gpt", *base, *arguments, "--out-dir", str(tmp_path / "run")]) == 1
    assert capsys.readouterr().err.strip() == f"braze train: error: {message}"
    assert not (tmp_path / "run").exists()


def test_sampling_an_empty_prompt_or_at_a_tiny_temperature(tmp_path, capsys):
    folder = tmp_path / "run"
    tiny = ["--block-size", "8", "--n-layer", "1", "--n-head", "2", "--n-embd", "8", "--mode", "eager"]
    quick = ["--iters", "2", "--eval-interval", "2", "--eval-iters", "1", "--batch-size", "2"]
    assert cli.main(["train", "gpt", *tiny, *quick, "--out-dir", str(folder)]) == 0
    capsys.readouterr()
    assert cli.main(["sample", "gpt", "--out-dir", str(folder), "--prompt", ""]) == 1
    assert capsys.readouterr().err.startswith("braze sample: error: the prompt must have at least one character")
    # Near zero the draw is the most likely character: at 1e-40 as at 1e-4 (where logits
    # divided by the temperature had overflowed to inf, and the softmax to NaN).
    texts = []
    for temperature in ("1e-4", "1e-40"):
        arguments = ["--prompt", "RO", "--max-new-tokens", "6", "--temperature", temperature, "--seed", "1"]
        assert cli.main(["sample", "gpt", "--out-dir", str(folder), *arguments]) == 0
        texts.append(capsys.readouterr().out.split("---------------")[0])
    assert texts[0] == texts[1]
