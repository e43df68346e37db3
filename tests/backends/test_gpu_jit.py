"""``@braze.jit`` of a step whose tensors live on a GPU device compiles it with the GPU
backend (one fused module, on a CPU OpenCL device without a GPU) and gives the values that
the same jitted step gives on the CPU; its kernels also compile as CUDA C for sm_90."""

from __future__ import annotations

import numpy as np
from gpu_device import compiles_for_h200, recording_gpu_graphs, requires_gpu_runtime

import braze
from braze.backends.gpu import GpuExecutable
from braze.bench.steps import lenet_workload
from braze.jit import JittedFunction
from braze.runtime import metrics

pytestmark = requires_gpu_runtime


def _jitted_lenet_steps(device: braze.Device, steps: int) -> tuple[list[float], list[np.ndarray], JittedFunction]:
    # One image: the simulator that stands in for a GPU in CI takes seconds per image.
    work = lenet_workload(device, batch_size=1, seed=3)
    x, y = work.batch(device)
    step = work.jit_step()
    losses = [step(work.model, work.optimizer, work.loss_fn, x, y).item() for _ in range(steps)]
    return losses, [p.numpy() for p in work.model.parameters()], step


def test_jit_of_gpu_tensors_compiles_for_the_gpu_and_matches_the_cpu(monkeypatch):
    gpu = braze.device("gpu")
    assert gpu.kind == "GPU"
    launched = metrics.counter("TransferToDevice")
    with recording_gpu_graphs(monkeypatch) as compiled:
        losses, parameters, step = _jitted_lenet_steps(gpu, steps=2)
    (executable,) = {id(c.executable): c.executable for c in step._compiled.values()}.values()
    assert isinstance(executable, GpuExecutable) and step.compiles == 1
    assert metrics.counter("TransferToDevice") > launched
    expected_losses, expected_parameters, _ = _jitted_lenet_steps(braze.device("cpu"), steps=2)
    np.testing.assert_allclose(losses, expected_losses, rtol=1e-5)
    assert losses[1] != losses[0]  # the second step ran on parameters the first updated
    for got, want in zip(parameters, expected_parameters, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    compiles_for_h200(compiled)
