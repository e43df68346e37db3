"""The CPU that generated code is for: instruction-set level, vector width, registers,
caches and the cores this process may use, detected once per process.

Every vector type, lane count, register tile and streaming threshold of the emitters is
derived from a ``CpuTarget``; none is tuned to one machine. ``BRAZE_CPU_TARGET`` forces a
target (``x86-64-v2``, ``x86-64-v3``, ``x86-64-v4`` or ``native``, the default), with the
matching ``-march``, so every code path can be built and tested on one host.

What a target enables is read from the compiler itself (the feature macros it defines for
the target's flags), so ``-march=native`` resolves to the features of this CPU. Those
features go into every cache key and into every library, which refuses to run on a host
that lacks one of them.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
from dataclasses import dataclass
from pathlib import Path

from braze.ir.errors import BrazeError
from braze.runtime.cores import available_cores

LEVELS = ("x86-64-v2", "x86-64-v3", "x86-64-v4")
CACHE_LINE = 64  # bytes
_TARGET_NAMES = (*LEVELS, "native")

# Compiler feature macros and the /proc/cpuinfo flag of the instructions each one lets the
# compiler use. A macro missing here is not checked against the host.
_MACRO_FLAGS = {
    "__SSE3__": "pni",
    "__SSSE3__": "ssse3",
    "__SSE4_1__": "sse4_1",
    "__SSE4_2__": "sse4_2",
    "__SSE4A__": "sse4a",
    "__POPCNT__": "popcnt",
    "__AVX__": "avx",
    "__AVX2__": "avx2",
    "__FMA__": "fma",
    "__F16C__": "f16c",
    "__BMI__": "bmi1",
    "__BMI2__": "bmi2",
    "__LZCNT__": "abm",
    "__MOVBE__": "movbe",
    "__AVXVNNI__": "avx_vnni",
    "__AVX512F__": "avx512f",
    "__AVX512BW__": "avx512bw",
    "__AVX512CD__": "avx512cd",
    "__AVX512DQ__": "avx512dq",
    "__AVX512VL__": "avx512vl",
    "__AVX512IFMA__": "avx512ifma",
    "__AVX512VBMI__": "avx512vbmi",
    "__AVX512VBMI2__": "avx512_vbmi2",
    "__AVX512VNNI__": "avx512_vnni",
    "__AVX512BF16__": "avx512_bf16",
    "__AVX512BITALG__": "avx512_bitalg",
    "__AVX512VPOPCNTDQ__": "avx512_vpopcntdq",
    "__AVX512VP2INTERSECT__": "avx512_vp2intersect",
    "__AVX512FP16__": "avx512_fp16",
    "__ARM_FEATURE_SVE": "sve",
    "__ARM_FEATURE_DOTPROD": "asimddp",
}

# The x86-64 micro-architecture levels (psABI), as the cpuinfo flags each one adds.
_LEVEL_FLAGS = {
    "x86-64-v2": {"cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3"},
    "x86-64-v3": {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"},
    "x86-64-v4": {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"},
}


class TargetError(BrazeError, RuntimeError):
    """A CPU target that cannot be used here: unknown, or needing instructions this host lacks."""


@dataclass(frozen=True)
class CpuTarget:
    """``name``: what was asked for; ``level``: what the compiler flags resolve to;
    ``features``: the cpuinfo flags of the instructions generated code may use."""

    name: str
    level: str
    flags: tuple[str, ...]
    features: frozenset[str]
    vector_bytes: int
    vector_registers: int
    l1d_bytes: int
    l2_bytes: int
    l3_bytes: int
    cores: int
    cpu: str
    macros: frozenset[str] = frozenset()  # every macro the compiler predefines for the flags
    # The compiler gets some permutations of 512-bit double vectors wrong (see compiler.py):
    # doubles then use 256-bit vectors, in braze's explicit vector code too.
    narrow_doubles: bool = False

    @property
    def macros_digest(self) -> str:
        """The full set of the compiler's predefined macros, as a short digest: a library
        built where any of them differs is for another target."""
        return hashlib.sha256(" ".join(sorted(self.macros)).encode()).hexdigest()[:32]

    def vector_bytes_for(self, itemsize: int) -> int:
        """The bytes of the vectors that hold elements of ``itemsize`` bytes."""
        return min(self.vector_bytes, 32) if itemsize == 8 and self.narrow_doubles else self.vector_bytes

    def lanes(self, itemsize: int) -> int:
        """Elements of ``itemsize`` bytes in one vector."""
        return self.vector_bytes_for(itemsize) // itemsize

    @property
    def bfloat16_dot(self) -> bool:
        """Whether generated code may use AVX512-BF16's ``vdpbf16ps`` (pairs of bfloat16
        products summed into float32 lanes); without it, bfloat16 is converted and
        multiplied in float32."""
        return "avx512_bf16" in self.features and self.vector_bytes == 64

    @property
    def alignment(self) -> int:
        """Bytes every buffer of a kernel starts at: a cache line, which also aligns the
        widest vector loads."""
        return max(CACHE_LINE, self.vector_bytes)

    @property
    def key(self) -> str:
        """What determines the generated machine code: part of every cache key. The CPU's
        model stands in for what ``-march=native`` tunes for."""
        model = self.cpu if self.name == "native" else ""
        features = " ".join(sorted(self.features))
        return f"{self.level}|{' '.join(self.flags)}|{features}|{model}|{self.macros_digest}|{self.vector_bytes_for(8)}"

    def describe(self) -> str:
        kib = 1024
        return (
            f"{self.cpu}: {self.level} ({self.vector_bytes * 8}-bit vectors, {self.vector_registers} vector "
            f"registers), {self.cores} core{'s' if self.cores != 1 else ''}, L1d {self.l1d_bytes // kib} KiB, "
            f"L2 {self.l2_bytes // kib} KiB, L3 {self.l3_bytes // kib // kib} MiB"
            + (", bfloat16 dot products" if self.bfloat16_dot else "")
        )


def requested() -> str:
    """The target named by ``BRAZE_CPU_TARGET`` (default ``native``)."""
    name = os.environ.get("BRAZE_CPU_TARGET", "native").strip() or "native"
    if name not in _TARGET_NAMES:
        raise TargetError(f"BRAZE_CPU_TARGET={name!r} is not a CPU target; use one of {', '.join(_TARGET_NAMES)}")
    return name


def target_flags(name: str) -> tuple[str, ...]:
    """The compiler flags that select target ``name``."""
    if name != "native":
        return (f"-march={name}", "-mtune=generic")
    return ("-mcpu=native",) if platform.machine() in ("aarch64", "arm64") else ("-march=native",)


@functools.cache
def _cpuinfo() -> tuple[str, frozenset[str] | None]:
    """(CPU model name, its feature flags) from /proc/cpuinfo; flags None where unknown."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or platform.machine(), None
    model, flags = platform.machine(), None
    for line in text.splitlines():
        field, _, value = line.partition(":")
        field = field.strip()
        if field in ("model name", "Model") and model == platform.machine():
            model = value.strip()
        elif field in ("flags", "Features") and flags is None:
            flags = frozenset(value.split())
    return model, flags


