"""The folder braze caches in, and what braze trusts there.

Everything braze caches (compiled kernels, the remembered compiler probe and autotuning
picks, generated data sets) lives under one folder: ``$BRAZE_CACHE``, else
``~/.cache/braze``. Code loaded from it runs with the user's rights, so braze uses the
folder only when nobody else can write to it: the folder and every sub-folder braze uses
must belong to the user and not be writable by group or others (pip asks the same of its
cache). Otherwise braze warns once and caches in a private temporary folder for the rest
of the process. A cache that cannot be written (read-only, full) costs later runs a
rebuild, never this one: one warning, and the run goes on without persisting.

Files are opened without following links and checked on the open file (a regular file of
the user's, writable by nobody else) before a byte is read. Records (JSON) are data, never
instructions: a record that is not what its reader expects is ignored with one warning.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import os
import shutil
import stat
import tempfile
import warnings
from pathlib import Path
from typing import Any


class CacheWarning(UserWarning):
    """A cache folder, entry or record that could not be used, or a cache that cannot be written."""


class UntrustedFile(Exception):
    """A cache file that is not the user's own private regular file (the message says why)."""


_WARNED: set[str] = set()
_ROOTS: dict[str, Path] = {}  # each configured folder, as this process uses it
_TEMPORARY: list[Path] = []


