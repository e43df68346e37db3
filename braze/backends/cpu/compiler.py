"""The C compiler driver: find ``cc`` ($CC overrides), choose flags for the CPU target, build a
shared library, and report a failure with the generated source's path and the compiler's
own message."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from braze.backends.cpu.target import CpuTarget, check_runnable, host_features, requested, resolve, target_flags
from braze.runtime.cachedir import cache_root, read_record, warn_once, write_record
from braze.runtime.diskcache import digest

# -fno-math-errno: generated code never reads errno, and without it GCC can neither hoist
# a loop-invariant pow() nor turn sqrt into one vector instruction. -fno-trapping-math: it
# never reads the floating-point exception flags either, and without it GCC keeps a branch
# around a select feeding a multiply wherever the target lacks masked vector operations
# (the max-pool gradient did not vectorize for AVX2: 9x slower than for AVX-512). Neither
# changes a result. -fwrapv: integers wrap around, as NumPy's do (the elemental emitter
# already computes integer values as unsigned; this covers the sums of reductions and
# contractions too); the LeNet and CNN steps vectorize the same loops with it.
# -ffp-contract=off: a product is rounded before the sum it feeds, as eager mode's NumPy
# rounds it (GCC under -std=gnu11 fused a * b + c into one instruction: 1 / (a * b + c) was
# -inf where eager gives inf); the matrix products' and convolutions' accumulations and the
# math functions' polynomials ask for their fused multiply-adds explicitly (vmath.py's
# braze_fmaf, emit.py's braze_fmav32; tiles.accumulate). The target adds -march.
BASE_FLAGS = (
    "-O3",
    "-fwrapv",
    "-fno-math-errno",
    "-fno-trapping-math",
    "-ffp-contract=off",
    "-fPIC",
    "-shared",
    "-std=gnu11",
)
# What _probe decides besides BASE_FLAGS (a new value makes every process probe again).
_PROBE_VERSION = "4"


class CompileError(RuntimeError):
    """The C compiler rejected generated code (a braze bug): the message says where the source is."""

    def __init__(self, message: str, path: Path | None = None, source: str = "") -> None:
        super().__init__(message)
        self.path = path  # the translation unit that failed, and its text
        self.source = source


@dataclass(frozen=True)
class Compiler:
    path: str
    version: str
    flags: tuple[str, ...]
    target: CpuTarget

    @property
    def identity(self) -> str:
        return f"{self.path}\n{self.version}\n{' '.join(self.flags)}\n{self.target.key}"


def _version(path: str) -> str | None:
    try:
        result = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = (result.stdout or result.stderr).strip().splitlines()
    return lines[0] if result.returncode == 0 and lines else None


def _accepts(path: str, flags: tuple[str, ...]) -> bool:
    with tempfile.TemporaryDirectory(prefix="braze-probe-") as folder:
        source = Path(folder) / "probe.c"
        source.write_text("int probe(void) { return 0; }\n")
        command = [path, *flags, "-o", str(Path(folder) / "probe.so"), str(source)]
        try:
            return subprocess.run(command, capture_output=True, timeout=60, check=False).returncode == 0
        except (OSError, subprocess.SubprocessError):
            return False


def _macros(path: str, flags: tuple[str, ...]) -> frozenset[str] | None:
    """The macros the compiler predefines under ``flags``: which instruction sets it may use."""
    command = [path, *flags, "-dM", "-E", "-x", "c", os.devnull]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode != 0:
        return None
    names = (line.split()[1] for line in result.stdout.splitlines() if line.startswith("#define "))
    return frozenset(name for name in names if _MACRO_NAME.fullmatch(name))


_MACRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# GCC 12 expands some one-operand permutations of eight doubles (a 512-bit vector) to
# vpermilpd, which permutes within 128-bit lanes only, where the permutation crosses them:
# the fuzzer found it in a convolution input gradient's auto-vectorized loop (a pixel
# wrong), and braze's explicit vector code could meet it as well. This program shows
# whether a compiler does it; where it does, doubles use 256-bit vectors, in the loops
# the compiler vectorizes (-mprefer-vector-width=256) and in braze's explicit vectors.
_PERMUTATION_PROBE = r"""
#ifdef __clang__
#define OPAQUE __attribute__((noinline))
#else
#define OPAQUE __attribute__((noipa))
#endif
typedef double v8df __attribute__((vector_size(64)));
typedef long long v8di __attribute__((vector_size(64)));
OPAQUE v8df one(v8df v) { return __builtin_shuffle(v, (v8di){1, 1, 4, 4, 5, 5, 6, 6}); }
OPAQUE v8df two(v8df v) { return __builtin_shuffle(v, (v8di){0, 1, 3, 4, 4, 5, 6, 6}); }
int main(void) {
  const v8df v = {0, 1, 2, 3, 4, 5, 6, 7}, a = one(v), b = two(v);
  const double want_a[8] = {1, 1, 4, 4, 5, 5, 6, 6}, want_b[8] = {0, 1, 3, 4, 4, 5, 6, 6};
  for (int i = 0; i < 8; i++)
    if (a[i] != want_a[i] || b[i] != want_b[i]) return 1;
  return 0;
}
"""


def _permutes_doubles_right(path: str, flags: tuple[str, ...]) -> bool:
    """Whether the compiler, under ``flags``, gets 512-bit double permutations right (the
    probe above, built and run; a probe that does not build or run counts as wrong)."""
    flags = tuple(f for f in flags if f not in ("-shared", "-fPIC"))
    with tempfile.TemporaryDirectory(prefix="braze-probe-") as folder:
        source, program = Path(folder) / "permute.c", Path(folder) / "permute"
        source.write_text(_PERMUTATION_PROBE)
        try:
            built = subprocess.run([path, *flags, "-o", str(program), str(source)], capture_output=True, timeout=60)
            return built.returncode == 0 and subprocess.run([str(program)], timeout=60).returncode == 0
        except (OSError, subprocess.SubprocessError):
            return False


@dataclass(frozen=True)
class Probe:
    """What the compiler answered for one target; the flags are derived from it, never
    stored (a record read back cannot add a flag)."""

    version: str
    march: bool  # it accepts the target's -march (else: its default target)
    openmp: bool
    macros: frozenset[str]
    wide_doubles: bool  # it permutes 512-bit double vectors right (or the target has none)

    def flags(self, target: str) -> tuple[str, ...]:
        flags = (*BASE_FLAGS, *(target_flags(target) if self.march else ()))
        if "__x86_64__" in self.macros:
            # GCC 12 targeting AVX-512 placed a 16-byte accumulator array of a convolution's
            # (``float acc[2][2]``, cleared by memset) in the red zone at an address 8 bytes
            # off its alignment, then cleared it with an aligned store (vmovdqa): a crash
            # (the fuzzer's program 992599, a bfloat16 convolution of 2 x 2 images). With
            # the red zone off, locals live in a frame the prologue aligns.
            flags = (*flags, "-mno-red-zone")
        if self.openmp:
            flags = (*flags, "-fopenmp")
        if not self.wide_doubles:
            flags = (*flags, "-mprefer-vector-width=256")  # as GCC itself tunes most AVX-512 CPUs
        return flags

    def record(self) -> dict:
        return {
            "version": self.version,
            "march": self.march,
            "openmp": self.openmp,
            "macros": sorted(self.macros),
            "wide_doubles": self.wide_doubles,
        }

    @classmethod
    def from_record(cls, value: object) -> Probe | None:
        """The probe a record holds, or None unless every field has its type (and macros
        are macro names: nothing else can come back)."""
        if not isinstance(value, dict) or set(value) != {"version", "march", "openmp", "macros", "wide_doubles"}:
            return None
        version, macros = value["version"], value["macros"]
        if not (isinstance(version, str) and version.isprintable()):
            return None
        if not all(type(value[flag]) is bool for flag in ("march", "openmp", "wide_doubles")):
            return None
        if not isinstance(macros, list) or not all(isinstance(m, str) and _MACRO_NAME.fullmatch(m) for m in macros):
            return None
        return cls(version, value["march"], value["openmp"], frozenset(macros), value["wide_doubles"])


def _probe(path: str, target: str) -> Probe | None:
    """Ask the compiler its version, whether it takes the target's flags and OpenMP, and
    what ``target`` enables (a few compiler runs)."""
    version = _version(path)
    if version is None:
        return None
    march = _accepts(path, (*BASE_FLAGS, *target_flags(target)))
    if not march and target != "native":
        return None  # a compiler without -march=native builds for its default target
    wanted = target_flags(target) if march else ()
    openmp = _accepts(path, (*BASE_FLAGS, *wanted, "-fopenmp"))
    flags = (*BASE_FLAGS, *wanted, *(("-fopenmp",) if openmp else ()))
    macros = _macros(path, flags)
    if macros is None:
        return None
    wide_doubles = "__AVX512F__" not in macros or _permutes_doubles_right(path, flags)
    return Probe(version, march, openmp, macros, wide_doubles)


def _remembered(path: str, target: str) -> Compiler | None:
    """The probe of ``path`` for ``target`` from an earlier process, kept in the cache
    folder: probing runs the compiler several times, which would dominate a warm start. It
    is redone when the compiler's file or the host's CPU changes (a cache folder may be
    shared by several hosts), or when the record is not one braze wrote."""
    info = os.stat(path)
    host = digest(*sorted(host_features() or ()))[:16]
    identity = f"{path}:{info.st_mtime_ns}:{info.st_size}:{' '.join(BASE_FLAGS)}:{target}:{host}:{_PROBE_VERSION}"
    record = cache_root() / "compilers.json"
    known = read_record(record) or {}
    probed = Probe.from_record(known.get(identity))
    if probed is None and identity in known:
        warn_once(f"braze: ignoring the probe of {path} in {record}: it is not one braze wrote; probing again")
    if probed is None:
        probed = _probe(path, target)
        if probed is None:
            return None
        known[identity] = probed.record()
        write_record(record, known)
    narrow = not probed.wide_doubles
    return Compiler(path, probed.version, probed.flags(target), resolve(target, probed.macros, narrow))


def find_compiler(target: str | None = None) -> Compiler | None:
    """The C compiler braze uses for ``target`` (default: ``BRAZE_CPU_TARGET``), or None when
    there is none. Raises TargetError for a target this host cannot run."""
    return _find_compiler(os.environ.get("CC"), target or requested())


@functools.cache
def _find_compiler(chosen: str | None, target: str) -> Compiler | None:
    for name in [chosen] if chosen else ["gcc", "clang", "cc"]:
        path = shutil.which(name)
        compiler = _remembered(path, target) if path else None
        if compiler is not None:
            check_runnable(compiler.target)
            return compiler
    return None


find_compiler.cache_clear = _find_compiler.cache_clear  # forget the compilers found (tests)


def _run(command: list[str]) -> subprocess.Popen:
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(process: subprocess.Popen, compiler: Compiler, source_path: Path, source: str) -> None:
    try:
        _, stderr = process.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise CompileError(f"{compiler.path} took over 600 s compiling {source_path}") from None
    if process.returncode != 0:
        raise CompileError(f"{compiler.path} failed to compile {source_path}:\n{stderr.strip()}", source_path, source)


def compile_library(compiler: Compiler, sources: list[str], folder: Path, name: str = "module") -> Path:
    """Compile the translation units ``sources`` into ``folder/name.so``: several units in
    parallel (one compiler process each), then linked."""
    folder.mkdir(parents=True, exist_ok=True)
    library = folder / f"{name}.so"
    paths = [folder / f"{name}{k if len(sources) > 1 else ''}.c" for k in range(len(sources))]
    for path, source in zip(paths, sources, strict=True):
        path.write_text(source)
    if len(sources) == 1:
        command = [compiler.path, *compiler.flags, "-o", str(library), str(paths[0]), "-lm"]
        _finish(_run(command), compiler, paths[0], sources[0])
        return library
    objects = [path.with_suffix(".o") for path in paths]
    processes = [
        _run([compiler.path, *compiler.flags, "-c", "-o", str(obj), str(path)])
        for path, obj in zip(paths, objects, strict=True)
    ]
    try:
        for process, path, source in zip(processes, paths, sources, strict=True):
            _finish(process, compiler, path, source)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.communicate()
    link = [compiler.path, *compiler.flags, "-o", str(library), *map(str, objects), "-lm"]
    _finish(_run(link), compiler, library, "")
    return library
