"""The compiler driver and the persistent kernel cache: corrupt entries, concurrent
builds, files of other users, compile errors, and running without a C compiler."""

from __future__ import annotations

import multiprocessing
import os
import stat
import warnings

import numpy as np
import pytest

import braze
from braze.backends import cpu
from braze.backends.cpu import compiler as cc
from braze.ir.text import parse_graph
from braze.passes import pipeline
from braze.runtime import metrics
from braze.runtime.diskcache import CacheWarning

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")

TEXT = """graph(%0: f32[64]) {
  %1 = tanh(%0) : f32[64]
  %2 = mul(%1, %0) : f32[64]
  return (%2)
}"""


def build(cache_root):
    graph, _ = pipeline.run(parse_graph(TEXT))
    return cpu.compile_graph(graph, cpu.DiskCache(cache_root))


def check(executable):
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    np.testing.assert_allclose(executable([x])[0], np.tanh(x) * x, rtol=1e-6)


def only_library(root):
    (library,) = (root / "kernels").glob("*.so")
    return library


def test_entries_are_reused_and_the_folder_is_private(tmp_path):
    metrics.reset()
    check(build(tmp_path))
    check(build(tmp_path))
    assert metrics.counter("DiskCacheMiss") == 1 and metrics.counter("DiskCacheHit") == 1
    assert stat.S_IMODE((tmp_path / "kernels").stat().st_mode) == 0o700


def test_a_corrupt_entry_is_reported_and_rebuilt(tmp_path):
    build(tmp_path)
    library = only_library(tmp_path)
    # A truncated file in place of the entry (a new file: this process has the old one mapped).
    truncated = tmp_path / "truncated.so"
    truncated.write_bytes(library.read_bytes()[:100])
    os.replace(truncated, library)
    with pytest.warns(CacheWarning, match="corrupt"):
        executable = build(tmp_path)
    check(executable)


@pytest.mark.skipif(os.getuid() != 0, reason="changing a file's owner needs root")
def test_a_file_owned_by_another_user_is_never_loaded(tmp_path):
    build(tmp_path)
    library = only_library(tmp_path)
    os.chown(library, 65534, 65534)
    with pytest.warns(CacheWarning, match="owned by another user"):
        check(build(tmp_path))
    assert library.stat().st_uid == os.getuid()  # replaced by a file of our own


def test_a_file_writable_by_others_is_never_loaded(tmp_path):
    build(tmp_path)
    library = only_library(tmp_path)
    os.chmod(library, 0o777)
    with pytest.warns(CacheWarning, match="writable by group and others"):
        check(build(tmp_path))


def _build_in_process(root, queue):
    try:
        executable = build(root)
        x = np.linspace(-2, 2, 64, dtype=np.float32)
        queue.put(bool(np.allclose(executable([x])[0], np.tanh(x) * x, rtol=1e-6)))
    except Exception as error:  # noqa: BLE001 - reported to the parent
        queue.put(repr(error))


def test_several_processes_compiling_the_same_graph_all_succeed(tmp_path):
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    workers = [context.Process(target=_build_in_process, args=(tmp_path, queue)) for _ in range(3)]
    for w in workers:
        w.start()
    results = [queue.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(timeout=60)
    assert results == [True, True, True]
    assert len(list((tmp_path / "kernels").glob("*.so"))) == 1


def test_a_compile_error_names_the_source_and_the_message(tmp_path, monkeypatch):
    monkeypatch.setattr("braze.backends.cpu.emit_module", _broken_emitter())
    graph, _ = pipeline.run(parse_graph(TEXT))
    with pytest.raises(cc.CompileError, match=r"failed to compile .*failed/[0-9a-f]{16}\.c:\n.*error"):
        cpu.compile_graph(graph, cpu.DiskCache(tmp_path))
    (kept,) = (tmp_path / "kernels" / "failed").glob("*.c")
    assert "this is not C" in kept.read_text()


def _broken_emitter():
    from braze.backends.cpu.emit import emit_module

    def emit(*args, **kwargs):
        plan = emit_module(*args, **kwargs)
        plan.entry_source += "\nthis is not C;\n"
        return plan

    return emit


def test_without_a_compiler_braze_warns_once_and_uses_the_interpreter(monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setattr(cpu, "_WARNED", [])
    cc.find_compiler.cache_clear()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            x = braze.tensor(np.ones(3, np.float32), device=braze.LAZY_CPU)
            assert (x * 3.0 + 1.0).tolist() == [4.0, 4.0, 4.0]
            assert (x * 5.0).tolist() == [5.0, 5.0, 5.0]
        messages = [str(w.message) for w in caught if issubclass(w.category, cpu.NoCompilerWarning)]
        assert len(messages) == 1 and "no C compiler found" in messages[0]
    finally:
        monkeypatch.delenv("CC")
        cc.find_compiler.cache_clear()


def test_lazy_devices_compile_natively_unless_the_reference_backend_is_asked_for(monkeypatch, tmp_path):
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path))
    metrics.reset()
    x = braze.tensor(np.arange(4, dtype=np.float32), device=braze.LAZY_CPU)
    assert (x * 2.0 + 0.5).tolist() == [0.5, 2.5, 4.5, 6.5]
    assert metrics.counter("DiskCacheMiss") == 1
    monkeypatch.setenv("BRAZE_BACKEND", "reference")
    assert (x * 3.0 + 0.5).tolist() == [0.5, 3.5, 6.5, 9.5]
    assert metrics.counter("DiskCacheMiss") == 1


def test_the_compiler_probe_is_remembered_across_processes(tmp_path, monkeypatch):
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path))
    cc.find_compiler.cache_clear()
    try:
        first = cc.find_compiler()
        assert (tmp_path / "compilers.json").exists()
        cc.find_compiler.cache_clear()
        monkeypatch.setattr(cc, "_probe", lambda path, target: pytest.fail("probed again"))
        assert cc.find_compiler() == first
    finally:
        cc.find_compiler.cache_clear()
