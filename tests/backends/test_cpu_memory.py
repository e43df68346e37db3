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
        scratch += sum(slot.nbytes for slot in executable.plan.scratch)
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


def _doubling_executable(tmp_path):
    x = braze.tensor(np.zeros(1000, np.float32), device=braze.LAZY_CPU)
    traced = build_graph([(x * 2.0 + 1.0)._value])
    EXECUTOR._live.clear()
    (executable,) = cpu.compile_graphs([cpu.optimize(traced.graph)], cpu.DiskCache(tmp_path))
    args = list(traced.args)  # x, and the scalars lifted into parameters
    at = next(k for k, a in enumerate(args) if a.shape == (1000,))

    def call(array: np.ndarray) -> list[np.ndarray]:
        args[at] = array
        return executable(args)

    return call


def test_results_a_caller_holds_are_never_written_again(tmp_path):
    """A call takes back a result buffer of an earlier call only once nothing holds it: not
    the caller, not a view of it."""
    executable = _doubling_executable(tmp_path)
    inputs = [np.full(1000, float(v), np.float32) for v in range(5)]
    (first,) = executable(inputs[0])
    (second,) = executable(inputs[1])
    view = second[10:20]
    del second
    for later in inputs[2:]:
        (out,) = executable(later)
        np.testing.assert_array_equal(out, later * 2 + 1)
    np.testing.assert_array_equal(first, np.ones(1000, np.float32))
    np.testing.assert_array_equal(view, np.full(10, 3.0, np.float32))


def test_a_dropped_result_gives_its_buffer_to_a_later_call(tmp_path):
    executable = _doubling_executable(tmp_path)
    (out,) = executable(np.ones(1000, np.float32))
    address = out.ctypes.data
    del out
    (again,) = executable(np.full(1000, 2.0, np.float32))
    assert again.ctypes.data == address
    np.testing.assert_array_equal(again, np.full(1000, 5.0, np.float32))


def test_a_kernel_of_several_results_replaces_a_parameter_another_result_reads():
    """An update written in place by a kernel that also computes, from the old value, a
    second result: every result of an element is computed before any is stored."""

    def step(p):
        with braze.no_grad():
            scaled = p * 3.0
            p += 1.0
        return scaled

    start = np.random.default_rng(3).standard_normal(4096).astype(np.float32)
    p = braze.tensor(start.copy())
    compiled = braze.jit(step, donate_argnums=(0,))
    scaled = compiled(p)
    (entry,) = compiled._compiled.values()
    assert entry.executable.plan.in_place  # the update took the parameter's buffer
    np.testing.assert_array_equal(scaled.numpy(), start * np.float32(3.0))
    np.testing.assert_array_equal(p.numpy(), start + np.float32(1.0))


def test_an_update_written_in_place_is_marked_for_vectors_however_small():
    """A kernel writing over a donated parameter has no ``restrict`` pointers, so the C
    compiler cannot prove its stores leave its inputs alone: its loop must say so itself
    (without it, AdamW's update of four small parameters, sixteen arrays, ran scalar)."""

    def step(p, g, m):
        with braze.no_grad():
            m *= 0.9
            m += g
            p -= 0.1 * m / braze.sqrt(m * m + 1.0)

    rng = np.random.default_rng(4)
    p0, g, m0 = (rng.standard_normal(1000).astype(np.float32) for _ in range(3))
    p, m = braze.tensor(p0.copy()), braze.tensor(m0.copy())
    compiled = braze.jit(step, donate_argnums=(0, 2))
    compiled(p, braze.tensor(g), m)
    (entry,) = compiled._compiled.values()
    plan = entry.executable.plan
    assert plan.in_place
    written_in_place = [source for source in plan.kernel_sources if "restrict out0" not in source]
    assert written_in_place and all("#pragma omp simd" in source for source in written_in_place)
    m1 = m0 * np.float32(0.9) + g
    # the terms are below 5 in size; a fused multiply-add may round once less than NumPy
    np.testing.assert_allclose(m.numpy(), m1, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(p.numpy(), p0 - np.float32(0.1) * m1 / np.sqrt(m1 * m1 + 1), rtol=1e-5, atol=1e-6)


def test_kernels_share_one_region_of_temporary_scratch_and_clear_what_they_read():
    """A matrix product's packed panels and a padded convolution's copy of its input are
    temporaries in one shared region: the convolution, run after the product in the same
    executable, finds the product's panels where its zero border goes, and must write that
    border itself. Its result is checked against NumPy's sum over the nine taps."""

    def step(a, b, x, w):
        return braze.matmul(a, b), braze.conv2d(x, w, padding="SAME")

    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((96, 256)).astype(np.float32), rng.standard_normal((256, 96)).astype(np.float32)
    x = rng.standard_normal((2, 12, 12, 16)).astype(np.float32)
    w = rng.standard_normal((3, 3, 16, 16)).astype(np.float32)
    compiled = braze.jit(step)
    product, convolved = compiled(*(braze.tensor(v) for v in (a, b, x, w)))
    (entry,) = compiled._compiled.values()
    slots = entry.executable.plan.scratch
    assert sum(slot.temporary for slot in slots) >= 2
    allocated = sum(buffer.nbytes for buffer in entry.executable._scratch)
    assert allocated < sum(slot.nbytes * (2 if slot.per_thread else 1) for slot in slots)
    padded = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    want = sum(
        np.einsum("nhwc,co->nhwo", padded[:, i : i + 12, j : j + 12], w[i, j].astype(np.float64))
        for i in range(3)
        for j in range(3)
    )
    # sums of 144 terms of size ~1: float32 rounding leaves them within 1e-4 of float64's
    np.testing.assert_allclose(convolved.numpy(), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(product.numpy(), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("reads_update", [True, False], ids=["reads-update", "sibling"])
@pytest.mark.parametrize("size", [8, 300])  # one thread, and rows split between threads
def test_a_parameter_read_transposed_is_not_replaced_by_the_kernel_reading_it(size, reads_update):
    """An update of a donated parameter computed in the kernel that also reads the old
    value at other elements (a transpose of its double, added to the update or a result
    beside it): the update goes to a buffer of its own, or the later rows would read rows
    already replaced."""

    def step(p):
        with braze.no_grad():
            mixed = (p * 2.0).T
            p += 1.0
            return mixed + p if reads_update else mixed

    start = np.random.default_rng(5).standard_normal((size, size)).astype(np.float32)
    p = braze.tensor(start.copy())
    compiled = braze.jit(step, donate_argnums=(0,))
    mixed = compiled(p)
    np.testing.assert_array_equal(p.numpy(), start + np.float32(1.0))
    expected = (start * np.float32(2.0)).T
    np.testing.assert_array_equal(mixed.numpy(), expected + (start + np.float32(1.0)) if reads_update else expected)