def host_features() -> frozenset[str] | None:
    """The instruction-set flags of this host's CPU, or None where they cannot be read."""
    return _cpuinfo()[1]


def host_levels() -> list[str]:
    """The x86-64 levels this host can run, lowest first."""
    flags = host_features() or frozenset()
    runnable, needed = [], set()
    for level in LEVELS:
        needed |= _LEVEL_FLAGS[level]
        if needed <= flags:
            runnable.append(level)
    return runnable


def missing_features(required: frozenset[str]) -> list[str]:
    """The features in ``required`` that this host lacks (none when the host cannot say)."""
    flags = host_features()
    return [] if flags is None else sorted(required - flags)


def _cache_size(level: int, kinds: tuple[str, ...]) -> int | None:
    for entry in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if int((entry / "level").read_text()) != level or (entry / "type").read_text().strip() not in kinds:
                continue
            size = (entry / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
        return int(size.rstrip("KMG")) * scale
    return None


def resolve(name: str, macros: frozenset[str], narrow_doubles: bool = False) -> CpuTarget:
    """The target that compiler flags for ``name`` give, from the feature macros the
    compiler defines for them; ``narrow_doubles`` where the compiler's 512-bit double
    permutations cannot be trusted."""
    features = frozenset(_MACRO_FLAGS[m] for m in macros if m in _MACRO_FLAGS)
    avx512 = {"__AVX512F__", "__AVX512BW__", "__AVX512CD__", "__AVX512DQ__", "__AVX512VL__"} <= macros
    if avx512:
        level, vector_bytes, registers = "x86-64-v4", 64, 32
    elif {"__AVX2__", "__FMA__"} <= macros:
        level, vector_bytes, registers = "x86-64-v3", 32, 16
    elif "__SSE4_2__" in macros:
        level, vector_bytes, registers = "x86-64-v2", 16, 16
    elif "__aarch64__" in macros:
        level, vector_bytes, registers = "aarch64", 16, 32
    else:
        level, vector_bytes, registers = platform.machine() or "generic", 16, 16
    return CpuTarget(
        name=name,
        level=level,
        flags=target_flags(name),
        features=features,
        vector_bytes=vector_bytes,
        vector_registers=registers,
        l1d_bytes=_cache_size(1, ("Data", "Unified")) or 32 << 10,
        l2_bytes=_cache_size(2, ("Unified", "Data")) or 1 << 20,
        l3_bytes=_cache_size(3, ("Unified",)) or 8 << 20,
        cores=available_cores(),
        cpu=_cpuinfo()[0],
        macros=macros,
        narrow_doubles=narrow_doubles and vector_bytes > 32,
    )


def check_runnable(target: CpuTarget) -> None:
    """Raise TargetError when this host cannot run code built for ``target``."""
    lacking = missing_features(target.features)
    if lacking:
        raise TargetError(
            f"this CPU ({target.cpu}) cannot run code for {target.name} ({target.level}): it lacks "
            f"{', '.join(lacking)}; set BRAZE_CPU_TARGET to one of {', '.join([*host_levels(), 'native'])}"
        )
