"""The command line turns every bad input into one clear line: argument errors exit with 2
before any work starts, braze's own errors (bad data, missing files) with 1 and no
traceback unless asked for, and bugs keep their traceback with a request to report them.

Each case runs ``python -m braze.cli`` as a user would; every one fails before training.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from braze import cli
from braze.backends import cpu

MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def run_braze(*args: str, home: Path, debug: bool = False) -> subprocess.CompletedProcess:
    """Run the command line with an empty HOME and no BRAZE_DATA or BRAZE_DEBUG."""
    env = {k: v for k, v in os.environ.items() if k not in ("BRAZE_DATA", "BRAZE_DEBUG")}
    env["HOME"] = str(home)
    if debug:
        env["BRAZE_DEBUG"] = "1"
    # The timeout only guards against a hang; every case fails within seconds.
    return subprocess.run(
        [sys.executable, "-m", "braze.cli", *args], capture_output=True, text=True, env=env, timeout=600
    )


# (command line, the error after "braze COMMAND: error: ")
ARGUMENT_ERRORS = [
    ("train lenet --data /nonexistent --epochs 1", "argument --data: directory /nonexistent does not exist"),
    ("train lenet --epochs -1", "argument --epochs: must be a positive integer, got -1"),
    ("train lenet --epochs 0", "argument --epochs: must be a positive integer, got 0"),
    ("train lenet --epochs two", "argument --epochs: expected a positive integer, got 'two'"),
    ("train lenet --batch-size 0 --epochs 1", "argument --batch-size: must be a positive integer, got 0"),
    ("train cnn --steps-per-epoch 0", "argument --steps-per-epoch: must be a positive integer, got 0"),
    ("train lenet --eval-steps 0", "argument --eval-steps: must be a positive integer, got 0"),
    ("train lenet --autocast fp16", "argument --autocast: invalid choice: 'fp16' (choose from 'bf16')"),
    ("train lenet --lr -0.1", "argument --lr: must be a positive finite number, got -0.1"),
    ("train lenet --lr nan", "argument --lr: must be a positive finite number, got nan"),
    ("train lenet --seed -1", "argument --seed: must be a non-negative integer, got -1"),
    (
        "train lenet --device tpu",
        "argument --device: cannot parse device 'tpu': expected parts like 'cpu', 'gpu', 'eager', 'lazy' and an "
        "ordinal, e.g. 'cpu:0:lazy'",
    ),
    ("train lenet --save {tmp}", "argument --save: {tmp} is a directory, expected a file name"),
    (
        "train lenet --save {tmp}/model.ckpt",
        "argument --save: {tmp}/model.ckpt: save to a name ending in .keras (the whole model: architecture, "
        "weights, compile settings) or in .npz or .safetensors (weights and buffers)",
    ),
    (
        "train lenet --save {file}/model.npz",
        "argument --save: cannot create {file}/model.npz: {file} is not a directory",
    ),
    ("train resnet", "argument model: invalid choice: 'resnet' (choose from 'lenet', 'cnn', 'gpt')"),
    ("train gpt --iters 0", "argument --iters: must be a positive integer, got 0"),
    ("train gpt --dropout 1", "argument --dropout: must be in [0, 1), got 1"),
    ("train gpt --data /nonexistent", "argument --data: /nonexistent does not exist"),
    ("train gpt --out-dir {file}", "argument --out-dir: {file} is a file, expected a folder"),
    ("train gpt --out-dir {file}/run", "argument --out-dir: cannot create {file}/run: {file} is not a directory"),
    ("train gpt --grad-clip -1", "argument --grad-clip: must be a non-negative finite number, got -1"),
    ("train gpt --mode fast", "argument --mode: invalid choice: 'fast' (choose from 'eager', 'lazy', 'jit')"),
    ("train gpt --epochs 2", "unrecognized arguments: --epochs 2"),
    ("sample gpt --temperature 0", "argument --temperature: must be a positive finite number, got 0"),
    ("sample gpt --top-k 0", "argument --top-k: must be a positive integer, got 0"),
    ("sample lenet", "argument model: invalid choice: 'lenet' (choose from 'gpt')"),
    ("bench gpt --eager-iters 0", "argument --eager-iters: must be a positive integer, got 0"),
    ("hlo lenet --batch-size -3", "argument --batch-size: must be a positive integer, got -3"),
    ("hlo cnn --batch-size 0", "argument --batch-size: must be a positive integer, got 0"),
    ("hlo lenet --dot {tmp}", "argument --dot: {tmp} is a directory, expected a file name"),
    ("bench cnn --data /nonexistent", "argument --data: directory /nonexistent does not exist"),
    ("bench lenet --data {file}", "argument --data: {file} is not a directory"),
    ("bench lenet --epochs -1", "argument --epochs: must be a positive integer, got -1"),
    ("bench lenet --batch-size 0", "argument --batch-size: must be a positive integer, got 0"),
    ("bench cnn --steps-per-epoch -2", "argument --steps-per-epoch: must be a positive integer, got -2"),
    ("bench cnn --image-size 0", "argument --image-size: must be a positive integer, got 0"),
    ("bench lenet --seed -5", "argument --seed: must be a non-negative integer, got -5"),
    ("bench lenet --out {tmp}", "argument --out: {tmp} is a directory, expected a file name"),
]


@pytest.mark.parametrize(("command", "message"), ARGUMENT_ERRORS, ids=[c for c, _ in ARGUMENT_ERRORS])
def test_argument_errors_exit_2_before_any_work(tmp_path, command, message):
    file = tmp_path / "a-file"
    file.write_text("")
    names = {"tmp": str(tmp_path), "file": str(file)}
    result = run_braze(*command.format(**names).split(), home=tmp_path)
    words = command.split()
    # A model's command has a parser of its own, whose errors name the model too; arguments
    # that no parser takes are the top parser's.
    model_command = words[0] in ("train", "bench") and words[1] in ("lenet", "cnn", "gpt")
    prefix = f"braze {' '.join(words[:2] if model_command else words[:1])}"
    if message.startswith("unrecognized arguments"):
        prefix = "braze"
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == f"{prefix}: error: {message.format(**names)}"
    assert "Traceback" not in result.stderr


def _image_folder(root: Path, broken: bytes | None = None) -> Path:
    """``root/{train,validation}/{a,b}/`` with one 8x8 PNG each; ``broken`` replaces train/a's."""
    from PIL import Image

    for split in ("train", "validation"):
        for name in ("a", "b"):
            (root / split / name).mkdir(parents=True)
            Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(root / split / name / "0.png")
    if broken is not None:
        (root / "train" / "a" / "0.png").write_bytes(broken)
    return root


