"""DLPack exchange with NumPy, PyTorch, JAX and any other library that speaks the protocol.

Both directions share memory: ``braze.from_dlpack(x)`` wraps the producer's buffer in an
eager CPU tensor, and ``torch.from_dlpack(t)`` (or ``np.from_dlpack``, ``jax.dlpack``)
reads a braze tensor's buffer without a copy, so a write through the other library is seen
by braze (a GPU tensor's value is downloaded first: the other library shares that copy).
braze's own in-place updates (``assign``, ``+=``, optimizer steps) give a tensor a new
buffer rather than writing into the old one, as gradients recorded earlier keep the old
values; a buffer shared by export keeps the value it had.

A bfloat16 tensor is not exported: braze stores it as 16-bit integer bit patterns, which
a consumer would read as integers, and NumPy, the usual consumer, has no bfloat16 (it
refuses PyTorch's bfloat16 tensors too). ``__dlpack__`` raises a ``BufferError`` that
says to convert first (``t.astype("float32")``); ``braze.from_dlpack`` of a braze
bfloat16 tensor shares it as itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from braze.ir.dtypes import as_dtype, bfloat16
from braze.ir.errors import DeviceError
from braze.runtime.backend import home_backend
from braze.runtime.device import CPU
from braze.tensor import Tensor, executor_for

# DLPack's device types (dlpack.h, DLDeviceType) that braze can name in an error.
KDL_CPU = 1
_DEVICE_NAMES = {1: "CPU", 2: "CUDA", 3: "CUDA host", 4: "OpenCL", 7: "Vulkan", 8: "Metal", 10: "ROCm", 14: "oneAPI"}


def from_dlpack(x: Any) -> Tensor:
    """An eager CPU tensor sharing memory with ``x``, any object with ``__dlpack__`` (a
    NumPy array, a PyTorch or JAX CPU array, a braze tensor)."""
    if not hasattr(x, "__dlpack__") or not hasattr(x, "__dlpack_device__"):
        raise TypeError(f"from_dlpack: {type(x).__name__} does not support the DLPack protocol (no __dlpack__)")
    device_type, ordinal = x.__dlpack_device__()
    if device_type != KDL_CPU:
        where = _DEVICE_NAMES.get(int(device_type), f"DLPack device type {int(device_type)}")
        raise DeviceError(f"from_dlpack: the array lives on {where}:{ordinal}; braze can share CPU memory only")
    if isinstance(x, Tensor) and x.dtype is bfloat16:  # its bit patterns, shared as bfloat16 again
        return Tensor.from_numpy(_held_array(x), CPU)
    array = np.from_dlpack(x)
    as_dtype(array.dtype, op="from_dlpack")  # a clear error for dtypes braze does not have
    return Tensor.from_numpy(array, CPU)


def exported_array(tensor: Tensor) -> np.ndarray:
    """The NumPy array holding ``tensor``'s value, a lazy tensor's materialized first: the
    buffer itself (not the read-only view ``numpy()`` returns), for DLPack to share; for a
    GPU tensor, a copy of its own (a lazy GPU tensor's download serves later reads, so the
    other library must not write into it). A bfloat16 tensor raises ``BufferError``: its
    buffer holds bit patterns in 16-bit integers, which DLPack would call integers."""
    if tensor.dtype is bfloat16:
        raise BufferError(
            "__dlpack__: a bfloat16 tensor cannot be shared through DLPack (NumPy has no bfloat16, and braze "
            "stores it as 16-bit integer bit patterns, which would be read as integers); convert it first "
            "with t.astype('float32'), or read its float32 values with t.numpy()"
        )
    return _held_array(tensor)


def _held_array(tensor: Tensor) -> np.ndarray:
    """``exported_array`` for any dtype: a bfloat16 tensor's uint16 bit patterns."""
    array = executor_for(tensor.device).to_numpy(tensor._value, tensor.device)
    return array if home_backend(tensor.device.kind).host_memory else np.array(array)
