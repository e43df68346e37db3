"""braze.device("gpu"): eager tensors run each primitive as a cached single-op GPU kernel,
lazy ones compile their traces with the GPU backend; both agree with NumPy, and copies
between host and device are counted. Eager values stay on the device: host data is copied
in when a tensor is made from it, and a value is copied out only when it is read."""

from __future__ import annotations

import copy
import pickle
from types import SimpleNamespace

import numpy as np
from gpu_device import requires_gpu_runtime

import braze
from braze import nn, optim
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


_RNG = np.random.default_rng(7)
X = _RNG.standard_normal((3, 4)).astype(np.float32)
W = _RNG.standard_normal((4, 2)).astype(np.float32)


def _transfers() -> tuple[int, int]:
    return metrics.counter("TransferToDevice"), metrics.counter("TransferFromDevice")


def _copied_since(before: tuple[int, int]) -> tuple[int, int]:
    """(uploads, downloads) since ``before``."""
    to_device, from_device = _transfers()
    return to_device - before[0], from_device - before[1]


def _chain() -> tuple[braze.Tensor, braze.Tensor, braze.Tensor]:
    """A loss through a product, a matmul, exp, reductions and one Python scalar, and its
    gradients with respect to both operands, on the eager GPU."""
    x = braze.tensor(X, device="gpu", requires_grad=True)
    w = braze.tensor(W, device="gpu", requires_grad=True)
    h = braze.exp(x @ w)
    loss = (h * h).sum() * 0.5 + x.sum()
    loss.backward()
    return loss, x, w


def test_eager_gpu_values_stay_on_the_device_until_read():
    _chain()  # compiles every kernel first, and uploads the 0-d constants the ops make
    before = _transfers()
    loss, x, w = _chain()
    # Uploads: x and w (host data) only; the two 0-d constants the ops make, the scalar 0.5
    # and backward's seed, ones(()), were uploaded by the first chain and are shared (the
    # VJPs of mul, add, sum, exp and matmul make none).
    # Downloads: none, so every result so far, the gradients among them, is a device array.
    assert _copied_since(before) == (2, 0)
    h = np.exp(X @ W)
    np.testing.assert_allclose(loss.item(), 0.5 * (h * h).sum() + X.sum(), rtol=1e-5)
    assert _copied_since(before) == (2, 1)
    np.testing.assert_allclose(x.grad.numpy(), (h * h) @ W.T + 1, rtol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), X.T @ (h * h), rtol=1e-5)
    assert _copied_since(before) == (2, 3)
    str(w.grad)  # printing is a read too, and no host copy was kept from the last one
    assert _copied_since(before) == (2, 4)


def test_a_python_scalar_is_uploaded_once_however_many_ops_use_it():
    x = braze.tensor(X, device="gpu")
    before = _transfers()
    y = x * 0.375 + 0.375  # a number no other test uses
    assert _copied_since(before) == (1, 0)
    z = (y - 0.375) * 0.375
    assert _copied_since(before) == (1, 0)
    np.testing.assert_allclose(z.numpy(), (X * 0.375 + 0.375 - 0.375) * 0.375, rtol=1e-6)


def test_to_copies_once_each_way_between_cpu_and_gpu():
    before = _transfers()
    on_gpu = braze.tensor(X).to("gpu")
    assert on_gpu.device.kind == "GPU" and _copied_since(before) == (1, 0)
    squared = on_gpu * on_gpu
    back = squared.to("cpu")
    assert back.device.kind == "CPU" and _copied_since(before) == (1, 1)
    np.testing.assert_allclose(back.numpy(), X * X, rtol=1e-6)
    assert _copied_since(before) == (1, 1)  # a CPU tensor's read copies nothing


def test_a_0d_tensor_keeps_its_shape_on_the_device():
    """An upload once made a 0-d array 1-d (np.ascontiguousarray does), so a scalar read
    back from a lazy GPU tensor had shape (1,), and eager kernels were keyed by that shape."""
    for device in ("gpu", "gpu:lazy"):
        t = braze.tensor(3.0, device=device)
        assert t.numpy().shape == () and (t * t).numpy().shape == (), device


def test_a_jitted_step_on_gpu_tensors_runs_on_their_device_arrays():
    w, x = braze.tensor(W, device="gpu"), braze.tensor(X, device="gpu")

    @braze.jit
    def step(w: braze.Tensor, x: braze.Tensor) -> braze.Tensor:
        y = braze.tanh(x @ w)
        w.assign(w - 0.5 * (x.T @ y))
        return y.sum()

    step(w, x)  # traces (reading the state once, to record it) and compiles
    before = _transfers()
    loss = step(w, x)
    assert _copied_since(before) == (0, 0)  # the state and the result stay on the device
    expected_w = W - 0.5 * (X.T @ np.tanh(X @ W))
    np.testing.assert_allclose(loss.item(), np.tanh(X @ expected_w).sum(), rtol=1e-5)
    np.testing.assert_allclose(w.numpy(), expected_w - 0.5 * (X.T @ np.tanh(X @ expected_w)), rtol=1e-5, atol=1e-6)
    assert _copied_since(before) == (0, 2)


def test_a_model_trained_on_the_gpu_saves_and_loads_its_values(tmp_path):
    model = nn.Linear(4, 2).to("gpu")
    initial = model.state_dict()
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    x = braze.tensor(X, device="gpu")
    (model(x) ** 2).mean().backward()
    optimizer.step()
    model.save(tmp_path / "model.npz")
    trained = model(x).numpy()
    for device in ("gpu", "cpu"):
        fresh = nn.Linear(4, 2).to(device)
        before = _transfers()
        fresh.load(tmp_path / "model.npz")
        assert _copied_since(before) == ((2, 0) if device == "gpu" else (0, 0))  # one upload a parameter
        np.testing.assert_allclose(fresh(braze.tensor(X, device=device)).numpy(), trained, rtol=1e-5, atol=1e-6)
    for name, value in model.state_dict().items():
        assert not np.array_equal(value, initial[name]), f"{name} did not train"


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


def test_a_gpu_model_deep_copies_and_pickles_through_the_host():
    """A copy owns device buffers of its own: training it leaves the original as it was."""
    for device in ("gpu", "gpu:lazy"):
        model = nn.Linear(4, 2).to(device)
        before = model.state_dict()
        twin = copy.deepcopy(model)
        optimizer = optim.SGD(twin.parameters(), lr=0.5)
        x = braze.tensor(X, device=device)
        twin(x).sum().backward()
        optimizer.step()
        for name, value in model.state_dict().items():
            np.testing.assert_array_equal(value, before[name], err_msg=f"{device} {name}")
        assert any(not np.array_equal(twin.state_dict()[n], before[n]) for n in before), device
        restored = pickle.loads(pickle.dumps(model.kernel))
        assert restored.device == model.kernel.device
        np.testing.assert_array_equal(restored.numpy(), before["kernel"])
