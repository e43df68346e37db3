"""The OpenCL runtime, through pyopencl: any OpenCL GPU, and for tests a CPU OpenCL device
(POCL, or the Oclgrind simulator, which checks every access) when CPU devices are allowed."""

from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np

from braze.backends.gpu.binaries import cached_binary
from braze.backends.gpu.dialect import OPENCL
from braze.backends.gpu.memory import BufferPool
from braze.backends.gpu.target import DeviceInfo, GpuError, out_of_memory
from braze.ir.primitive import Aval
from braze.runtime.diskcache import DiskCache

_PROBE = "__kernel void braze_probe(__global float* a) { a[get_global_id(0)] += 1.0f; }"


def _opencl() -> Any:
    import pyopencl  # type: ignore[import-not-found]  # an optional dependency: braze[opencl]

    return pyopencl


def cpu_devices_allowed() -> bool:
    """``BRAZE_GPU_ALLOW_CPU=1``: a CPU OpenCL device (POCL, Oclgrind) counts as a GPU."""
    return os.environ.get("BRAZE_GPU_ALLOW_CPU") == "1"


def is_gpu(device: Any) -> bool:
    """Whether an OpenCL device is a GPU. The Oclgrind simulator reports every device type,
    the CPU's among them, and is no GPU: it runs only where CPU devices are allowed."""
    types = _opencl().device_type
    return bool(device.type & types.GPU) and not device.type & types.CPU


def _builds(device: Any) -> bool:
    """Whether the device compiles a kernel (POCL's LLVM rejects CPUs newer than itself)."""
    cl = _opencl()
    try:
        cl.Program(cl.Context([device]), _PROBE).build()
    except Exception:  # noqa: BLE001 - any failure means this device cannot run braze's kernels
        return False
    return True


@functools.cache
def find_device() -> Any | None:
    """The first OpenCL GPU that compiles kernels; then, when allowed, any such device
    (platforms named in ``BRAZE_OPENCL_PLATFORM`` first)."""
    try:
        cl = _opencl()
        devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    except Exception:  # noqa: BLE001 - no pyopencl, no ICD loader or no platform: no OpenCL
        return None
    preferred = os.environ.get("BRAZE_OPENCL_PLATFORM", "").lower()
    devices.sort(key=lambda d: (not is_gpu(d), preferred not in d.platform.name.lower()))
    for device in devices:
        if (is_gpu(device) or cpu_devices_allowed()) and _builds(device):
            return device
    return None


class OpenCLRuntime:
    dialect = OPENCL

    def __init__(self, device: Any | None = None) -> None:
        cl = _opencl()
        device = device or find_device()
        if device is None:
            raise GpuError("no OpenCL device that compiles kernels (set BRAZE_GPU_ALLOW_CPU=1 to accept CPU devices)")
        self.cl = cl
        self.device = device
        self.context = cl.Context([device])
        self.queue = cl.CommandQueue(self.context)
        probe = cl.Program(self.context, _PROBE).build().braze_probe
        multiple = probe.get_work_group_info(cl.kernel_work_group_info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE, device)
        extensions = device.extensions.split()
        if "cl_nv_device_attribute_query" in extensions:
            multiple = device.warp_size_nv
        elif "cl_amd_device_attribute_query" in extensions:
            multiple = device.wavefront_width_amd
        self.info = DeviceInfo(
            runtime="opencl",
            name=f"{device.platform.name.strip()}: {device.name.strip()}",
            arch=device.version.strip(),
            compiler=f"{device.platform.version.strip()} {device.driver_version.strip()}",
            warp=int(multiple),
            max_group=int(device.max_work_group_size),
            local_memory=int(device.local_mem_size),
            compute_units=int(device.max_compute_units),
            global_memory=int(device.global_mem_size),
            is_gpu=is_gpu(device),
        )
        self.pool = BufferPool(self._create, lambda buffer: buffer.release(), limit=self.info.global_memory // 4)
        # Oclgrind 21.10 interprets LLVM IR but not the integer intrinsics (llvm.abs,
        # llvm.smax...) that clang's optimizer turns selects into.
        self.options = ["-cl-std=CL1.2"] + ["-cl-opt-disable"] * ("Oclgrind" in device.platform.name)

    # Memory -------------------------------------------------------------------------------

    def allocate(self, nbytes: int) -> Any:
        buffer = self.pool.allocate(nbytes)
        if buffer is None:
            raise out_of_memory(nbytes, self.info.global_memory - self.pool.held, self.info.name)
        return buffer

    def release(self, buffer: Any) -> None:
        self.pool.release(buffer)

    def _create(self, size: int) -> Any | None:
        if size > self.info.global_memory - self.pool.held or size > self.device.max_mem_alloc_size:
            return None
        try:
            return self.cl.Buffer(self.context, self.cl.mem_flags.READ_WRITE, size)
        except self.cl.MemoryError:
            return None

    def upload(self, buffer: Any, array: np.ndarray) -> None:
        if array.nbytes:
            self.cl.enqueue_copy(self.queue, buffer, np.ascontiguousarray(array))

    def download(self, buffer: Any, aval: Aval) -> np.ndarray:
        array = np.empty(aval.shape, aval.dtype.numpy)
        if array.nbytes:
            self.cl.enqueue_copy(self.queue, array, buffer)
        return array

    def copy(self, source: Any, target: Any, nbytes: int, source_offset: int = 0, target_offset: int = 0) -> None:
        if nbytes:
            self.cl.enqueue_copy(
                self.queue, target, source, byte_count=nbytes, src_offset=source_offset, dst_offset=target_offset
            )

    # Kernels ----------------------------------------------------------------------------

    def load(self, source: str, names: list[str], cache: DiskCache) -> dict[str, Any]:
        """Build ``source`` (or load its binary from the cache) and return its kernels."""
        binary = cached_binary(cache, source, (self.info.identity(), " ".join(self.options)), self._compile, ".cl")
        program = self.cl.Program(self.context, [self.device], [binary]).build()
        return {name: getattr(program, name) for name in names}

    def _compile(self, source: str) -> bytes:
        try:
            program = self.cl.Program(self.context, source).build(options=self.options)
        except self.cl.RuntimeError as error:
            raise GpuError(f"the OpenCL compiler rejected the kernels:\n{error}") from None
        (binary,) = program.get_info(self.cl.program_info.BINARIES)
        return binary

    def arguments(self, buffers: list[Any]) -> Any:
        """``buffers`` as the kernel arguments of ``launch``."""
        return buffers

    def launch(self, kernel: Any, groups: int, local: int, arguments: Any) -> None:
        kernel.set_args(*arguments)
        self.cl.enqueue_nd_range_kernel(self.queue, kernel, (groups * local,), (local,))

    def synchronize(self) -> None:
        self.queue.finish()
