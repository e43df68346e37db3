"""Memory that compiled kernels use: scratch buffers belong to their executable (freed with
it, never kept by the process), and a buffer that cannot be allocated is a MemoryError that
names its size, raised before any kernel runs."""

from __future__ import annotations

import gc
import multiprocessing
import os
from pathlib import Path

import numpy as np
import pytest

import braze
from braze.backends import cpu
from braze.lazy import EXECUTOR, build_graph

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")


def _resident_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _padded_conv_graph(batch: int, padding):
    x = braze.tensor(np.ones((batch, 64, 64, 4), np.float32), device=braze.LAZY_CPU)
    # 16 filters: a padded copy of the input (fewer would take the interleaved kernel, which
    # keeps one expanded image per thread instead)
    w = braze.tensor(np.ones((3, 3, 4, 16), np.float32), device=braze.LAZY_CPU)
    traced = build_graph([braze.conv2d(x, w, padding=padding)._value])
    EXECUTOR._live.clear()
    return cpu.optimize(traced.graph), traced.args


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_dropping_executables_frees_their_scratch_buffers(tmp_path):
    """100 batch sizes of a padded convolution, each executable with a padded copy of its
    input (70 KB per image, 350 MB in all); once dropped, the process gives the memory back.
    Measured in a fresh interpreter: in one that earlier tests ran in, the allocator hands
    out memory they freed, which was resident already."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        grown, kept = pool.apply(_scratch_growth, (str(tmp_path),))
    assert grown > 200 << 20  # the copies were made
    assert kept < 64 << 20


def _scratch_growth(cache: str) -> tuple[int, int]:
    """(resident bytes the executables' calls added, resident bytes left once they are dropped)."""
    batches = range(1, 101)
    graphs = [_padded_conv_graph(b, "SAME") for b in batches]
    executables = cpu.compile_graphs([g for g, _ in graphs], cpu.DiskCache(Path(cache)))
    gc.collect()
    before = _resident_bytes()
    scratch = 0
    for executable, (_, args) in zip(executables, graphs, strict=True):
        (out,) = executable(args)
        assert out[0, 1, 1, 0] == 36.0  # nine taps of four ones
        scratch += sum(size for size, _ in executable.plan.scratch)
    assert scratch > 300 << 20
    grown = _resident_bytes() - before
    del executables, executable, out
    gc.collect()
    return grown, _resident_bytes() - before


def test_scratch_that_cannot_be_allocated_is_a_memory_error_naming_its_size(tmp_path):
    """A padded copy of about 600 GiB (padding far past the input, a stride that keeps the
    result small): the first call raises MemoryError, no kernel runs."""
    x = braze.tensor(np.ones((1, 8, 8, 1), np.float32), device=braze.LAZY_CPU)
    w = braze.tensor(np.ones((2, 2, 1, 1), np.float32), device=braze.LAZY_CPU)
    pad = 200_000
    out = braze.conv2d(x, w, stride=100_000, padding=((pad, pad), (pad, pad)))
    traced = build_graph([out._value])
    EXECUTOR._live.clear()
    executable = cpu.compile_graph(cpu.optimize(traced.graph), cpu.DiskCache(tmp_path))
    with pytest.raises(MemoryError, match=r"cannot allocate 640,025,600,256 bytes \(596\.1 GiB\) of kernel scratch"):
        executable(traced.args)
