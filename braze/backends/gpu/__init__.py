"""The GPU backend: fused graphs as CUDA C or OpenCL C kernels from one emitter, run by the
CUDA driver (kernels compiled by NVRTC) or by an OpenCL runtime.

``runtime()`` picks CUDA when a driver and a device exist, else an OpenCL GPU;
``BRAZE_GPU_RUNTIME=cuda|opencl`` forces one, and ``BRAZE_GPU_ALLOW_CPU=1`` lets a CPU
OpenCL device (POCL, Oclgrind) stand in for a GPU, which is how every test run executes
the GPU code path on machines without one.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np

from braze.backends.gpu.dialect import DIALECTS, Dialect
from braze.backends.gpu.executable import DeviceArray, GpuExecutable
from braze.backends.gpu.lowering import LOWERINGS
from braze.backends.gpu.module import ModulePlan, plan_module
from braze.backends.gpu.staged import StagedExecutable, has_loops, pieces
from braze.backends.gpu.target import DeviceInfo, GpuError
from braze.ir.graph import Graph
from braze.ir.primitive import Aval, Primitive
from braze.ir.prims.collectives import all_reduce
from braze.ir.prims.sources import constant
from braze.runtime import metrics
from braze.runtime.backend import Backend, register_backend
from braze.runtime.diskcache import DiskCache
from braze.runtime.dumps import dump_source

__all__ = [
    "GPU_BACKEND",
    "DeviceArray",
    "DeviceInfo",
    "GpuError",
    "GpuBackend",
    "GpuExecutable",
    "available",
    "compile_graph",
    "compile_graphs",
    "module_source",
    "optimize",
    "render",
    "runtime",
    "upload",
]


def _requested() -> str:
    requested = os.environ.get("BRAZE_GPU_RUNTIME", "").lower()
    if requested not in ("", "cuda", "opencl"):
        raise GpuError(f"unknown BRAZE_GPU_RUNTIME {requested!r}: expected 'cuda' or 'opencl'")
    return requested


@functools.cache
def _runtime(kind: str) -> Any:
    if kind in ("", "cuda"):
        from braze.backends.gpu import cuda

        if cuda.device_count() > 0:
            return cuda.CudaRuntime()
        if kind == "cuda":
            raise GpuError("BRAZE_GPU_RUNTIME=cuda, but no CUDA driver with a device was found")
    from braze.backends.gpu import opencl

    if opencl.find_device() is None:
        raise GpuError("no CUDA device and no OpenCL GPU (BRAZE_GPU_ALLOW_CPU=1 accepts CPU OpenCL devices)")
    return opencl.OpenCLRuntime()


def runtime() -> Any:
    """The process's GPU runtime (made once); a GpuError when there is none."""
    return _runtime(_requested())


def upload(array: np.ndarray) -> DeviceArray:
    """``array`` copied to the process runtime's device (a counted ``TransferToDevice``)."""
    return DeviceArray.from_numpy(runtime(), array)


def available() -> bool:
    try:
        runtime()
    except (GpuError, ImportError):
        return False
    return True


def module_source(plans: list[ModulePlan], dialect: Dialect) -> str:
    """One translation unit holding every kernel of ``plans``."""
    kernels = [k.source(dialect, p.buffer_count) for p in plans for k in p.kernels]
    return "\n".join([dialect.prelude, *kernels])


def render(graphs: list[Graph], device: DeviceInfo) -> tuple[list[ModulePlan], str]:
    """The kernels of optimized ``graphs`` for ``device``, and their source in its dialect
    (a graph with loops: those of its stretches and its loops' bodies)."""
    graphs = [piece for g in graphs for piece in pieces(g, GPU_BACKEND.optimize)]
    dialect, launch = DIALECTS[device.runtime], device.launch_shape()
    plans = [plan_module(g, dialect, launch, f"braze_g{i}", device.alignment) for i, g in enumerate(graphs)]
    return plans, module_source(plans, dialect)


def compile_graphs(graphs: list[Graph], cache: DiskCache | None = None) -> list[GpuExecutable | StagedExecutable]:
    """Optimized graphs as executables of one program (one compiler run); a graph with
    loops as a host loop of launch sequences, each compiled once."""
    gpu = runtime()
    plain = [g for g in graphs if not has_loops(g)]
    plans, source = render(plain, gpu.info)
    dump_source(source, gpu.dialect.source_suffix)
    with metrics.timed("NativeCompileTime"):
        kernels = gpu.load(source, [k.name for p in plans for k in p.kernels], cache or DiskCache())
    compiled = iter([GpuExecutable(p, kernels, gpu) for p in plans])
    return [
        StagedExecutable(g, gpu, lambda piece: compile_graph(piece, cache), GPU_BACKEND.optimize)
        if has_loops(g)
        else next(compiled)
        for g in graphs
    ]


def compile_graph(graph: Graph, cache: DiskCache | None = None) -> GpuExecutable | StagedExecutable:
    return compile_graphs([graph], cache)[0]


# A literal is already a value; a collective runs on the host transport.
_HOST_ONLY = frozenset({constant, all_reduce})


class GpuBackend(Backend):
    """Eager ops are single-op kernels on device arrays (``eager.py``); lazy traces and
    jitted functions are one launch sequence (``executable.py``)."""

    name = "gpu"
    kinds = ("GPU",)
    priority = 10
    host_memory = False
    donates = False  # every result gets a new device buffer

    def available(self) -> bool:
        return available()

    @property
    def alignment(self) -> int:
        return runtime().info.alignment

    def lower(self, optimized: Graph) -> GpuExecutable | StagedExecutable:
        return compile_graph(optimized)

    def apply(self, primitive: Primitive, values: list, attrs: dict, aval: Aval) -> DeviceArray:
        if primitive in _HOST_ONLY:
            return eager.apply_on_host(primitive, values, attrs, aval)
        return eager.apply(primitive, values, attrs, aval)

    def upload(self, array: np.ndarray) -> DeviceArray:
        return upload(array)


GPU_BACKEND = register_backend(GpuBackend(LOWERINGS))


def optimize(graph: Graph, verify: bool | None = None, fusion: bool | None = None) -> Graph:
    """``graph`` through the pass pipeline as this backend compiles it: what
    ``compile_graph`` takes."""
    return GPU_BACKEND.optimize(graph, verify, fusion)


from braze.backends.gpu import eager  # noqa: E402 - it compiles its kernels with compile_graph above
