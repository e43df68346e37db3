"""braze.device("gpu"): eager tensors run each primitive as a cached single-op GPU kernel,
lazy ones compile their traces with the GPU backend; both agree with NumPy, and copies
between host and device are counted."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from gpu_device import requires_gpu_runtime

import braze
from braze.backends.gpu import opencl
from braze.runtime import metrics

pytestmark = requires_gpu_runtime


def _loss_and_gradient(device: str) -> tuple[float, np.ndarray]:
    x = braze.tensor(np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4), device=device, requires_grad=True)
    loss = (braze.tanh(x) * 2.0 + braze.relu(x)).sum()
    loss.backward()
    return loss.item(), x.grad.numpy()


def _expected() -> tuple[float, np.ndarray]:
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    return float((np.tanh(x) * 2 + np.maximum(x, 0)).sum()), 2 * (1 - np.tanh(x) ** 2) + (x > 0)


def test_eager_gpu_ops_are_single_op_kernels_compiled_once():
    expected_loss, expected_grad = _expected()
    loss, grad = _loss_and_gradient("gpu")
    np.testing.assert_allclose(loss, expected_loss, rtol=1e-5)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-5, atol=1e-6)
    compiled, copied = metrics.counter("EagerKernelCompile"), metrics.counter("TransferToDevice")
    _loss_and_gradient("gpu")
    assert metrics.counter("EagerKernelCompile") == compiled  # every signature seen before
    assert metrics.counter("TransferToDevice") > copied


def test_lazy_gpu_traces_run_on_the_gpu_backend():
    expected_loss, expected_grad = _expected()
    before = metrics.counter("TransferFromDevice")
    loss, grad = _loss_and_gradient("gpu:lazy")
    np.testing.assert_allclose(loss, expected_loss, rtol=1e-5)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-5, atol=1e-6)
    assert metrics.counter("TransferFromDevice") > before


def test_a_device_that_reports_every_type_is_no_gpu():
    """The Oclgrind simulator reports every OpenCL device type, the CPU's among them: it once
    passed for a GPU, so braze.device("gpu") ran on it without BRAZE_GPU_ALLOW_CPU=1."""
    import pyopencl as cl

    types = cl.device_type
    assert opencl.is_gpu(SimpleNamespace(type=types.GPU))
    assert not opencl.is_gpu(SimpleNamespace(type=types.ALL))
    assert not opencl.is_gpu(SimpleNamespace(type=types.CPU))
