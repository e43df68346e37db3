"""``mpiexec -n 2 braze train lenet|cnn --distributed``: each rank takes half of every batch;
one report (rank 0's) of statistics summed over both ranks' shards, and one checkpoint."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
from cnn_fit import image_folder
from mpi import mpiexec

from braze.models import LeNet, XlaArticleCNN

MNIST_DIR = Path(__file__).resolve().parents[2] / "data" / "mnist"


def train_command(model: str) -> list[str]:
    braze = str(Path(sys.executable).parent / "braze")
    return [mpiexec(), "-n", "2", braze, "train", model, "--distributed", "--epochs", "1"]


def test_two_ranks_report_once_with_the_whole_epoch_and_save_once(tmp_path):
    command = train_command("lenet")
    command += ["--steps-per-epoch", "5", "--batch-size", "32", "--device", "lazy", "--data", str(MNIST_DIR)]
    done = subprocess.run([*command, "--save", str(tmp_path / "m.npz")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = re.findall(r"\[Epoch 0\].*", done.stdout)
    assert len(lines) == 1, done.stdout
    # 5 steps of 32 images, 16 on each rank; the test set split between them, counted once.
    assert "Data-parallel over 2 processes, 16 of each batch of 32" in done.stdout, done.stdout
    assert "/160 (" in lines[0] and "/10000 (" in lines[0], lines[0]
    assert done.stdout.count("saved the parameters") == 1, done.stdout
    assert set(np.load(tmp_path / "m.npz").files) == set(LeNet(seed=0).state_dict())


def test_two_ranks_fit_the_cnn_report_once_and_save_once(tmp_path):
    """One step of 4 images and one validation batch (150x150, as the CLI trains the CNN)."""
    command = train_command("cnn") + ["--steps-per-epoch", "1", "--batch-size", "4", "--eval-steps", "1"]
    command += ["--data", str(image_folder(tmp_path / "images")), "--save", str(tmp_path / "m.npz")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Data-parallel over 2 processes, 2 of each batch of 4" in done.stdout, done.stdout
    assert len(re.findall(r"Epoch 1/1 - loss: .* - val_accuracy: ", done.stdout)) == 1, done.stdout
    assert done.stdout.count("saved the parameters") == 1, done.stdout
    assert set(np.load(tmp_path / "m.npz").files) == set(XlaArticleCNN(seed=0).state_dict())
