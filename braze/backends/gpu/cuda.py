"""The CUDA runtime: kernels compiled by NVRTC to a cubin for the device's own compute
capability (never PTX: the wheel's NVRTC may be newer than the driver, which then refuses
its PTX), loaded and launched through the driver API of ``cuda-bindings``.

``compile_cubin`` needs no GPU (NVRTC runs on the CPU), which is how every test run checks
that each CUDA kernel it generates compiles for sm_90.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

import numpy as np

from braze.backends.gpu.binaries import cached_binary
from braze.backends.gpu.dialect import CUDA
from braze.backends.gpu.memory import BufferPool
from braze.backends.gpu.target import DeviceInfo, GpuError, out_of_memory
from braze.ir.primitive import Aval
from braze.runtime.diskcache import DiskCache


def _nvrtc() -> Any:
    from cuda.bindings import nvrtc  # type: ignore[import-not-found]  # optional: braze[cuda]

    return nvrtc


def _driver() -> Any:
    from cuda.bindings import driver  # type: ignore[import-not-found]  # optional: braze[cuda]

    return driver


def nvrtc_available() -> bool:
    try:
        _nvrtc().nvrtcVersion()
    except Exception:  # noqa: BLE001 - no bindings or no NVRTC library: no CUDA compiler
        return False
    return True


def nvrtc_version() -> str:
    _, major, minor = _nvrtc().nvrtcVersion()
    return f"nvrtc {major}.{minor}"


def compile_cubin(source: str, arch: str, name: str = "braze.cu") -> bytes:
    """``source`` compiled to a cubin for ``arch`` (e.g. ``sm_90``); a GpuError with NVRTC's
    log when it does not compile."""
    nvrtc = _nvrtc()
    status, program = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    _check(status, "nvrtcCreateProgram")
    try:
        options = [f"--gpu-architecture={arch}".encode(), b"-std=c++17"]
        (status,) = nvrtc.nvrtcCompileProgram(program, len(options), options)
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            _, size = nvrtc.nvrtcGetProgramLogSize(program)
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(program, log)
            raise GpuError(f"NVRTC could not compile {name} for {arch}:\n{log.decode(errors='replace')}")
        _, size = nvrtc.nvrtcGetCUBINSize(program)
        cubin = b" " * size
        _check(nvrtc.nvrtcGetCUBIN(program, cubin)[0], "nvrtcGetCUBIN")
        return cubin
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def cubin(source: str, device: DeviceInfo, cache: DiskCache) -> bytes:
    """``source`` compiled for ``device`` by NVRTC, or its cubin from the persistent cache
    (no GPU needed: NVRTC runs on the CPU)."""
    return cached_binary(cache, source, (device.identity(), "cubin"), lambda s: compile_cubin(s, device.arch), ".cu")


def _check(status: Any, what: str) -> None:
    if int(status) != 0:
        raise GpuError(f"CUDA: {what} failed ({status})")


@functools.cache
def device_count() -> int:
    """CUDA devices the driver reports; 0 without the bindings or a driver."""
    try:
        driver = _driver()
        (status,) = driver.cuInit(0)
        if status != driver.CUresult.CUDA_SUCCESS:
            return 0
        status, count = driver.cuDeviceGetCount()
        return count if status == driver.CUresult.CUDA_SUCCESS else 0
    except Exception:  # noqa: BLE001 - no bindings, no libcuda, no device: no CUDA
        return 0


class CudaRuntime:
    dialect = CUDA

    def __init__(self, ordinal: int = 0) -> None:
        driver = self.driver = _driver()
        _check(driver.cuInit(0)[0], "cuInit")
        status, self.device = driver.cuDeviceGet(ordinal)
        _check(status, "cuDeviceGet")
        status, self.context = driver.cuDevicePrimaryCtxRetain(self.device)
        _check(status, "cuDevicePrimaryCtxRetain")
        _check(driver.cuCtxSetCurrent(self.context)[0], "cuCtxSetCurrent")
        self.modules: list[Any] = []  # kept loaded while this runtime lives
        status, self.stream = driver.cuStreamCreate(0)
        _check(status, "cuStreamCreate")
        kind = driver.CUdevice_attribute

        def attribute(name: str) -> int:
            status, value = driver.cuDeviceGetAttribute(getattr(kind, name), self.device)
            _check(status, f"cuDeviceGetAttribute({name})")
            return int(value)

        major = attribute("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR")
        minor = attribute("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR")
        _, raw_name = driver.cuDeviceGetName(256, self.device)
        _, total = driver.cuDeviceTotalMem(self.device)
        self.info = DeviceInfo(
            runtime="cuda",
            name=raw_name.split(b"\0", 1)[0].decode(),
            arch=f"sm_{major}{minor}",
            compiler=nvrtc_version(),
            warp=attribute("CU_DEVICE_ATTRIBUTE_WARP_SIZE"),
            max_group=attribute("CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK"),
            local_memory=attribute("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK"),
            compute_units=attribute("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
            global_memory=int(total),
        )
        self.pool = BufferPool(self._create, driver.cuMemFree, limit=self.info.global_memory // 4)

    # Memory -------------------------------------------------------------------------------

    def allocate(self, nbytes: int) -> Any:
        pointer = self.pool.allocate(nbytes)
        if pointer is None:
            _, free, _ = self.driver.cuMemGetInfo()
            raise out_of_memory(nbytes, int(free), self.info.name)
        return pointer

    def release(self, pointer: Any) -> None:
        self.pool.release(pointer)

    def _create(self, size: int) -> Any | None:
        status, pointer = self.driver.cuMemAlloc(size)
        if status == self.driver.CUresult.CUDA_ERROR_OUT_OF_MEMORY:
            return None
        _check(status, "cuMemAlloc")
        return pointer

    def upload(self, pointer: Any, array: np.ndarray) -> None:
        array = np.ascontiguousarray(array)
        if array.nbytes:
            _check(self.driver.cuMemcpyHtoDAsync(pointer, array.ctypes.data, array.nbytes, self.stream)[0], "upload")
            self.synchronize()  # the host array may be freed as soon as this returns

    def download(self, pointer: Any, aval: Aval) -> np.ndarray:
        array = np.empty(aval.shape, aval.dtype.numpy)
        if array.nbytes:
            _check(self.driver.cuMemcpyDtoHAsync(array.ctypes.data, pointer, array.nbytes, self.stream)[0], "download")
            self.synchronize()
        return array

    def copy(self, source: Any, target: Any, nbytes: int, source_offset: int = 0, target_offset: int = 0) -> None:
        if nbytes:
            to, start = int(target) + target_offset, int(source) + source_offset
            _check(self.driver.cuMemcpyDtoDAsync(to, start, nbytes, self.stream)[0], "copy")

    # Kernels ----------------------------------------------------------------------------

    def load(self, source: str, names: list[str], cache: DiskCache) -> dict[str, Any]:
        status, module = self.driver.cuModuleLoadData(cubin(source, self.info, cache))
        _check(status, "cuModuleLoadData")
        self.modules.append(module)
        functions = {}
        for name in names:
            status, functions[name] = self.driver.cuModuleGetFunction(module, name.encode())
            _check(status, f"cuModuleGetFunction({name})")
        return functions

    def arguments(self, buffers: list[Any]) -> Any:
        """``buffers`` as the kernel arguments of ``launch``: made once for a step's launches,
        which all take the same buffers."""
        return (tuple([int(b) for b in buffers]), (ctypes.c_void_p,) * len(buffers))

    def launch(self, function: Any, groups: int, local: int, arguments: Any) -> None:
        status = self.driver.cuLaunchKernel(function, groups, 1, 1, local, 1, 1, 0, self.stream, arguments, 0)[0]
        _check(status, "cuLaunchKernel")

    def synchronize(self) -> None:
        _check(self.driver.cuStreamSynchronize(self.stream)[0], "cuStreamSynchronize")
