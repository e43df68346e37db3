"""What a GPU runtime reports about its device, and the launch shape derived from it."""

from __future__ import annotations

from dataclasses import dataclass

from braze.backends.gpu.kernels import LaunchShape
from braze.ir.errors import BrazeError

# Work-groups per compute unit: enough for one to hide another's memory latency.
GROUPS_PER_UNIT = 4
# Warps per work-group: a reduction's tree then has a few levels, and a group still fits
# several times in one compute unit's registers.
WARPS_PER_GROUP = 4


class GpuError(BrazeError, RuntimeError):
    """A GPU runtime failure: out of memory, a kernel that failed to compile, no device."""


@dataclass(frozen=True)
class DeviceInfo:
    runtime: str  # "cuda" or "opencl"
    name: str
    arch: str  # sm_90, or the OpenCL device's version and driver
    compiler: str  # the kernel compiler's identity (NVRTC version, OpenCL driver)
    warp: int  # threads that run in lockstep (warp, wavefront, or the preferred multiple)
    max_group: int
    local_memory: int  # bytes per work-group
    compute_units: int
    global_memory: int
    is_gpu: bool = True
    alignment: int = 64  # bytes each buffer of the arena starts at: any element type's loads line up

    def launch_shape(self) -> LaunchShape:
        local = 1
        while local * 2 <= min(self.max_group, WARPS_PER_GROUP * self.warp):
            local *= 2
        return LaunchShape(local, max(1, self.compute_units * GROUPS_PER_UNIT), self.local_memory)

    def identity(self) -> str:
        """What a cached binary was built for: it is never loaded for another."""
        return f"{self.runtime}|{self.name}|{self.arch}|{self.compiler}"


def out_of_memory(asked: int, free: int, device: str) -> GpuError:
    return GpuError(f"GPU out of memory on {device}: asked for {asked} bytes, {free} bytes free")


# The GPU the CUDA kernels of every test run are compiled for (by NVRTC, without the GPU):
# an H200's properties, as its driver reports them.
H200 = DeviceInfo(
    runtime="cuda",
    name="NVIDIA H200",
    arch="sm_90",
    compiler="nvrtc",
    warp=32,
    max_group=1024,
    local_memory=48 * 1024,
    compute_units=132,
    global_memory=141 * 10**9,
)