def _truncated_mnist(directory: Path) -> Path:
    directory.mkdir()
    for name in MNIST_FILES:
        (directory / name).write_bytes(b"\x00\x00\x08\x03")
    return directory


# (command line, the error after "braze COMMAND: error: "); {dir} is a folder made by ``setup``
USER_ERRORS = [
    (
        "bench lenet --epochs 1 --eager-epochs 2",
        lambda d: None,
        "--eager-epochs 2 is more than the 1 epochs of the compiled run",
    ),
    ("bench lenet --image-size 32", lambda d: None, "--image-size is an option of bench cnn"),
    ("train lenet --epochs 1 --data {dir}", lambda d: d.mkdir(), "MNIST directory {dir} is missing "),
    ("bench lenet --epochs 1 --data {dir}", lambda d: d.mkdir(), "MNIST directory {dir} is missing "),
    ("sample gpt --out-dir {dir}", lambda d: d.mkdir(), "{dir}: no config.json: not a checkpoint of braze train gpt"),
    (
        "train gpt --data {dir}",
        lambda d: d.mkdir(),
        "Tiny Shakespeare not found; looked for {dir}/input.txt, {dir}/input.txt.gz",
    ),
    (
        "train lenet --epochs 1 --data {dir}",
        _truncated_mnist,
        "{dir}/train-images-idx3-ubyte: MD5 mismatch (of the uncompressed content)",
    ),
    (
        "bench cnn --epochs 1 --data {dir}",
        lambda d: d.mkdir(),
        "image folder {dir} needs 'train' and 'validation' sub-folders of class folders",
    ),
    (
        "train cnn --epochs 1 --batch-size 2 --steps-per-epoch 1 --data {dir}",
        lambda d: _image_folder(d, broken=b""),
        "{dir}/train/a/0.png: image does not decode (empty file)",
    ),
    (
        "train cnn --epochs 1 --batch-size 2 --steps-per-epoch 1 --data {dir}",
        lambda d: _image_folder(d, broken=b"\x89PNG\r\n\x1a\n\x00\x00"),
        "{dir}/train/a/0.png: image does not decode (",
    ),
]


