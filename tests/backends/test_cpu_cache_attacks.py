"""What a neighbour or an unlucky file can do to the kernel cache, and what braze does about
it: planted compiler records and libraries never run, a library swapped in after its check
is never the one loaded, broken records cost a warning and a rebuild, and evicted
executables give their libraries back."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import re
import subprocess
import warnings

import numpy as np
import pytest
from second_user import as_other_user, requires_root, shared_folder
from test_cpu_cache import build, check, only_library

import braze
from braze import lazy
from braze.backends import cpu
from braze.backends.cpu import compiler as cc
from braze.runtime import cachedir
from braze.runtime.cache import ExecutableCache
from braze.runtime.diskcache import CacheWarning, DiskCache

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")

PLANTED = """#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
  FILE* f = fopen("%s", "w");
  if (f) fclose(f);
}
"""


@pytest.fixture(autouse=True)
def fresh_process_state(monkeypatch):
    """As a new process: no cache folder checked, no warning given, no compiler probed."""
    monkeypatch.setattr(cachedir, "_ROOTS", {})
    monkeypatch.setattr(cachedir, "_WARNED", set())
    cc.find_compiler.cache_clear()
    yield
    cc.find_compiler.cache_clear()


def planted_code(folder, marker):
    """(a header and a shared library) whose code, if it ever runs, creates ``marker``."""
    header = folder / "planted.h"
    header.write_text(PLANTED % marker)
    library = folder / "planted.so"
    source = folder / "planted.c"
    source.write_text(f'#include "{header}"\nint braze_planted;\n')
    subprocess.run([cc.find_compiler().path, "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return header, library


def poisoned_record(record: dict, header) -> dict:
    """Every probe of ``record`` given the flags that made a victim build the planted code."""
    evil = ["-include", str(header)]
    return {
        identity: {**probe, "flags": [*cc.BASE_FLAGS, *evil]} if i % 2 else [probe["version"], evil, probe["macros"]]
        for i, (identity, probe) in enumerate(record.items())
    }


@pytest.mark.parametrize("where", ["own-folder", "shared-folder"])
def test_flags_are_never_read_back_from_a_compiler_record(where, tmp_path, neighbourhood, monkeypatch):
    if where == "shared-folder" and os.geteuid() != 0:
        pytest.skip("acting as a second user needs root (chown, setuid): run the tests as root to include this")
    marker = neighbourhood / "ran"
    header, _ = planted_code(neighbourhood, marker)
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path))
    cc.find_compiler.cache_clear()
    cc.find_compiler()  # the victim's own record, from which the neighbour learns the format
    record = json.loads((tmp_path / "compilers.json").read_text())
    poisoned = json.dumps(poisoned_record(record, header))
    if where == "own-folder":
        (tmp_path / "compilers.json").write_text(poisoned)
        root = tmp_path
    else:
        root = shared_folder(neighbourhood / "shared")
        (neighbourhood / "record").write_text(poisoned)
        as_other_user(f"cp {neighbourhood / 'record'} {root}/compilers.json")
        monkeypatch.setenv("BRAZE_CACHE", str(root))
    cc.find_compiler.cache_clear()
    monkeypatch.setattr(cachedir, "_ROOTS", {})
    with pytest.warns(CacheWarning) as caught:
        check(build(root))
    messages = " ".join(str(w.message) for w in caught)
    expected = "not using the cache folder" if where == "shared-folder" else "not one braze wrote"
    assert expected in messages, messages
    assert str(header) not in " ".join(cc.find_compiler().flags)
    assert not marker.exists()


def swapping_in(planted, monkeypatch):
    """Replace a cached library by ``planted`` as soon as braze has checked (or built and
    stored) it: the moment a rename loop of an attacker aims at."""
    real = DiskCache.get_or_build

    def checked_then_swapped(cache, key, build):
        found = real(cache, key, build)
        library = cache.paths(key)[0]
        copy = library.with_suffix(".swap")
        copy.write_bytes(planted.read_bytes())
        os.replace(copy, library)
        return found

    monkeypatch.setattr(DiskCache, "get_or_build", checked_then_swapped)


@pytest.mark.parametrize("path", ["cache-hit", "rebuild"])
def test_a_library_swapped_in_after_its_check_is_never_loaded(path, neighbourhood, monkeypatch):
    marker = neighbourhood / "ran"
    _, planted = planted_code(neighbourhood, marker)
    root = neighbourhood / "cache"
    check(build(root))
    if path == "rebuild":  # a corrupt entry: the rebuilt library must be the one loaded
        library = only_library(root)
        library.with_suffix(".sha256").write_text("0" * 64)
    swapping_in(planted, monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheWarning)  # the corrupt entry's
        check(build(root))
    assert not marker.exists()
    assert only_library(root).read_bytes() == planted.read_bytes()  # the swap happened


def test_a_library_record_without_its_end_is_a_foreign_library(tmp_path):
    build(tmp_path)
    library = only_library(tmp_path)
    data = library.read_bytes()
    start = data.index(cpu.FEATURES_MARKER.encode())
    cut = data[: start + len(cpu.FEATURES_MARKER) + 4]  # the record, and no NUL after it
    library.write_bytes(cut)
    library.with_suffix(".sha256").write_text(hashlib.sha256(cut).hexdigest())
    with pytest.warns(CacheWarning, match="built for an unknown target; rebuilding"):
        check(build(tmp_path))
    assert only_library(tmp_path).read_bytes() != cut


def _mapped_libraries() -> int:
    with open("/proc/self/maps") as maps:
        return len(set(re.findall(r"memfd:braze-[0-9a-f]+", maps.read())))


def test_evicted_executables_unload_their_libraries(tmp_path, monkeypatch):
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path))
    monkeypatch.setattr(lazy.EXECUTOR, "cache", ExecutableCache(max_size=4))
    monkeypatch.setattr(lazy.EXECUTOR, "traces", lazy.TraceCache())
    gc.collect()
    before = _mapped_libraries()
    x = braze.tensor(np.linspace(-1, 1, 8, dtype=np.float32), device=braze.LAZY_CPU)
    for depth in range(1, 21):  # 20 graphs, each of its own structure
        y = x
        for _ in range(depth):
            y = braze.tanh(y)
        expected = np.linspace(-1, 1, 8, dtype=np.float32)
        for _ in range(depth):
            expected = np.tanh(expected)
        np.testing.assert_allclose(y.numpy(), expected, rtol=1e-5)
    gc.collect()
    assert len(lazy.EXECUTOR.cache) == 4
    assert _mapped_libraries() - before <= 4
    lazy.EXECUTOR.cache.clear()
    gc.collect()
    assert _mapped_libraries() == before
    if "-fopenmp" in cc.find_compiler().flags:
        # The OpenMP runtime the libraries brought in stays: its threads sleep in its code.
        with open("/proc/self/maps") as maps:
            assert re.search(r"lib(g?omp|iomp5)[.-]", maps.read())


def test_a_library_stays_loaded_while_an_executable_holds_it(tmp_path):
    executable = build(tmp_path)
    gc.collect()
    loaded = _mapped_libraries()
    check(executable)
    del executable
    gc.collect()
    assert _mapped_libraries() == loaded - 1


@requires_root
def test_an_entry_planted_by_another_user_in_a_shared_folder_never_runs(neighbourhood, monkeypatch):
    marker = neighbourhood / "ran"
    _, planted = planted_code(neighbourhood, marker)
    root = shared_folder(neighbourhood / "shared")
    build(neighbourhood / "mine")  # the victim's own library tells the neighbour its key
    victim = only_library(neighbourhood / "mine")
    as_other_user(
        f"mkdir -m 777 {root}/kernels && cp {planted} {root}/kernels/{victim.name} && "
        f"sha256sum {planted} | cut -c1-64 > {root}/kernels/{victim.stem}.sha256"
    )
    monkeypatch.setattr(cachedir, "_ROOTS", {})
    with pytest.warns(CacheWarning, match="not using the cache folder"):
        check(build(root))
    assert not marker.exists()


@pytest.mark.parametrize("text", ["[]", "null", '"x"', '{"an identity": "not a probe"}', "{"])
def test_a_broken_compiler_record_costs_one_warning_and_a_probe(text, tmp_path, monkeypatch):
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path))
    (tmp_path / "compilers.json").write_text(text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):  # three compiles: one warning
            check(build(tmp_path))
    messages = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    assert len(messages) == (0 if text.startswith('{"an') else 1), messages
    assert json.loads((tmp_path / "compilers.json").read_text())  # written again, whole
