"""Checkpoint files: ``.npz`` archives and ``.safetensors`` files of plain arrays, never pickle.

Both hold one array per parameter under its ``state_dict`` name (see :mod:`braze.nn.npz`
and :mod:`braze.nn.safetensors` for what a reader checks). A save goes to a temporary file
that is renamed over the target, so an interrupted save leaves the previous checkpoint
intact; the new file keeps the mode of the one it replaces, and the next save of a file
removes the temporary files that killed saves of it left. A read tells the format from the
file's first bytes, not its name.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import secrets
import socket
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import numpy as np

from braze.nn.errors import CheckpointError
from braze.nn.npz import read_model_weights, read_npz, write_npz
from braze.nn.safetensors import read_safetensors, write_safetensors

__all__ = ["CheckpointError", "read_checkpoint", "write_checkpoint", "write_npz", "write_safetensors"]

# An .npz archive is a zip file: it starts with a local file header, or with the end
# record when it holds no arrays (a model without parameters).
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
SAFETENSORS_SUFFIX = ".safetensors"


HDF5_SUFFIXES = (".h5", ".hdf5")
_WEIGHTS = (".npz", ".safetensors")


# What a checkpoint holds: floating-point parameters and integer buffers.
_KINDS = "fi"
_HOLDS = "a checkpoint holds floating-point parameters and integer buffers"


def saved_whole(path: str | os.PathLike) -> bool:
    """Whether ``save`` writes the whole model to ``path`` (``.keras``, or Keras's ``.h5``)
    rather than the weights (``.npz``, ``.safetensors``, ``.weights.h5``); ValueError for
    another name, which neither braze nor Keras would read back as a model."""
    name = os.fspath(path)
    suffix = Path(name).suffix
    if suffix not in (".keras", *HDF5_SUFFIXES, *_WEIGHTS):
        raise ValueError(
            f"{name}: save to a name ending in .keras (the whole model: architecture, weights, compile settings) "
            "or in .npz or .safetensors (weights and buffers)"
        )
    return suffix == ".keras" or (suffix in HDF5_SUFFIXES and not name.endswith(".weights" + suffix))


def write_checkpoint(path: str | os.PathLike, state: dict[str, np.ndarray]) -> None:
    """Write ``state`` atomically: safetensors when ``path`` ends with .safetensors, else .npz.

    Raises :class:`CheckpointError`, writing nothing, for what :func:`read_checkpoint` would
    refuse to read back: anything but floating-point and integer arrays."""
    arrays = {name: np.asarray(value) for name, value in state.items()}
    for name, array in arrays.items():
        if array.dtype.kind not in _KINDS:
            raise CheckpointError(f"{name}: cannot save {array.dtype}, {_HOLDS}")
    target = Path(path)
    if target.suffix == SAFETENSORS_SUFFIX:
        write_atomically(target, lambda handle: write_safetensors(handle, arrays))
    else:
        write_atomically(target, lambda handle: write_npz(handle, arrays))


def write_atomically(target: Path, write: Callable[[BinaryIO], None]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(target)
    # Created as open() creates a file (mode 0o666 less the umask), not mkstemp's 0o600, so
    # the checkpoint is as readable by others as the file it replaces would have been; a
    # file being replaced gives its own mode.
    temp = target.parent / f".{target.name}.{socket.gethostname()}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.fchmod(fd, stat.S_IMODE(os.stat(target).st_mode))
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
    _sync_folder(target.parent)


def _remove_stale_temporaries(target: Path) -> None:
    """Remove the temporary files of saves of ``target`` that were killed (a process of this
    host that no longer runs); another process's save in progress keeps its own."""
    host = socket.gethostname()
    for temp in target.parent.glob(f".{glob.escape(target.name)}.*.tmp"):
        owner, _, pid = temp.name[len(target.name) + 2 : -len(".tmp")].rpartition(".")[0].rpartition(".")
        if owner in (host, "") and pid.isdigit() and not _running(int(pid)):  # "": an older braze named no host
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _sync_folder(folder: Path) -> None:
    """Make the rename durable: until the folder's new entry reaches the disk, a power cut
    can leave the folder naming the old checkpoint, or none (POSIX; elsewhere a no-op).
    Filesystems that cannot sync a folder (some network and FUSE mounts) refuse it: the
    checkpoint is written all the same, so the refusal is not an error."""
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as error:
        if error.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def read_checkpoint(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` or ``.safetensors`` checkpoint ``path``, by
    parameter name.

    Raises :class:`CheckpointError` naming the file when it is missing, empty, of neither
    format (wrong magic bytes), truncated or corrupt, or holds anything but float and integer
    arrays.
    """
    magic = read_start(path, 9)
    if not magic:
        raise CheckpointError(f"{path}: empty file, not a checkpoint")
    if magic[:4] in _ZIP_MAGICS:
        state = read_model_weights(path)  # a whole model's file, which Keras's load_weights reads too
        if state is None:
            state = read_npz(path)
    elif magic[8:9] == b"{":
        state = read_safetensors(Path(path))
    else:
        raise CheckpointError(
            f"{path}: not a checkpoint: wrong magic bytes {magic[:4]!r} (an .npz archive starts with "
            f"{_ZIP_MAGICS[0]!r}, a .safetensors file with its header size and '{{')"
        )
    require_numbers(path, state)
    return state


def read_start(path: str | os.PathLike, size: int) -> bytes:
    """The first ``size`` bytes of the regular file ``path`` (a CheckpointError for anything
    else: opened without blocking, a FIFO or a device is refused before it is read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the reader
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise CheckpointError(f"{path}: not a regular file, not a checkpoint")
            return handle.read(size)
    except OSError as error:
        raise CheckpointError(f"{path}: cannot read checkpoint ({error.strerror or error})") from None


def require_numbers(path: str | os.PathLike, state: dict[str, object]) -> None:
    """A CheckpointError unless every array of ``state`` is a NumPy array of floats (a
    parameter) or integers (a buffer: a batch norm's count of batches, as PyTorch's); a
    model's load then matches each one's kind to its tensor's."""
    for name, value in state.items():
        if not isinstance(value, np.ndarray):
            raise CheckpointError(f"{path}: not a checkpoint: member {name!r} is not a NumPy array")
        if value.dtype.kind not in _KINDS:
            raise CheckpointError(f"{path}: wrong dtype: {name} is {value.dtype}, {_HOLDS}")
