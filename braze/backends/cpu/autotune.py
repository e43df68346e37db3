"""Autotuning: where the target description cannot predict the fastest tiling of a kernel,
time the options on this host and keep the fastest (XLA's GPU autotuner and oneDNN's
per-ISA dispatch are the models).

A contraction emitter offers its choices through ``Emitter.choice`` (for example the
register tiles of ``register_tiles``) when the kernel is big enough for them to matter. On
a cold compile every such kernel of the graph is emitted once per combination of options,
all of them into one library (compiled in parallel over the cores), and each variant is run
on random inputs of the kernel's shapes; the fastest one's choices are used, and remembered
in ``autotune.json`` beside the kernel cache under a digest of the kernel's source and the
compiler's identity (which holds the resolved CPU target), so a warm start, or another
process on the same host, times nothing, and a cache shared with another CPU never hands
over its picks. ``BRAZE_AUTOTUNE=0`` turns it off (every kernel takes the prediction).

The options only change how a kernel's outputs are split into tiles, never the order of a
sum, so every pick gives the same bits: processes that picked differently (the ranks of a
data-parallel job, each timing on its own) still agree exactly.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from braze.backends.cpu.compiler import CompileError, Compiler, compile_library
from braze.backends.cpu.emit import ConstantPool, KernelSource, ModulePlan, emit_kernel, prelude, translation_units
from braze.backends.cpu.executable import aligned_zeros, openmp_defaults
from braze.backends.cpu.loader import Library
from braze.backends.cstyle import c_type
from braze.ir.graph import Graph, Node, schedule
from braze.ir.primitive import Category
from braze.runtime import metrics
from braze.runtime.cachedir import read_record, write_record
from braze.runtime.diskcache import digest

Tuning = dict[str, int]

_VERSION = "1"
_MAX_VARIANTS = 2  # per kernel, the prediction first: compiling the variants is most of the cost
_SECONDS_PER_VARIANT = 0.02  # timing repeats a variant until about this long (20 runs at most)
_MAX_KERNELS = 4  # per compile, the biggest: the variants' compile grows with each one
_BUDGET_SECONDS = 1.0  # timing stops here
# Kernels beyond either bound keep the prediction, remembered like a timed pick, so a warm
# start finds a pick for every kernel and builds the same library.


def enabled() -> bool:
    return os.environ.get("BRAZE_AUTOTUNE", "1") != "0"


def store_path(cache_root: Path) -> Path:
    return cache_root / "autotune.json"


def _load(path: Path) -> dict[str, Tuning]:
    return read_record(path) or {}  # none yet, or unreadable: a cache, so timing again is the remedy


def menus(graph: Graph, compiler: Compiler) -> list[tuple[int, Node, str, dict[str, int], int]]:
    """The kernels of ``graph`` that offer choices: (schedule position, kernel, the key of
    its remembered pick, its menu, the work its choices concern)."""
    found = []
    for t, kernel in enumerate(schedule(graph)):
        if kernel.attr("kind") == "collective":
            continue
        if not any(n.op.category is Category.CONTRACTION for n in kernel.attr("computation").nodes()):
            continue  # only contraction emitters offer choices: no need to emit the others twice
        pool = ConstantPool("braze_tune")
        source = emit_kernel("braze_tune", kernel, pool, False, compiler.target)
        if source.menu:
            key = digest(*pool.lines, source.definition, compiler.identity, _VERSION)
            found.append((t, kernel, key, source.menu, source.menu_work))
    return found


def tune(graph: Graph, compiler: Compiler, cache_root: Path) -> dict[int, Tuning]:
    """The choices for the kernels of ``graph`` that offer some, by schedule position:
    remembered ones, else timed now (and remembered)."""
    path = store_path(cache_root)
    store = _load(path)
    found = menus(graph, compiler)
    pending: dict[str, tuple[Node, dict[str, int], int]] = {}  # a kernel met twice is timed once
    for _, kernel, key, menu, work in found:
        if isinstance(store.get(key), dict):
            metrics.count("AutotuneHit")
        else:
            pending.setdefault(key, (kernel, menu, work))
    if pending:
        ranked = sorted(pending.items(), key=lambda item: -item[1][2])
        timed, untimed = ranked[:_MAX_KERNELS], ranked[_MAX_KERNELS:]
        try:
            with metrics.timed("AutotuneTime"):
                picks = _time_variants([k for _, (k, _, _) in timed], [m for _, (_, m, _) in timed], compiler)
        except (CompileError, OSError) as error:
            warnings.warn(f"braze: autotuning failed ({error}); using the predicted tilings", stacklevel=3)
            return {t: store[key] for t, _, key, _, _ in found if isinstance(store.get(key), dict)}
        picks += [options(menu)[0] for _, (_, menu, _) in untimed]
        metrics.count("AutotuneMiss", len(timed))
        metrics.count("AutotuneUntimed", len(untimed))
        for (key, _), pick in zip(ranked, picks, strict=True):
            store[key] = pick
        write_record(path, store)
    return {t: store[key] for t, _, key, _, _ in found}


def options(menu: dict[str, int]) -> list[Tuning]:
    """The combinations of a kernel's choices to time, the prediction (all zeros) first."""
    names = sorted(menu)
    combos = itertools.product(*(range(menu[name]) for name in names))
    return [dict(zip(names, combo, strict=True)) for combo in itertools.islice(combos, _MAX_VARIANTS)]