def default_root() -> Path:
    """The configured cache folder: ``$BRAZE_CACHE``, else ``~/.cache/braze``."""
    configured = os.environ.get("BRAZE_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "braze"


def warn_once(message: str, kind: str | None = None) -> None:
    """``message`` as a CacheWarning, the first time this process meets it (or, given a
    ``kind``, the first message of that kind)."""
    key = kind or message
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(message, CacheWarning, stacklevel=3)


def problem(info: os.stat_result, kind: str = "folder") -> str | None:
    """Why a file or folder with ``info`` (from lstat or fstat) may not be trusted, or None."""
    wanted = stat.S_ISDIR if kind == "folder" else stat.S_ISREG
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link"
    if not wanted(info.st_mode):
        return f"is not a {'folder' if kind == 'folder' else 'regular file'}"
    if info.st_uid != os.getuid():
        return f"is owned by another user (uid {info.st_uid})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"is writable by {'group and others' if info.st_mode & stat.S_IWOTH else 'its group'}"
    return None


def _temporary_root() -> Path:
    """A private folder for this process's cache, removed when it exits."""
    if not _TEMPORARY:
        _TEMPORARY.append(Path(tempfile.mkdtemp(prefix="braze-cache-")))
        atexit.register(shutil.rmtree, _TEMPORARY[0], True)
    return _TEMPORARY[0]


def _refused(path: Path, reason: str) -> Path:
    fallback = _temporary_root()
    warn_once(
        f"braze: not using the cache folder {path}: it {reason}, so others could plant code braze would "
        f"run; caching in the private temporary folder {fallback} for this process instead (make the "
        f"folder yours with mode 0700, or point BRAZE_CACHE elsewhere)"
    )
    return fallback


def cache_root(root: Path | None = None) -> Path:
    """The folder to cache in: ``root`` (default :func:`default_root`), made private if it
    is missing, when it is the user's own and writable by nobody else; else a private
    temporary folder (after one warning)."""
    root = Path(root) if root is not None else default_root()
    key = str(root)
    if key not in _ROOTS:
        try:
            root.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as error:
            if not root.is_dir():
                cannot_persist(root, error)
                _ROOTS[key] = root  # nothing there to trust: reads find nothing, writes warn
                return root
        reason = problem(root.stat())  # the folder a configured link points to must be private too
        _ROOTS[key] = root if reason is None else _refused(root, reason)
    return _ROOTS[key]


def private_folder(parent: Path, name: str) -> Path:
    """``parent/name``, made private if missing, when it is a real folder of the user's and
    writable by nobody else; else a private temporary one (after one warning)."""
    folder = parent / name
    try:
        folder.mkdir(exist_ok=True, mode=0o700)
    except OSError as error:
        if not os.path.lexists(folder):
            cannot_persist(folder, error)
            return folder  # nothing there to trust: reads find nothing, writes warn
    reason = problem(folder.lstat())
    if reason is None:
        return folder
    fallback = _refused(folder, reason) / name
    fallback.mkdir(exist_ok=True, mode=0o700)
    return fallback


def read_private(path: Path) -> bytes | None:
    """The bytes of ``path``, opened once without following a link and checked on the open
    file; None when it does not exist; UntrustedFile when it is not the user's own private
    regular file (a FIFO is never waited on)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise UntrustedFile("is a symbolic link") from None
        raise
    try:
        reason = problem(os.fstat(fd), "file")
        if reason is not None:
            raise UntrustedFile(reason)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read()
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes, mode: int) -> None:
    """Write ``data`` to a temporary name beside ``path`` and rename it into place, so a
    reader never sees half a file."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def cannot_persist(path: Path, error: OSError) -> None:
    """Say once that the cache cannot be written: the run goes on, later runs rebuild."""
    why = error.strerror or str(error)
    warn_once(
        f"braze: cannot write to the cache ({why}: {path}); this run goes on, but what it compiles is not "
        "kept for later runs",
        "cannot write",
    )


def try_write(path: Path, data: bytes, mode: int = 0o600) -> bool:
    """:func:`write_atomically`, or one warning when the cache cannot be written."""
    try:
        write_atomically(path, data, mode)
    except OSError as error:
        cannot_persist(path, error)
        return False
    return True


def read_record(path: Path) -> Any:
    """The JSON object in ``path``, or None when there is none, or (after one warning) when
    it is not the user's own private file or not a JSON object."""
    try:
        data = read_private(path)
        if data is None:
            return None
        value = json.loads(data)
        if not isinstance(value, dict):
            raise ValueError(f"a JSON {type(value).__name__} where an object belongs")
        return value
    except UntrustedFile as error:
        warn_once(f"braze: ignoring the cache record {path}: it {error}; it is made again")
    except (OSError, ValueError, RecursionError) as error:  # RecursionError: JSON nested past Python's depth
        warn_once(f"braze: ignoring the cache record {path} ({error}); it is made again")
    return None


def write_record(path: Path, value: dict) -> bool:
    return try_write(path, json.dumps(value, indent=0, sort_keys=True).encode())


# What braze keeps in the cache folder, as `braze cache info` shows it and `braze cache clear` removes it.
PARTS = {
    "kernels": "compiled kernels",
    "compilers.json": "compiler probes",
    "autotune.json": "autotuning picks",
    "data": "generated data sets",
}


def _files(path: Path) -> tuple[int, int]:
    """(files, bytes) under ``path``, never following a link."""
    if not os.path.lexists(path):
        return 0, 0
    if not path.is_dir() or path.is_symlink():
        return 1, path.lstat().st_size
    count = size = 0
    for folder, _, names in os.walk(path):
        for name in names:
            with contextlib.suppress(OSError):
                size += os.lstat(os.path.join(folder, name)).st_size
                count += 1
    return count, size


def describe(root: Path | None = None) -> str:
    """What the cache folder holds, part by part (``braze cache info``)."""
    root = Path(root) if root is not None else default_root()
    if not root.exists():
        return f"cache folder {root}: empty (not made yet)"
    reason = problem(root.stat())
    state = "private to you" if reason is None else f"NOT USED: it {reason}"
    lines, total = [f"cache folder {root} ({state})"], 0
    for name, what in PARTS.items():
        count, size = _files(root / name)
        total += size
        lines.append(f"  {what + ':':22} {count:6} files {size / 2**20:10.1f} MiB   {root / name}")
    lines.append(f"  {'total:':22} {'':6}       {total / 2**20:10.1f} MiB")
    return "\n".join(lines)


def clear(root: Path | None = None) -> tuple[int, int]:
    """Remove what braze keeps in the cache folder (``braze cache clear``): (files, bytes)."""
    root = Path(root) if root is not None else default_root()
    if not root.exists():
        return 0, 0
    reason = problem(root.stat())
    if reason is not None:
        raise OSError(f"not clearing the cache folder {root}: it {reason}")
    count = size = 0
    for name in PARTS:
        path = root / name
        found = _files(path)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif os.path.lexists(path):
            path.unlink()
        count, size = count + found[0], size + found[1]
    return count, size
