"""The persistent cache of compiled kernels: ``kernels/`` in the cache folder
(``~/.cache/braze``, ``$BRAZE_CACHE``; see :mod:`braze.runtime.cachedir` for what braze
trusts there).

Entries are named by a digest of everything that determines the binary (the generated
source, which encodes the graph, and the compiler's identity, flags and target). Every file
is written to a temporary name and renamed into place, so a reader never sees half a file
and several processes building the same entry all succeed. A lookup opens an entry once,
checks it on the open file (the user's own regular file, writable by nobody else) and
against its recorded SHA-256, and returns those bytes: callers load what was checked,
never the path again. The folder is kept under a size (``BRAZE_CACHE_MAX_SIZE``, 1G by
default) by removing the least recently used entries.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from braze.ir.errors import ConfigError
from braze.runtime.cachedir import (
    CacheWarning,
    UntrustedFile,
    cache_root,
    cannot_persist,
    default_root,
    private_folder,
    read_private,
    try_write,
    warn_once,
    write_atomically,
)

__all__ = ["CacheWarning", "DiskCache", "default_root", "digest", "size_limit", "write_atomically"]

DEFAULT_MAX_SIZE = "1G"
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def size_limit() -> int:
    """The cache's size cap in bytes, from ``BRAZE_CACHE_MAX_SIZE`` (``500M``, ``2G``, bytes)."""
    text = os.environ.get("BRAZE_CACHE_MAX_SIZE", DEFAULT_MAX_SIZE).strip().upper()
    found = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)I?B?", text)
    if found is None:
        raise ConfigError(f"BRAZE_CACHE_MAX_SIZE={text!r} is not a size: use bytes or a number with K, M, G or T")
    size = float(found.group(1)) * _UNITS[found.group(2)]
    if not math.isfinite(size):
        raise ConfigError(f"BRAZE_CACHE_MAX_SIZE={text[:20]!r}... is past any size a disk holds")
    return int(size)


class DiskCache:
    def __init__(self, root: Path | None = None, max_bytes: int | None = None) -> None:
        self.base = cache_root(root)
        self.root = private_folder(self.base, "kernels")
        self.max_bytes = size_limit() if max_bytes is None else max_bytes

    def paths(self, key: str) -> tuple[Path, Path]:
        return self.root / f"{key}.so", self.root / f"{key}.sha256"

    def lookup(self, key: str) -> bytes | None:
        """The verified bytes of the entry ``key``, or None (missing, untrusted or corrupt)."""
        library, checksum = self.paths(key)
        try:
            data = read_private(library)
            if data is None:
                return None
            recorded = read_private(checksum)
        except UntrustedFile as error:
            warn_once(f"braze: not loading cached kernel {library}: it {error}; rebuilding")
            return None
        except OSError as error:
            warn_once(f"braze: cannot read cached kernel {library} ({error}); rebuilding")
            return None
        if recorded is None or recorded.decode(errors="replace").strip() != hashlib.sha256(data).hexdigest():
            warn_once(f"braze: cached kernel {library} is corrupt (checksum mismatch); rebuilding")
            return None
        with contextlib.suppress(OSError):
            os.utime(library)  # recently used: the last to be evicted
        return data

    def store(self, key: str, data: bytes) -> None:
        """Keep ``data`` as the entry ``key`` (nothing, after one warning, when the cache
        cannot be written), then evict the least recently used entries past the size cap."""
        library, checksum = self.paths(key)
        if try_write(library, data, 0o700) and try_write(checksum, hashlib.sha256(data).hexdigest().encode()):
            self._evict(keep=library)

    def get_or_build(self, key: str, build: Callable[[Path], Path]) -> tuple[bytes, bool]:
        """(the entry's bytes, whether they came from the cache); ``build(folder)`` makes a
        fresh one in a private temporary folder, and returns its path."""
        found = self.lookup(key)
        if found is not None:
            return found, True
        with tempfile.TemporaryDirectory(prefix="braze-build-") as folder:
            data = build(Path(folder)).read_bytes()
        self.store(key, data)
        return data, False

    def keep_failed_source(self, key: str, source: str, suffix: str = ".c") -> Path:
        """Save the source of a failed build where the error message can point to it
        (``suffix``: the source language's, ``.cu`` or ``.cl`` for GPU kernels)."""
        name = f"{key[:16]}{suffix}"
        path = private_folder(self.root, "failed") / name
        try:
            write_atomically(path, source.encode(), 0o600)
        except OSError as error:
            cannot_persist(path, error)
            path = Path(tempfile.mkdtemp(prefix="braze-failed-")) / name
            path.write_text(source)
        return path

    def discard(self, key: str) -> None:
        for path in self.paths(key):
            with contextlib.suppress(OSError):
                path.unlink()

    def entries(self) -> list[tuple[Path, int, float]]:
        """(library, bytes with its checksum, last use) of every entry, least recently used first."""
        found = []
        with contextlib.suppress(OSError), os.scandir(self.root) as listing:
            for item in listing:
                with contextlib.suppress(OSError):
                    info = item.stat(follow_symlinks=False)
                    if item.name.endswith(".so") and stat.S_ISREG(info.st_mode):
                        found.append((Path(item.path), info.st_size + 64, info.st_mtime))
        return sorted(found, key=lambda entry: entry[2])

    def size(self) -> int:
        return sum(size for _, size, _ in self.entries())

    def _evict(self, keep: Path) -> None:
        entries = self.entries()
        total = sum(size for _, size, _ in entries)
        for library, size, _ in entries:
            if total <= self.max_bytes:
                break
            if library != keep:
                self.discard(library.stem)
                total -= size
