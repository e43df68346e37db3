"""The CPU backend: fused kernels emitted as C, compiled by the system's C compiler into a
shared library (cached on disk), and run as one native call per graph."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from braze.backends.cpu import autotune
from braze.backends.cpu.compiler import CompileError, compile_library, find_compiler
from braze.runtime.diskcache import CacheWarning, DiskCache, digest

__all__ = [
    "CompileError",
    "CpuExecutable",
    "DiskCache",
    "NoCompilerWarning",
    "available",
    "compile_graph",
    "compile_graphs",
]
from braze.backends.cpu.emit import FEATURES_MARKER, emit_module, prelude, translation_units
from braze.backends.cpu.executable import CpuExecutable, openmp_defaults
from braze.backends.cpu.loader import Library
from braze.backends.cpu.target import CpuTarget, missing_features
from braze.ir.graph import Graph
from braze.passes.buffers import assign
from braze.runtime import metrics

CODEGEN_VERSION = "2"
_WARNED: list[bool] = []


class NoCompilerWarning(RuntimeWarning):
    """No C compiler: graphs run on the reference interpreter."""


def available() -> bool:
    """Whether a C compiler exists; warns once when it does not."""
    if find_compiler() is not None:
        return True
    if not _WARNED:
        _WARNED.append(True)
        warnings.warn(
            "braze: no C compiler found (set $CC or install gcc or clang); lazy tensors run on the "
            "reference interpreter, without native kernels",
            NoCompilerWarning,
            stacklevel=3,
        )
    return False


def foreign_target(library: bytes, target: CpuTarget) -> str | None:
    """What ``library`` (its bytes) was built for, when that is not ``target`` on this host
    (features this host lacks, or another compiler's macros), else None; read from the
    bytes, never by loading them. A library without a readable record is foreign."""
    start = library.find(FEATURES_MARKER.encode())
    end = library.find(b"\0", start)
    if start < 0 or end < 0:
        return "an unknown target"
    macros, _, features = library[start + len(FEATURES_MARKER) : end].decode(errors="replace").partition(" ")
    if macros != target.macros_digest:
        return "another compiler or target (the feature macros it enabled differ)"
    lacking = missing_features(frozenset(features.split()))
    return f"a CPU with {', '.join(lacking)}, which this host lacks" if lacking else None


def compile_graph(graph: Graph, cache: DiskCache | None = None, target: str | None = None) -> CpuExecutable:
    """Emit, compile (or load from the disk cache) and load an optimized, fused graph, for
    CPU ``target`` (default: ``BRAZE_CPU_TARGET``, else ``native``)."""
    return compile_graphs([graph], cache, target)[0]


def compile_graphs(
    graphs: list[Graph], cache: DiskCache | None = None, target: str | None = None
) -> list[CpuExecutable]:
    """Several graphs in one shared library (one compiler run), each with its own entry."""
    compiler = find_compiler(target)
    if compiler is None:
        raise CompileError("no C compiler available")
    profile = os.environ.get("BRAZE_PROFILE") == "1"
    cache = cache or DiskCache()
    tune = autotune.enabled()
    plans = [
        emit_module(
            g,
            g.annotations.get("buffers") or assign(g),
            compiler.target,
            f"braze_run{i}",
            profile,
            autotune.tune(g, compiler, cache.base) if tune else None,
        )
        for i, g in enumerate(graphs)
    ]
    (source,) = translation_units(prelude(compiler.target), plans, 1)
    key = digest(source, compiler.identity, CODEGEN_VERSION)
    dump = os.environ.get("BRAZE_DUMP")
    if dump:
        folder = Path(dump) / "kernels"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{key[:16]}.c").write_text(source)

    def build(folder: Path) -> Path:
        with metrics.timed("NativeCompileTime"):
            try:
                units = translation_units(prelude(compiler.target), plans, compiler.target.cores)
                return compile_library(compiler, units, folder)
            except CompileError as error:
                kept = cache.keep_failed_source(key, error.source or source)
                raise CompileError(str(error).replace(str(error.path), str(kept))) from None

    data, cached = cache.get_or_build(key, build)
    openmp_defaults(compiler.target.cores)
    foreign = foreign_target(data, compiler.target)
    if foreign:
        warnings.warn(
            f"braze: not loading cached kernel {cache.paths(key)[0]}: it was built for {foreign}; rebuilding",
            CacheWarning,
            stacklevel=2,
        )
        cache.discard(key)
        data, cached = cache.get_or_build(key, build)
    metrics.count("DiskCacheHit" if cached else "DiskCacheMiss")
    try:
        library = Library(data, key[:16])
    except OSError as error:
        warnings.warn(f"braze: kernel {cache.paths(key)[0]} cannot be loaded ({error}); rebuilding", stacklevel=2)
        cache.discard(key)
        data, _ = cache.get_or_build(key, build)
        library = Library(data, key[:16])
    return [CpuExecutable(g, p, library) for g, p in zip(graphs, plans, strict=True)]
