"""The GPU runtimes the GPU tests use: a real GPU when there is one, else a CPU OpenCL
device (POCL, or the Oclgrind simulator where POCL's LLVM does not know the host CPU), so
the GPU code path runs on every machine; and NVRTC, which compiles every CUDA kernel the
tests generate for an H200 (sm_90) without a GPU. Each marker skips with its reason when
its runtime is not installed."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from braze import lazy
from braze.backends import gpu
from braze.backends.gpu import cuda
from braze.backends.gpu import eager as gpu_eager
from braze.backends.gpu.target import H200
from braze.backends.reference.interpreter import evaluate
from braze.ir.graph import Graph
from braze.ir.text import parse_graph, print_graph
from braze.runtime.cache import BoundedCache, ExecutableCache
from braze.runtime.diskcache import DiskCache

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


def assert_tiled_kernels_match_reference(
    cases: list[tuple[str, list[tuple[int, ...]]]],
    dtype: str,
    warp: int,
    monkeypatch: pytest.MonkeyPatch,
    cache: Path,
    rng: np.random.Generator,
) -> None:
    """Each graph of ``cases`` (its text and its operands' shapes), optimized, is one kernel
    with tiles in local memory on the test device made to report a warp of ``warp``, and
    agrees with the reference interpreter on random operands; the same graphs, tiled for
    an H200, compile as CUDA C for sm_90."""
    runtime = gpu.runtime()
    monkeypatch.setattr(runtime, "info", dataclasses.replace(runtime.info, warp=warp))
    graphs = [gpu.optimize(parse_graph(text), verify=True) for text, _ in cases]
    for graph in graphs:
        _, source = gpu.render([graph], runtime.info)
        assert source.count("__kernel") == 1 and "xtile" in source, print_graph(graph)
    executables = gpu.compile_graphs(graphs, DiskCache(cache))
    for (text, shapes), executable in zip(cases, executables, strict=True):
        arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
        (got,) = executable(arrays)
        (want,) = evaluate(parse_graph(text), arrays)
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-5, err_msg=text)
    compiles_for_h200(graphs)


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
    monkeypatch.setattr(gpu_eager, "_KERNELS", BoundedCache(1024))
    monkeypatch.setattr(lazy.EXECUTOR, "cache", ExecutableCache())
    yield recorded
