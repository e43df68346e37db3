"""GPU failures a user meets, each a BrazeError that says what happened: running out of
device memory (the bytes asked for and free; the step's inputs intact, so it can run again)
and kernels that do not compile (the kept source's path and the compiler's log); and the
persistent cache of GPU binaries, keyed by the source, the compiler and the device."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
from gpu_device import requires_gpu_runtime

import braze
from braze.backends import gpu
from braze.backends.gpu import DeviceArray, GpuError, cuda
from braze.backends.gpu.target import H200, out_of_memory
from braze.ir.dtypes import as_dtype
from braze.ir.errors import BrazeError
from braze.ir.primitive import Aval
from braze.optim import SGD
from braze.runtime import metrics
from braze.runtime.diskcache import DiskCache

pytestmark = requires_gpu_runtime
LR = 0.1
W0 = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
X = np.linspace(-2, 2, 15, dtype=np.float32).reshape(5, 3)
BROKEN = {
    "cuda": 'extern "C" __global__ void broken(float* a) { a[0] = undefined_name; }',
    "opencl": "__kernel void broken(__global float* a) { a[0] = undefined_name; }",
}


def _numpy_steps(steps: int) -> tuple[list[float], np.ndarray]:
    """The SGD steps below in NumPy: loss = sum(tanh(x @ w))."""
    w, losses = W0.astype(np.float64), []
    for _ in range(steps):
        y = np.tanh(X @ w)
        losses.append(float(y.sum()))
        w = w - LR * X.T @ (1 - y**2)
    return losses, w


def _sgd_step(w: braze.Tensor, optimizer: SGD, x: braze.Tensor) -> braze.Tensor:
    optimizer.zero_grad()
    loss = braze.tanh(x @ w).sum()
    loss.backward()
    optimizer.step()
    return loss


@pytest.fixture
def out_of_memory_when_armed(monkeypatch):
    """The runtime's allocator, refusing every request (with the runtime's own error) while
    ``armed[0]`` is true: a device that has just run out of memory."""
    runtime, armed = gpu.runtime(), [False]
    allocate = runtime.allocate

    def refusing(nbytes: int):
        if armed[0]:
            raise out_of_memory(nbytes, 0, runtime.info.name)
        return allocate(nbytes)

    monkeypatch.setattr(runtime, "allocate", refusing)
    return armed


def _asked_bytes(error: BaseException) -> int:
    found = re.search(r"GPU out of memory on .+: asked for (\d+) bytes, (\d+) bytes free", str(error))
    assert found, str(error)
    return int(found.group(1))


def test_asking_for_more_than_the_device_has_names_the_bytes_asked_for_and_free():
    runtime = gpu.runtime()
    asked = runtime.info.global_memory + 1
    with pytest.raises(BrazeError) as raised:
        DeviceArray(runtime, Aval((asked,), as_dtype("bool")))
    assert isinstance(raised.value, GpuError) and _asked_bytes(raised.value) == asked


@pytest.mark.parametrize("mode", ["jit", "lazy"])
def test_a_step_that_runs_out_of_memory_loses_nothing_and_runs_again(mode, out_of_memory_when_armed):
    device = braze.device("gpu:lazy" if mode == "lazy" else "gpu")
    w = braze.tensor(W0, device=device, requires_grad=True)
    x = braze.tensor(X, device=device)
    optimizer = SGD([w], lr=LR)
    step = braze.jit(_sgd_step) if mode == "jit" else _sgd_step
    losses = [step(w, optimizer, x).item()]
    if mode == "jit":
        before = w.numpy()
    out_of_memory_when_armed[0] = True
    with pytest.raises(GpuError) as raised:
        losses.append(step(w, optimizer, x).item())
    # An input's copy, the loss, or (under jit) the learning rate, a float64 input of every call.
    assert _asked_bytes(raised.value) in {W0.nbytes, X.nbytes, 4, 8}
    out_of_memory_when_armed[0] = False
    if mode == "jit":
        np.testing.assert_array_equal(w.numpy(), before)  # nothing written back
        losses.append(step(w, optimizer, x).item())  # the step runs again from the same values
    # On the lazy device the failed barrier's parameters are still pending on its intact
    # inputs: reading them runs the step again.
    expected_losses, expected_w = _numpy_steps(2)
    np.testing.assert_allclose(losses, expected_losses[: len(losses)], rtol=1e-5)
    np.testing.assert_allclose(w.numpy(), expected_w, rtol=1e-5, atol=1e-6)


def test_an_eager_op_that_runs_out_of_memory_leaves_its_operands(out_of_memory_when_armed):
    a, b = braze.tensor(W0, device="gpu"), braze.tensor(2 * W0, device="gpu")
    out_of_memory_when_armed[0] = True
    with pytest.raises(GpuError):
        a + b
    out_of_memory_when_armed[0] = False
    np.testing.assert_array_equal((a + b).numpy(), 3 * W0)


def _kept_source(error: BaseException) -> Path:
    found = re.search(r"\(the source is (.+)\)", str(error))
    assert found, str(error)
    return Path(found.group(1))


def test_a_kernel_that_does_not_compile_names_its_source_and_the_compilers_log(tmp_path):
    runtime = gpu.runtime()
    source = BROKEN[runtime.info.runtime]
    with pytest.raises(BrazeError) as raised:
        runtime.load(source, ["broken"], DiskCache(tmp_path))
    assert "undefined_name" in str(raised.value).split("(the source is")[0]  # the compiler's log
    kept = _kept_source(raised.value)
    assert kept.read_text() == source and kept.suffix == {"opencl": ".cl", "cuda": ".cu"}[runtime.info.runtime]


def test_a_cuda_kernel_that_does_not_compile_names_its_source_and_nvrtcs_log(tmp_path):
    if not cuda.nvrtc_available():
        pytest.skip("NVRTC is not installed (pip install braze[cuda])")
    with pytest.raises(GpuError) as raised:
        cuda.cubin(BROKEN["cuda"], H200, DiskCache(tmp_path))
    log = str(raised.value).split("(the source is")[0]
    assert "NVRTC could not compile" in log and 'identifier "undefined_name" is undefined' in log
    kept = _kept_source(raised.value)
    assert kept.read_text() == BROKEN["cuda"] and kept.suffix == ".cu"


def test_cubins_are_cached_by_source_compiler_and_architecture(tmp_path, monkeypatch):
    if not cuda.nvrtc_available():
        pytest.skip("NVRTC is not installed (pip install braze[cuda])")
    compiled: list[str] = []
    compile_cubin = cuda.compile_cubin

    def counting(source: str, arch: str) -> bytes:
        compiled.append(arch)
        return compile_cubin(source, arch)

    monkeypatch.setattr(cuda, "compile_cubin", counting)
    cache, source = DiskCache(tmp_path), 'extern "C" __global__ void one(float* a) { a[0] = 1.0f; }'
    first = cuda.cubin(source, H200, cache)
    assert cuda.cubin(source, H200, cache) == first and len(compiled) == 1  # from the disk
    cuda.cubin(source.replace("1.0f", "2.0f"), H200, cache)
    cuda.cubin(source, dataclasses.replace(H200, compiler="nvrtc 99.9"), cache)
    cuda.cubin(source, dataclasses.replace(H200, arch="sm_80"), cache)
    assert compiled == ["sm_90", "sm_90", "sm_90", "sm_80"]
    for entry in tmp_path.rglob("*.so"):
        entry.write_bytes(b"not a cubin")  # a tampered entry is never loaded, but rebuilt
    with pytest.warns(UserWarning, match="corrupt"):
        assert cuda.cubin(source, H200, cache) == first
    assert len(compiled) == 5


def test_a_compiled_module_is_loaded_from_the_disk_cache_in_a_new_process(tmp_path, monkeypatch):
    graph = braze.ir.text.parse_graph(
        "graph(%0: f32[3,4], %1: f32[3,4]) {\n  %2 = mul(%0, %1) : f32[3,4]\n  return (%2)\n}"
    )
    monkeypatch.setattr(gpu, "_runtime", gpu._runtime.__wrapped__)  # a runtime made afresh, as in a new process
    cold, warm = metrics.counter("DiskCacheMiss"), metrics.counter("DiskCacheHit")
    for _ in range(2):
        (product,) = gpu.compile_graph(graph, DiskCache(tmp_path))([W0, 2 * W0])
        np.testing.assert_allclose(product, 2 * W0 * W0, rtol=1e-6)
    assert metrics.counter("DiskCacheMiss") == cold + 1 and metrics.counter("DiskCacheHit") == warm + 1