def _timer(name: str, kernel: Node, source: KernelSource) -> str:
    """An exported function running kernel variant ``name`` ``reps`` times over the buffers
    in ``args`` (inputs, outputs, scratch) and returning the fastest run's seconds."""
    computation: Graph = kernel.attr("computation")
    casts = [f"const {c_type(p.dtype)}*" for p in computation.params]
    casts += [f"{c_type(o.dtype)}*" for o in computation.outputs]
    casts += [f"{ctype}*" for ctype, *_ in source.scratch]
    args = ", ".join(f"({cast})args[{k}]" for k, cast in enumerate(casts))
    return (
        f"double {name}_time(void* const* args, int64_t reps) {{\n"
        f"  double best = 1e30;\n"
        f"  for (int64_t r = 0; r < reps; r++) {{\n"
        f"    const double start = braze_clock();\n"
        f"    {name}({args});\n"
        f"    const double seconds = braze_clock() - start;\n"
        f"    if (seconds < best) best = seconds;\n"
        f"  }}\n"
        f"  return best;\n"
        f"}}\n"
    )


def _buffers(kernel: Node) -> list[np.ndarray]:
    """Random inputs of the kernel's shapes (integers are zeros: always valid as indices),
    then its outputs."""
    computation: Graph = kernel.attr("computation")
    rng = np.random.default_rng(0)
    buffers = []
    for p in computation.params:
        values = rng.uniform(-1, 1, p.shape) if p.dtype.is_float else np.zeros(p.shape)
        buffers.append(np.ascontiguousarray(values, dtype=p.dtype.numpy))
    return buffers + [np.empty(o.shape, o.dtype.numpy) for o in computation.outputs]


def _scratch(source: KernelSource, threads: int) -> list[np.ndarray]:
    return [aligned_zeros(b.nbytes * (threads if b.per_thread else 1)) for b in source.scratch]


def _time_variants(kernels: list[Node], menus: list[dict[str, int]], compiler: Compiler) -> list[Tuning]:
    """For each kernel, its fastest combination of options; the prediction where the budget
    ran out (remembered like a timed pick, so a warm start finds every kernel's and builds
    the same library)."""
    pool = ConstantPool("braze_tune")
    plan = ModulePlan(entry="braze_tune")
    variants: list[list[tuple[Tuning, str, KernelSource]]] = []
    for i, (kernel, menu) in enumerate(zip(kernels, menus, strict=True)):
        variants.append([])
        for j, tuning in enumerate(options(menu)):
            name = f"braze_tune{i}_{j}"
            source = emit_kernel(name, kernel, pool, False, compiler.target, tuning)
            plan.declarations.append(source.declaration)
            plan.kernel_sources.append(source.definition)
            plan.entry_source += _timer(name, kernel, source)
            variants[-1].append((tuning, name, source))
    plan.constants = pool.lines
    units = translation_units(prelude(compiler.target), [plan], compiler.target.cores)
    with tempfile.TemporaryDirectory(prefix="braze-autotune-") as folder:
        openmp_defaults(compiler.target.cores)
        loaded = Library(compile_library(compiler, units, Path(folder)).read_bytes(), "autotune")
    library = loaded.cdll
    threads = int(ctypes.CFUNCTYPE(ctypes.c_int64)(("braze_max_threads", library))())
    deadline = time.perf_counter() + _BUDGET_SECONDS
    picks: list[Tuning] = []
    for kernel, kernel_variants in zip(kernels, variants, strict=True):
        if time.perf_counter() > deadline:
            picks.append(kernel_variants[0][0])
            metrics.count("AutotuneUntimed")
            continue
        buffers = _buffers(kernel)
        timings = []
        for tuning, name, source in kernel_variants:
            scratch = _scratch(source, threads)
            args = (ctypes.c_void_p * (len(buffers) + len(scratch)))(*[b.ctypes.data for b in buffers + scratch])
            run = getattr(library, f"{name}_time")
            run.restype, run.argtypes = ctypes.c_double, [ctypes.c_void_p, ctypes.c_int64]
            once = run(args, 1)  # the first run also faults the buffers in
            reps = max(1, min(20, int(_SECONDS_PER_VARIANT / max(once, 1e-6))))
            timings.append((run(args, reps), tuning))
        picks.append(min(timings, key=lambda pair: pair[0])[1])
    return picks
