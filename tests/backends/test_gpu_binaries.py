"""GPU binaries in the kernel cache follow the CPU libraries' rules: the bytes handed to the
driver are those that were checked, and an entry that is a link, or not the user's own
private file, is rebuilt rather than read. (No GPU needed: the compiler is a stand-in.)"""

from __future__ import annotations

import os

import pytest

from braze.backends.gpu.binaries import cached_binary
from braze.runtime import cachedir
from braze.runtime.diskcache import CacheWarning, DiskCache, digest

SOURCE = "__kernel void one(__global float* a) { a[0] = 1.0f; }"
BUILT_FOR = ("opencl", "a device", "-cl-std=CL1.2")


@pytest.fixture
def compiled():
    calls: list[str] = []

    def compile_source(source: str) -> bytes:
        calls.append(source)
        return f"binary {len(calls)} of {source}".encode()

    compile_source.calls = calls
    return compile_source


@pytest.fixture(autouse=True)
def fresh_process_state(monkeypatch):
    monkeypatch.setattr(cachedir, "_ROOTS", {})
    monkeypatch.setattr(cachedir, "_WARNED", set())


def test_a_binary_is_built_once_then_read_from_the_cache(tmp_path, compiled):
    cache = DiskCache(tmp_path)
    first = cached_binary(cache, SOURCE, BUILT_FOR, compiled, ".cl")
    assert cached_binary(cache, SOURCE, BUILT_FOR, compiled, ".cl") == first == f"binary 1 of {SOURCE}".encode()
    assert len(compiled.calls) == 1


@pytest.mark.parametrize("planted", ["symlink", "writable"])
def test_an_entry_others_could_have_written_is_rebuilt_not_loaded(tmp_path, compiled, planted):
    cache = DiskCache(tmp_path)
    cached_binary(cache, SOURCE, BUILT_FOR, compiled, ".cl")
    entry, _ = cache.paths(digest(SOURCE, *BUILT_FOR))
    if planted == "symlink":
        (tmp_path / "theirs.bin").write_bytes(b"their binary")
        entry.unlink()
        entry.symlink_to(tmp_path / "theirs.bin")
    else:
        os.chmod(entry, 0o766)
    with pytest.warns(CacheWarning, match="symbolic link" if planted == "symlink" else "writable by group"):
        assert cached_binary(cache, SOURCE, BUILT_FOR, compiled, ".cl") == f"binary 2 of {SOURCE}".encode()
    assert entry.is_file() and not entry.is_symlink()
