"""The GPU runtime the GPU tests use: a real GPU when there is one, else a CPU OpenCL
device (POCL, or the Oclgrind simulator where POCL's LLVM does not know the host CPU), so
the GPU code path runs on every machine. ``requires_gpu_runtime`` skips a module with the
reason when neither exists (pyopencl not installed)."""

from __future__ import annotations

import os

import pytest

from braze.backends import gpu

os.environ.setdefault("BRAZE_GPU_ALLOW_CPU", "1")

requires_gpu_runtime = pytest.mark.skipif(
    not gpu.available(), reason="no GPU runtime: install braze[opencl] (pyopencl with POCL) or braze[cuda]"
)
