"""``braze train lenet --device gpu``: SGD steps of LeNet on MNIST through the GPU backend
(without a GPU, the OpenCL kernels on a CPU OpenCL device) end with the parameters and the
statistics that the same steps give on the CPU, where every op is NumPy's. Every kernel
those steps generate is also compiled as CUDA C by NVRTC for sm_90."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from gpu_device import compiles_for_h200, recording_gpu_graphs, requires_gpu_runtime

from braze.bench.lenet import train_lenet
from braze.cli import main
from braze.models import LeNet
from braze.runtime import metrics
from braze.runtime.device import as_device

pytestmark = requires_gpu_runtime

MNIST_DIR = Path(__file__).resolve().parents[2] / "data" / "mnist"
# Two steps of two images and one test batch: the simulator that stands in for a GPU in CI
# takes seconds per image and step.
BATCH, STEPS, SEED = 2, 2, 1


def test_braze_train_lenet_on_gpu_matches_the_cpu(tmp_path, capsys, monkeypatch):
    saved = tmp_path / "gpu.npz"
    command = ["train", "lenet", "--device", "gpu", "--epochs", "1", "--batch-size", str(BATCH)]
    command += ["--steps-per-epoch", str(STEPS), "--eval-steps", "1", "--seed", str(SEED)]
    launched = metrics.counter("TransferToDevice")
    with recording_gpu_graphs(monkeypatch) as compiled:
        assert main([*command, "--data", str(MNIST_DIR), "--save", str(saved)]) == 0
    assert len(compiled) > 10  # LeNet's forward, backward and update ops, at least
    compiles_for_h200(compiled)
    printed = capsys.readouterr().out
    assert "Device: Device(kind: .GPU" in printed, printed
    assert metrics.counter("TransferToDevice") > launched  # the GPU backend ran it, not a fallback
    model, (epoch,) = train_lenet(
        as_device("cpu"),
        epochs=1,
        batch_size=BATCH,
        data=str(MNIST_DIR),
        seed=SEED,
        steps_per_epoch=STEPS,
        eval_steps=1,
        report=lambda line: None,
    )
    (line,) = re.findall(r"\[Epoch 0\].*", printed)
    assert f"/{BATCH * STEPS} (" in line and f"/{BATCH} (" in line, line  # the steps asked for, no more
    losses = [float(x) for x in re.findall(r"Loss: ([0-9.]+)", line)]
    np.testing.assert_allclose(losses, [epoch.train.average_loss, epoch.test.average_loss], atol=1e-3)
    trained, initial = np.load(saved), LeNet(seed=SEED).state_dict()
    assert set(trained.files) == set(initial)
    for name, value in model.state_dict().items():
        assert not np.array_equal(value, initial[name]), f"{name} did not train"
        np.testing.assert_allclose(trained[name], value, rtol=1e-4, atol=1e-6, err_msg=name)
