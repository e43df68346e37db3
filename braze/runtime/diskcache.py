"""The persistent cache of compiled kernels, under ``~/.cache/braze`` (``$BRAZE_CACHE``).

Entries are named by a digest of everything that determines the library (the generated
source, which encodes the graph, and the compiler's identity and flags). Every file is
written to a temporary name and renamed into place, so a reader never sees half a file and
several processes building the same entry all succeed. The directory is private to the
user (0700); a library owned by someone else or writable by others is never loaded; an
entry whose recorded SHA-256 does not match its bytes is reported and rebuilt. The cache
holds at most ``max_bytes`` of entries: storing one removes the least recently used past
that (each hit marks its entry used).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path


class CacheWarning(UserWarning):
    """A cache entry that could not be used (and was rebuilt)."""


def default_root() -> Path:
    configured = os.environ.get("BRAZE_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "braze"


def digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def write_atomically(path: Path, data: bytes, mode: int) -> None:
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


MAX_BYTES = 1 << 30


class DiskCache:
    def __init__(self, root: Path | None = None, max_bytes: int = MAX_BYTES) -> None:
        self.root = (root or default_root()) / "kernels"
        self.max_bytes = max_bytes

    def _folder(self) -> Path:
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        info = self.root.stat()
        if info.st_uid == os.getuid():
            os.chmod(self.root, 0o700)
        return self.root

    def paths(self, key: str) -> tuple[Path, Path]:
        return self.root / f"{key}.so", self.root / f"{key}.sha256"

    def _trusted(self, path: Path) -> bool:
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode):
            reason = "is not a regular file"
        elif info.st_uid != os.getuid():
            reason = "is owned by another user"
        elif info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            reason = "is writable by other users"
        else:
            return True
        warnings.warn(f"braze: not loading cached kernel {path}: it {reason}; rebuilding", CacheWarning, stacklevel=4)
        return False

    def lookup(self, key: str) -> Path | None:
        """The verified library for ``key``, or None (missing, untrusted or corrupt)."""
        library, checksum = self.paths(key)
        try:
            if not self._trusted(library):
                return None
            data = library.read_bytes()
        except FileNotFoundError:  # never built, or evicted by another process
            return None
        try:
            recorded = checksum.read_text().strip()
        except OSError:
            recorded = ""
        if recorded != hashlib.sha256(data).hexdigest():
            warnings.warn(
                f"braze: cached kernel {library} is corrupt (checksum mismatch); rebuilding", CacheWarning, stacklevel=3
            )
            return None
        with contextlib.suppress(OSError):  # a read-only cache keeps its order
            os.utime(library)  # used now: the last to be evicted
        return library

    def store(self, key: str, built: Path) -> Path:
        folder = self._folder()
        library, checksum = self.paths(key)
        data = built.read_bytes()
        write_atomically(folder / library.name, data, 0o700)
        write_atomically(folder / checksum.name, hashlib.sha256(data).hexdigest().encode(), 0o600)
        self._evict(keep=library)
        return library

    def _evict(self, keep: Path) -> None:
        """Remove the least recently used entries (but ``keep``) until the libraries hold at
        most ``max_bytes``."""
        entries = []
        for path in self.root.glob("*.so"):
            with contextlib.suppress(FileNotFoundError):  # another process evicting too
                info = path.stat()
                entries.append((info.st_mtime, info.st_size, path))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            if path != keep:
                self.discard(path.stem)
                total -= size

    def get_or_build(self, key: str, build: Callable[[Path], Path]) -> tuple[Path, bool]:
        """(library path, whether it came from the cache); ``build(folder)`` makes a fresh one."""
        found = self.lookup(key)
        if found is not None:
            return found, True
        with tempfile.TemporaryDirectory(prefix="braze-build-") as folder:
            built = build(Path(folder))
            return self.store(key, built), False

    def keep_failed_source(self, key: str, source: str, suffix: str = ".c") -> Path:
        """Save the source of a failed build where the error message can point to it
        (``suffix``: the source language's, ``.cu`` or ``.cl`` for GPU kernels)."""
        folder = self._folder() / "failed"
        folder.mkdir(exist_ok=True, mode=0o700)
        path = folder / f"{key[:16]}{suffix}"
        write_atomically(path, source.encode(), 0o600)
        return path

    def discard(self, key: str) -> None:
        for path in self.paths(key):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
