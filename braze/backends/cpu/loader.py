"""Loading a compiled library from bytes that were checked, and unloading it when unused.

The dynamic linker is never handed a path in the cache: the cache reads and verifies a
library's bytes once (``DiskCache.lookup``), and the loader gives the linker a private,
sealed copy of exactly those bytes (a memfd, opened as ``/proc/self/fd/N``), so a file
swapped in after the check is never the one that runs. A library is unloaded (dlclose)
once nothing uses it: the executables holding it are gone, evicted from the executable
cache or dropped by their owner.
"""

from __future__ import annotations

import _ctypes
import contextlib
import ctypes
import fcntl
import os
import tempfile
import weakref

_SEALS = ("F_SEAL_SEAL", "F_SEAL_SHRINK", "F_SEAL_GROW", "F_SEAL_WRITE")
_PINNED: list[ctypes.CDLL] = []  # what our libraries brought in, kept loaded for good


def _mapped_files() -> set[str] | None:
    """The files mapped into this process (None where the system does not say)."""
    try:
        with open("/proc/self/maps") as maps:
            return {line.split(None, 5)[5].strip() for line in maps if line.count(" ") >= 5 and "/" in line}
    except (OSError, IndexError):
        return None


def _pin_new_dependencies(before: set[str]) -> None:
    """Keep loaded for good the libraries that loading one of ours brought in (its OpenMP
    runtime): their threads outlive our library, sleeping in their code, and unloading
    that code under them would crash the process when they wake."""
    for path in sorted((_mapped_files() or set()) - before):
        if path.startswith("/") and "memfd:" not in path:
            with contextlib.suppress(OSError):  # not a library (a data file mapped meanwhile)
                _PINNED.append(ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_NODELETE))


def _write_all(fd: int, data: bytes) -> None:
    with open(fd, "wb", closefd=False) as handle:
        handle.write(data)


def _sealed_copy(data: bytes, name: str) -> tuple[int, str]:
    """(a file descriptor, the path to open it by) of a private copy of ``data``."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create(f"braze-{name}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        _write_all(fd, data)
        seals = 0
        for seal in _SEALS:
            seals |= getattr(fcntl, seal, 0)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
        return fd, f"/proc/self/fd/{fd}"
    # No memfd (not Linux): a file in a new folder only this user can open, a name never reused.
    path = os.path.join(tempfile.mkdtemp(prefix="braze-load-"), f"{name}.so")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o700)
    _write_all(fd, data)
    return fd, path


def _unload(handle: int, fd: int, path: str) -> None:
    _ctypes.dlclose(handle)
    try:
        still = ctypes.CDLL(path, mode=os.RTLD_NOLOAD)
    except OSError:
        os.close(fd)  # unloaded: its name may be given to another library now
        return
    _ctypes.dlclose(still._handle)  # something else holds it: its name stays reserved


class Library:
    """A shared library loaded from ``data``; ``cdll`` is its ctypes handle. Unloaded when
    this object is collected, so whoever calls into the library must hold it."""

    def __init__(self, data: bytes, name: str) -> None:
        self.name = name
        fd, path = _sealed_copy(data, name)
        before = _mapped_files()
        try:
            self.cdll = ctypes.CDLL(path)
        except OSError:
            os.close(fd)
            raise
        if before is None:
            return  # what it brought in cannot be told, so it is never unloaded
        _pin_new_dependencies(before)
        unload = weakref.finalize(self, _unload, self.cdll._handle, fd, path)
        unload.atexit = False  # the process is ending: nothing to give back