@pytest.mark.parametrize(("command", "setup", "message"), USER_ERRORS, ids=[f"{c} {m}" for c, _, m in USER_ERRORS])
def test_braze_errors_are_one_line_with_exit_1(tmp_path, command, setup, message):
    setup(tmp_path / "data")
    names = {"dir": str(tmp_path / "data")}
    result = run_braze(*command.format(**names).split(), home=tmp_path)
    subcommand = command.split()[0]
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(f"braze {subcommand}: error: {message.format(**names)}")


@pytest.mark.skipif(not cpu.available(), reason="no C compiler")
def test_an_unknown_cpu_target_is_a_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setenv("BRAZE_CPU_TARGET", "x86-64")
    result = run_braze("fuzz", "--programs", "1", "--seed", "1", "--backends", "cpu", home=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [
        "braze fuzz: error: BRAZE_CPU_TARGET='x86-64' is not a CPU target; use one of x86-64-v2, x86-64-v3, "
        "x86-64-v4, native"
    ]


@pytest.mark.parametrize("how", ["BRAZE_DEBUG=1", "--debug after the command", "--debug before it"])
def test_debug_shows_the_traceback(tmp_path, how):
    (tmp_path / "data").mkdir()
    args = ["bench", "cnn", "--data", str(tmp_path / "data")]
    if how == "--debug after the command":
        args.append("--debug")
    elif how == "--debug before it":
        args.insert(0, "--debug")
    result = run_braze(*args, home=tmp_path, debug=how == "BRAZE_DEBUG=1")
    assert result.returncode == 1
    assert "Traceback (most recent call last)" in result.stderr
    assert "braze.data.errors.DataError: image folder" in result.stderr
    last = f"braze bench: error: image folder {tmp_path / 'data'} needs 'train' and 'validation' sub-folders"
    assert result.stderr.splitlines()[-1].startswith(last)


def test_a_bug_keeps_its_traceback_and_asks_for_a_report(monkeypatch, capsys):
    def broken(args):
        raise KeyError("internal state")

    monkeypatch.setattr(cli, "_hlo", broken)
    assert cli.main(["hlo", "lenet"]) == cli.EXIT_BUG
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "KeyError: 'internal state'" in err
    assert err.splitlines()[-1].startswith("braze hlo: internal error: this is a bug in braze")
    assert "please report it" in err.splitlines()[-1]


def test_valid_arguments_are_parsed_into_values():
    args = cli.build_parser().parse_args(["train", "cnn", "--device", "cpu:lazy", "--epochs", "2", "--lr", "1e-4"])
    assert args.device.is_lazy and args.epochs == 2 and args.lr == 1e-4 and args.debug is False


@pytest.mark.parametrize("command", ["cache info", "fuzz --programs 1 --seed 1 --backends reference"])
def test_a_cache_size_that_is_no_size_is_a_one_line_error(tmp_path, monkeypatch, command):
    monkeypatch.setenv("BRAZE_CACHE_MAX_SIZE", "garbage")
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path / "cache"))
    result = run_braze(*command.split(), home=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [
        f"braze {command.split()[0]}: error: BRAZE_CACHE_MAX_SIZE='GARBAGE' is not a size: use bytes or a number "
        "with K, M, G or T"
    ]


def test_a_dump_folder_that_cannot_be_made_is_a_one_line_error(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("BRAZE_DUMP", str(blocker / "dump"))
    result = run_braze("hlo", "lenet", "--summary", home=tmp_path)
    assert result.returncode == 1, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"braze hlo: error: BRAZE_DUMP={str(blocker / 'dump')!r}: cannot make the folder"), line


def test_distributed_training_without_mpi4py_is_a_one_line_error(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # its import fails, as where it is not installed
    assert cli.main(["train", "lenet", "--distributed", "--epochs", "1"]) == cli.EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "braze train: error: braze.distributed needs mpi4py and an MPI library: pip install 'braze[distributed]'"
    ]
