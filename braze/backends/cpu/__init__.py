"""The CPU backend: fused kernels emitted as C, compiled by the system's C compiler into a
shared library (cached on disk), and run as one native call per graph. Eager CPU ops run
with NumPy, as the reference backend's do."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from braze.backends.cpu import autotune
from braze.backends.cpu.compiler import CompileError, compile_library, find_compiler
from braze.runtime.diskcache import CacheWarning, DiskCache, digest

__all__ = [
    "CPU_BACKEND",
    "CompileError",
    "CpuBackend",
    "CpuExecutable",
    "DiskCache",
    "NoCompilerWarning",
    "available",
    "compile_graph",
    "compile_graphs",
    "optimize",
]
from braze.backends.cpu.emit import FEATURES_MARKER, C, emit_module, prelude, translation_units
from braze.backends.cpu.executable import CpuExecutable, openmp_defaults
from braze.backends.cpu.fusion import CPU_FUSION
from braze.backends.cpu.lowering import LOWERINGS
from braze.backends.cpu.target import missing_features
from braze.backends.reference.twins import apply_primitive
from braze.ir.graph import Graph
from braze.passes.buffers import assign
from braze.runtime import metrics
from braze.runtime.backend import Backend, register_backend
from braze.runtime.dumps import dump_source

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


def foreign_features(library: Path) -> list[str]:
    """The instruction-set features that ``library`` was built to use and this host lacks,
    read from the library's bytes (never by loading it: its code could not run here). A
    library without the record counts as foreign."""
    data = library.read_bytes()
    start = data.find(FEATURES_MARKER.encode())
    if start < 0:
        return ["an unknown target"]
    start += len(FEATURES_MARKER)
    recorded = data[start : data.index(b"\0", start)].decode(errors="replace")
    return missing_features(frozenset(recorded.split()))


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
            g.annotations.get("buffers") or assign(g, compiler.target.alignment),
            compiler.target,
            f"braze_run{i}",
            profile,
            autotune.tune(g, compiler, cache.root.parent) if tune else None,
        )
        for i, g in enumerate(graphs)
    ]
    (source,) = translation_units(prelude(compiler.target), plans, 1)
    key = digest(source, compiler.identity, CODEGEN_VERSION)
    dump_source(source, C.source_suffix)

    def build(folder: Path) -> Path:
        with metrics.timed("NativeCompileTime"):
            try:
                units = translation_units(prelude(compiler.target), plans, compiler.target.cores)
                return compile_library(compiler, units, folder)
            except CompileError as error:
                kept = cache.keep_failed_source(key, error.source or source)
                raise CompileError(str(error).replace(str(error.path), str(kept))) from None

    library, cached = cache.get_or_build(key, build)
    openmp_defaults(compiler.target.cores)
    lacking = foreign_features(library)
    if lacking:
        warnings.warn(
            f"braze: not loading cached kernel {library}: it was built for a CPU with {', '.join(lacking)}, "
            "which this host lacks; rebuilding",
            CacheWarning,
            stacklevel=2,
        )
        cache.discard(key)
        library, cached = cache.get_or_build(key, build)
    metrics.count("DiskCacheHit" if cached else "DiskCacheMiss")
    try:
        return [CpuExecutable(g, p, library) for g, p in zip(graphs, plans, strict=True)]
    except OSError as error:
        warnings.warn(f"braze: cached kernel {library} cannot be loaded ({error}); rebuilding", stacklevel=2)
        cache.discard(key)
        library, _ = cache.get_or_build(key, build)
        return [CpuExecutable(g, p, library) for g, p in zip(graphs, plans, strict=True)]


class CpuBackend(Backend):
    name = "cpu"
    kinds = ("CPU",)
    priority = 10  # native code before the reference interpreter
    fusion_policy = CPU_FUSION

    def available(self) -> bool:
        return available()

    @property
    def alignment(self) -> int:
        compiler = find_compiler()
        if compiler is None:
            raise CompileError("no C compiler available")
        return compiler.target.alignment

    def lower(self, optimized: Graph) -> CpuExecutable:
        return compile_graph(optimized)

    apply = staticmethod(apply_primitive)  # eager ops: NumPy


CPU_BACKEND = register_backend(CpuBackend(LOWERINGS))


def optimize(graph: Graph, verify: bool | None = None, fusion: bool | None = None) -> Graph:
    """``graph`` through the pass pipeline as this backend compiles it (its fusion hooks and
    its target's alignment): what ``compile_graph`` takes."""
    return CPU_BACKEND.optimize(graph, verify, fusion)
