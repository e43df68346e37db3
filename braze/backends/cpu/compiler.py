"""The C compiler driver: find ``cc`` ($CC overrides), choose flags for this host, build a
shared library, and report a failure with the generated source's path and the compiler's
own message."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from braze.backends.cpu.diskcache import default_root, write_atomically

# -fno-math-errno: generated code never reads errno, and without it GCC can neither hoist
# a loop-invariant pow() nor turn sqrt into one vector instruction.
BASE_FLAGS = ("-O3", "-march=native", "-fno-math-errno", "-fPIC", "-shared", "-std=gnu11")


class CompileError(RuntimeError):
    """The C compiler rejected generated code (a braze bug): the message says where the source is."""


@dataclass(frozen=True)
class Compiler:
    path: str
    version: str
    flags: tuple[str, ...]

    @property
    def identity(self) -> str:
        return f"{self.path}\n{self.version}\n{' '.join(self.flags)}"


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


def _probe(path: str) -> Compiler | None:
    """Ask the compiler its version and which flags it takes (a few compiler runs)."""
    version = _version(path)
    if version is None:
        return None
    flags = BASE_FLAGS if _accepts(path, BASE_FLAGS) else tuple(f for f in BASE_FLAGS if f != "-march=native")
    if _accepts(path, (*flags, "-fopenmp")):
        flags = (*flags, "-fopenmp")
    return Compiler(path, version, flags)


def _remembered(path: str) -> Compiler | None:
    """The probe of ``path`` from an earlier process, kept beside the kernel cache: probing
    runs the compiler three times, which would dominate a warm start. It is redone when the
    compiler's file changes."""
    info = os.stat(path)
    identity = f"{path}:{info.st_mtime_ns}:{info.st_size}:{' '.join(BASE_FLAGS)}"
    record = default_root() / "compilers.json"
    try:
        known = json.loads(record.read_text())
    except (OSError, ValueError):
        known = {}
    if identity in known:
        version, flags = known[identity]
        return Compiler(path, version, tuple(flags))
    compiler = _probe(path)
    if compiler is not None:
        known[identity] = [compiler.version, list(compiler.flags)]
        try:
            record.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            write_atomically(record, json.dumps(known).encode(), 0o600)
        except OSError:
            pass  # an unwritable cache only costs the next process a probe
    return compiler


@functools.cache
def find_compiler() -> Compiler | None:
    """The C compiler braze uses, or None when there is none."""
    requested = os.environ.get("CC")
    for name in [requested] if requested else ["gcc", "clang", "cc"]:
        path = shutil.which(name)
        compiler = _remembered(path) if path else None
        if compiler is not None:
            return compiler
    return None


def compile_library(compiler: Compiler, source: str, folder: Path, name: str = "module") -> Path:
    """Compile ``source`` into ``folder/name.so``."""
    folder.mkdir(parents=True, exist_ok=True)
    source_path = folder / f"{name}.c"
    source_path.write_text(source)
    library = folder / f"{name}.so"
    command = [compiler.path, *compiler.flags, "-o", str(library), str(source_path), "-lm"]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    except subprocess.TimeoutExpired:
        raise CompileError(f"{compiler.path} took over 600 s compiling {source_path}") from None
    if result.returncode != 0:
        raise CompileError(f"{compiler.path} failed to compile {source_path}:\n{result.stderr.strip()}")
    return library
