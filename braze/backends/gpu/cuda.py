"""The CUDA runtime: kernels compiled by NVRTC to a cubin for the device's own compute
capability, loaded and launched through the driver API of ``cuda-bindings``."""

from __future__ import annotations

import functools


@functools.cache
def device_count() -> int:
    """CUDA devices the driver reports; 0 without the bindings or a driver."""
    try:
        from cuda.bindings import driver  # type: ignore[import-not-found]  # optional: braze[cuda]

        (status,) = driver.cuInit(0)
        if status != driver.CUresult.CUDA_SUCCESS:
            return 0
        status, count = driver.cuDeviceGetCount()
        return count if status == driver.CUresult.CUDA_SUCCESS else 0
    except Exception:  # noqa: BLE001 - no bindings, no libcuda, no device: no CUDA
        return 0
