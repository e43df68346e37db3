"""The CPU target: forced levels, what they resolve to, cache keys per target, and libraries
built for instructions the host lacks, which are refused rather than loaded."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest
from op_cases import CASES
from test_cpu_cache import TEXT
from test_cpu_cache import check as _check
from test_cpu_ops import traced, traced_gradients

from braze.backends import cpu
from braze.backends.cpu import compiler as cc
from braze.backends.cpu import target
from braze.backends.cpu.emit import emit_module, prelude, translation_units
from braze.backends.cpu.executable import SPIN_BEFORE_SLEEP
from braze.ir.text import parse_graph
from braze.passes.buffers import assign
from braze.runtime.diskcache import CacheWarning

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")

VECTOR_BYTES = {"x86-64-v2": 16, "x86-64-v3": 32, "x86-64-v4": 64}
V2_HOST = frozenset(target._LEVEL_FLAGS["x86-64-v2"])


def _graph():
    return cpu.optimize(parse_graph(TEXT))


@pytest.fixture
def fresh_probes(tmp_path, monkeypatch):
    """An empty cache folder, and no compiler remembered from earlier tests."""
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path))
    cc.find_compiler.cache_clear()
    yield tmp_path
    cc.find_compiler.cache_clear()


@pytest.mark.parametrize("level", target.host_levels())
def test_a_forced_level_resolves_to_its_vector_width(level, monkeypatch, fresh_probes):
    monkeypatch.setenv("BRAZE_CPU_TARGET", level)
    found = cc.find_compiler()
    assert found.target.level == level and f"-march={level}" in found.flags
    assert found.target.vector_bytes == VECTOR_BYTES[level]
    assert found.target.vector_registers == (32 if level == "x86-64-v4" else 16)
    _check(cpu.compile_graph(_graph(), cpu.DiskCache(fresh_probes)))


def test_native_resolves_to_the_best_level_the_host_runs(fresh_probes):
    levels = target.host_levels()
    resolved = cc.find_compiler("native").target
    assert resolved.level == (levels[-1] if levels else resolved.level)
    assert 1 <= resolved.cores <= len(os.sched_getaffinity(0))
    assert resolved.l1d_bytes < resolved.l2_bytes <= resolved.l3_bytes


def test_an_unknown_target_is_an_error_naming_the_choices(monkeypatch):
    monkeypatch.setenv("BRAZE_CPU_TARGET", "pentium4")
    with pytest.raises(target.TargetError, match=r"'pentium4' is not a CPU target; use one of x86-64-v2, .*native"):
        cc.find_compiler()


def test_a_level_the_host_cannot_run_is_refused(monkeypatch, fresh_probes):
    monkeypatch.setattr(target, "host_features", lambda: V2_HOST)
    with pytest.raises(target.TargetError, match=r"cannot run code for x86-64-v3 .*lacks .*avx2.*x86-64-v2, native"):
        cc.find_compiler("x86-64-v3")


def test_two_targets_give_two_cache_keys(fresh_probes):
    cache = cpu.DiskCache(fresh_probes)
    levels = target.host_levels()[-2:]
    if len(levels) < 2:
        pytest.skip("the host runs fewer than two x86-64 levels")
    for level in levels:
        _check(cpu.compile_graph(_graph(), cache, level))
    libraries = sorted((fresh_probes / "kernels").glob("*.so"))
    assert len(libraries) == 2
    targets = [cc.find_compiler(level).target for level in levels]
    for library in libraries:  # each is its own target's and refused for the other's
        verdicts = sorted(str(cpu.foreign_target(library.read_bytes(), t)) for t in targets)
        assert verdicts == ["None", "another compiler or target (the feature macros it enabled differ)"]


def test_a_library_for_features_the_host_lacks_is_not_loaded(monkeypatch, fresh_probes):
    """A shared cache folder (home directories on NFS) may hold a library, under the key this
    host looks up, that was built for a CPU with more instructions: it is refused and
    rebuilt, never loaded."""
    if "x86-64-v3" not in target.host_levels():
        pytest.skip("the host cannot build x86-64-v3 code to plant")
    cache = cpu.DiskCache(fresh_probes)
    _check(cpu.compile_graph(_graph(), cache, "x86-64-v3"))
    (wide,) = (fresh_probes / "kernels").glob("*.so")
    wide_bytes = wide.read_bytes()
    wide.unlink()
    _check(cpu.compile_graph(_graph(), cache, "x86-64-v2"))
    (narrow,) = (fresh_probes / "kernels").glob("*.so")
    v2 = cc.find_compiler("x86-64-v2").target
    assert "another compiler or target" in cpu.foreign_target(wide_bytes, v2)
    # The same library, recorded as built by this compiler for x86-64-v2 (a library that a
    # host with other features built under the same key), is refused for its features.
    wide_v3 = cc.find_compiler("x86-64-v3").target
    relabelled = wide_bytes.replace(wide_v3.macros_digest.encode(), v2.macros_digest.encode())
    os.replace(_written(narrow.with_suffix(".planted"), relabelled), narrow)
    narrow.with_suffix(".sha256").write_text(hashlib.sha256(relabelled).hexdigest())
    monkeypatch.setattr(target, "host_features", lambda: V2_HOST)
    assert "avx2" in cpu.foreign_target(relabelled, v2)
    with pytest.warns(CacheWarning, match=r"built for a CPU with .*avx2.*which this host lacks; rebuilding"):
        executable = cpu.compile_graph(_graph(), cache, "x86-64-v2")
    _check(executable)
    assert cpu.foreign_target(narrow.read_bytes(), v2) is None  # rebuilt in its place


def _written(path, data):
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("level", target.LEVELS)
def test_every_kernel_compiles_for_every_x86_64_level(level, tmp_path):
    """Levels the host cannot run are compiled (not run): the op table's forward and
    gradient graphs, one library of three translation units per level."""
    if target.host_features() is not None and "lm" not in target.host_features():
        pytest.skip("not an x86-64 host")
    found = cc.find_compiler()
    probed = cc._probe(found.path, level)
    if probed is None:
        pytest.skip(f"{found.path} cannot build for {level}")
    resolved = target.resolve(level, probed.macros)
    assert resolved.vector_bytes == VECTOR_BYTES[level]
    graphs = [traced(c, "float32").graph for c in CASES]
    graphs += [traced_gradients(c, "float32").graph for c in CASES if c.grad]
    optimized = [cpu.optimize(g) for g in graphs]
    plans = [emit_module(g, assign(g, resolved.alignment), resolved, f"braze_run{i}") for i, g in enumerate(optimized)]
    units = translation_units(prelude(resolved), plans, 3)
    library = cc.compile_library(
        cc.Compiler(found.path, probed.version, probed.flags(level), resolved), units, tmp_path
    )
    symbols = subprocess.run(["nm", "-D", str(library)], capture_output=True, text=True, check=False).stdout
    assert symbols.count(" T braze_run") == len(plans) or not symbols


_THREADS = (
    "import ctypes, os, numpy as np, braze\n"
    "x = braze.tensor(np.ones(4, np.float32), device=braze.LAZY_CPU)\n"
    "assert (x * 2.0).tolist() == [2.0] * 4\n"
    "print(ctypes.CDLL('libgomp.so.1').omp_get_max_threads(), os.environ['OMP_WAIT_POLICY'],\n"
    "      os.environ.get('GOMP_SPINCOUNT', 'unset'))\n"
)


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        ({}, f"{target.available_cores()} passive {SPIN_BEFORE_SLEEP}"),
        ({"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "active"}, "1 active unset"),
        ({"OMP_WAIT_POLICY": "passive"}, f"{target.available_cores()} passive unset"),
        ({"GOMP_SPINCOUNT": "0"}, f"{target.available_cores()} passive 0"),
    ],
    ids=["defaults", "user-settings-kept", "user-asks-for-sleeping-waits", "user-spin-count-kept"],
)
def test_kernels_run_on_the_usable_cores_with_short_spins_unless_told_otherwise(environment, expected, tmp_path):
    if "-fopenmp" not in cc.find_compiler().flags:
        pytest.skip("the compiler has no OpenMP")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    env = {**clean, "BRAZE_CACHE": str(tmp_path), **environment}
    result = subprocess.run([sys.executable, "-c", _THREADS], env=env, capture_output=True, text=True, check=True)
    assert result.stdout.split("\n")[-2] == expected


@pytest.mark.parametrize("right", [True, False], ids=["compiler-permutes-right", "compiler-gets-it-wrong"])
def test_a_probe_program_decides_the_width_of_double_vectors(right, monkeypatch, fresh_probes):
    """Where the compiler gets 512-bit double permutations wrong (GCC 12 emits vpermilpd,
    an in-lane permute, for permutations that cross 128-bit lanes), doubles use 256-bit
    vectors in auto-vectorized loops and in braze's explicit vector code alike."""
    probed = []
    monkeypatch.setattr(cc, "_permutes_doubles_right", lambda path, flags: probed.append(flags) or right)
    found = cc.find_compiler()
    avx512 = "avx512f" in found.target.features
    assert bool(probed) == avx512  # probed only where there are 512-bit vectors
    narrow = avx512 and not right
    assert ("-mprefer-vector-width=256" in found.flags) == narrow
    assert found.target.lanes(8) == (4 if narrow else found.target.vector_bytes // 8)
    assert found.target.lanes(4) == found.target.vector_bytes // 4  # floats keep the full width
    assert f"braze_vf64 __attribute__((vector_size({8 * found.target.lanes(8)})))" in prelude(found.target)
    _check(cpu.compile_graph(_graph(), cpu.DiskCache(fresh_probes)))


PRINT_SHUFFLES = r"""
#include <stdio.h>
typedef double v8df __attribute__((vector_size(64)));
typedef long long v8di __attribute__((vector_size(64)));
__attribute__((noinline)) v8df one(v8df v) { return __builtin_shuffle(v, (v8di){1, 1, 4, 4, 5, 5, 6, 6}); }
__attribute__((noinline)) v8df two(v8df v) { return __builtin_shuffle(v, (v8di){0, 1, 3, 4, 4, 5, 6, 6}); }
int main(int argc, char** argv) {
  v8df v;
  for (int i = 0; i < 8; i++) v[i] = i + argc - 1; /* 0..7, unknown to the compiler */
  const v8df a = one(v), b = two(v);
  for (int i = 0; i < 8; i++) printf("%g ", a[i]);
  for (int i = 0; i < 8; i++) printf("%g ", b[i]);
  return 0;
}
"""


def test_the_permutation_probe_says_what_the_compilers_shuffles_do(tmp_path):
    """The probe's verdict against the shuffles' own output, printed and compared here."""
    found = cc.find_compiler()
    if "avx512f" not in found.target.features:
        pytest.skip("the host has no 512-bit vectors to probe")
    flags = [f for f in found.flags if f not in ("-shared", "-fPIC")]
    (tmp_path / "shuffle.c").write_text(PRINT_SHUFFLES)
    subprocess.run([found.path, *flags, "-o", str(tmp_path / "shuffle"), str(tmp_path / "shuffle.c")], check=True)
    printed = subprocess.run([str(tmp_path / "shuffle")], capture_output=True, text=True, check=True).stdout.split()
    right = [float(x) for x in printed] == [1, 1, 4, 4, 5, 5, 6, 6, 0, 1, 3, 4, 4, 5, 6, 6]
    assert cc._permutes_doubles_right(found.path, found.flags) == right
