"""The GPU runtimes the GPU tests use: a real GPU when there is one, else a CPU OpenCL
device (POCL, or the Oclgrind simulator where POCL's LLVM does not know the host CPU), so
the GPU code path runs on every machine; and NVRTC, which compiles every CUDA kernel the
tests generate for an H200 (sm_90) without a GPU. Each marker skips with its reason when
its runtime is not installed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from braze import lazy
from braze.backends import gpu
from braze.backends.gpu import cuda
from braze.backends.gpu import eager as gpu_eager
from braze.backends.gpu.target import H200
from braze.ir.graph import Graph
from braze.runtime.cache import ExecutableCache

os.environ.setdefault("BRAZE_GPU_ALLOW_CPU", "1")

requires_gpu_runtime = pytest.mark.skipif(
    not gpu.available(), reason="no GPU runtime: install braze[opencl] (pyopencl with POCL) or braze[cuda]"
)


def compiles_for_h200(graphs: list[Graph]) -> None:
    """Render ``graphs`` as CUDA C for an H200 and compile them with NVRTC for sm_90 (a
    GpuError with NVRTC's log if any kernel does not compile)."""
    if not cuda.nvrtc_available():
        pytest.skip("NVRTC is not installed (pip install braze[cuda])")
    _, source = gpu.render(graphs, H200)
    assert cuda.compile_cubin(source, H200.arch)


@contextmanager
def recording_gpu_graphs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Graph]]:
    """Every graph compiled for the GPU backend inside the block (eager single-op kernels
    and lazy traces alike go through ``gpu.compile_graphs``), with empty in-process caches
    so that kernels compiled by earlier tests are generated, and recorded, again."""
    recorded: list[Graph] = []
    compile_graphs = gpu.compile_graphs

    def recording(graphs: list[Graph], *args: object, **kwargs: object) -> list:
        recorded.extend(graphs)
        return compile_graphs(graphs, *args, **kwargs)

    monkeypatch.setattr(gpu, "compile_graphs", recording)
    monkeypatch.setattr(gpu_eager, "_KERNELS", {})
    monkeypatch.setattr(lazy.EXECUTOR, "cache", ExecutableCache())
    yield recorded
