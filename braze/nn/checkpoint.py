"""Checkpoint files: ``.npz`` archives and ``.safetensors`` files of plain arrays, never pickle.

Both hold one array per parameter under its ``state_dict`` name. A save goes to a
temporary file that is renamed over the target, so an interrupted save leaves the previous
checkpoint intact. A read tells the format from the file's first bytes, not its name.

safetensors (Hugging Face's format, read by its NumPy and PyTorch loaders): an 8-byte
little-endian header size N, N bytes of JSON ``{name: {"dtype", "shape", "data_offsets"}}``
(offsets into the data that follows), then the arrays' bytes, C order, little-endian.
"""

from __future__ import annotations

import errno
import json
import math
import os
import secrets
import struct
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import numpy as np

from braze.ir.errors import BrazeError

# An .npz archive is a zip file: it starts with a local file header, or with the end
# record when it holds no arrays (a model without parameters).
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
SAFETENSORS_SUFFIX = ".safetensors"
# safetensors dtype names of the floating-point types a checkpoint may hold. bfloat16 has
# no NumPy dtype: its 16 bits are the high half of a float32.
_SAFETENSORS_FLOATS = {"F16": np.dtype("<f2"), "F32": np.dtype("<f4"), "F64": np.dtype("<f8")}
_SAFETENSORS_NAMES = {np.dtype("float16"): "F16", np.dtype("float32"): "F32", np.dtype("float64"): "F64"}
_MAX_HEADER = 100_000_000  # the safetensors library's own limit


class CheckpointError(BrazeError, ValueError):
    """A checkpoint that does not fit the model, or a file that is not a braze checkpoint."""


def write_checkpoint(path: str | os.PathLike, state: dict[str, np.ndarray]) -> None:
    """Write ``state`` atomically: safetensors when ``path`` ends with .safetensors, else .npz.

    Raises :class:`CheckpointError`, writing nothing, for what :func:`read_checkpoint` would
    refuse to read back: anything but floating-point arrays."""
    arrays = {name: np.asarray(value) for name, value in state.items()}
    for name, array in arrays.items():
        if array.dtype.kind != "f":
            raise CheckpointError(f"{name}: cannot save {array.dtype}, a checkpoint holds floating-point parameters")
    target = Path(path)
    if target.suffix == SAFETENSORS_SUFFIX:
        write_atomically(target, lambda handle: write_safetensors(handle, arrays))
    else:
        write_atomically(target, lambda handle: write_npz(handle, arrays))


def write_atomically(target: Path, write: Callable[[BinaryIO], None]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    # Created as open() creates a file (mode 0o666 less the umask), not mkstemp's 0o600, so
    # the checkpoint is as readable by others as the file it replaces would have been.
    temp = target.parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
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


def write_npz(handle: BinaryIO, state: dict[str, np.ndarray]) -> None:
    """Write arrays to ``handle`` as ``np.savez`` does (one ``NAME.npy`` member each), for
    any names: ``np.savez(handle, **state)`` fails on a parameter named ``file``."""
    with zipfile.ZipFile(handle, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, value in state.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(value), allow_pickle=False)


def write_safetensors(handle: BinaryIO, state: dict[str, np.ndarray]) -> None:
    """Write float arrays to ``handle`` in the safetensors format."""
    header, offset, arrays = {}, 0, []
    for name, value in state.items():
        if name == "__metadata__":
            raise CheckpointError(f"{name}: safetensors reserves this name for the file's metadata")
        array = np.asarray(value)
        native = array.dtype.newbyteorder("=")
        if native not in _SAFETENSORS_NAMES:
            raise CheckpointError(f"{name}: cannot write {array.dtype} to safetensors, a checkpoint holds floats")
        # Little-endian and C order; np.ascontiguousarray would make a 0-d array 1-d.
        array = np.require(array.astype(native.newbyteorder("<"), copy=False), requirements="C")
        header[name] = {
            "dtype": _SAFETENSORS_NAMES[native],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + array.nbytes],
        }
        offset += array.nbytes
        arrays.append(array)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as the library writes it
    handle.write(struct.pack("<Q", len(text)) + text)
    for array in arrays:
        handle.write(array.tobytes())


def read_checkpoint(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The floating-point arrays of the ``.npz`` or ``.safetensors`` checkpoint ``path``, by
    parameter name.

    Raises :class:`CheckpointError` naming the file when it is missing, empty, of neither
    format (wrong magic bytes), truncated or corrupt, or holds anything but float arrays.
    """
    try:
        with open(path, "rb") as handle:
            magic = handle.read(9)
    except OSError as error:
        raise CheckpointError(f"{path}: cannot read checkpoint ({error.strerror or error})") from None
    if not magic:
        raise CheckpointError(f"{path}: empty file, not a checkpoint")
    if magic[:4] in _ZIP_MAGICS:
        state = _read_npz(path)
    elif magic[8:9] == b"{":
        state = _read_safetensors(Path(path))
    else:
        raise CheckpointError(
            f"{path}: not a checkpoint: wrong magic bytes {magic[:4]!r} (an .npz archive starts with "
            f"{_ZIP_MAGICS[0]!r}, a .safetensors file with its header size and '{{')"
        )
    for name, value in state.items():
        if not isinstance(value, np.ndarray):
            raise CheckpointError(f"{path}: not a checkpoint: member {name!r} is not a NumPy array")
        if value.dtype.kind != "f":
            raise CheckpointError(
                f"{path}: wrong dtype: {name} is {value.dtype}, a checkpoint holds floating-point parameters"
            )
    return state


def _read_npz(path: str | os.PathLike) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (zipfile.BadZipFile, EOFError, zlib.error) as error:
        raise CheckpointError(f"{path}: truncated or corrupt checkpoint ({error})") from None
    except (OSError, ValueError) as error:
        raise CheckpointError(f"{path}: not a checkpoint: {error}") from None


def _read_safetensors(path: Path) -> dict[str, np.ndarray]:
    content = path.read_bytes()
    (size,) = struct.unpack("<Q", content[:8])
    if size > min(_MAX_HEADER, len(content) - 8):
        raise CheckpointError(
            f"{path}: truncated or corrupt checkpoint (a header of {size} bytes in a file of {len(content)})"
        )
    try:
        header = json.loads(content[8 : 8 + size])
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{path}: truncated or corrupt checkpoint (its header is not JSON: {error})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: not a checkpoint: the safetensors header is not a JSON object")
    data = memoryview(content)[8 + size :]
    header.pop("__metadata__", None)
    return {name: _safetensors_array(path, name, entry, data) for name, entry in header.items()}


def _safetensors_array(path: Path, name: str, entry: object, data: memoryview) -> np.ndarray:
    try:
        dtype, shape, (begin, end) = entry["dtype"], tuple(entry["shape"]), entry["data_offsets"]  # type: ignore[index]
    except (TypeError, KeyError, ValueError):
        raise CheckpointError(f"{path}: not a checkpoint: bad safetensors entry for {name}: {entry!r}") from None
    if not isinstance(dtype, str) or not all(_is_size(v) for v in (*shape, begin, end)):
        raise CheckpointError(f"{path}: not a checkpoint: bad safetensors entry for {name}: {entry!r}")
    if dtype not in _SAFETENSORS_FLOATS and dtype != "BF16":
        raise CheckpointError(f"{path}: wrong dtype: {name} is {dtype}, a checkpoint holds floating-point parameters")
    itemsize = 2 if dtype == "BF16" else _SAFETENSORS_FLOATS[dtype].itemsize
    count = math.prod(shape)
    if not 0 <= begin <= end <= len(data) or end - begin != count * itemsize:
        raise CheckpointError(
            f"{path}: truncated or corrupt checkpoint ({name}: bytes {begin}-{end} for shape {list(shape)} of "
            f"{dtype}, {len(data)} bytes of data)"
        )
    raw = data[begin:end]
    if dtype == "BF16":
        return (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32).reshape(shape)
    stored = _SAFETENSORS_FLOATS[dtype]
    return np.frombuffer(raw, stored).astype(stored.newbyteorder("=")).reshape(shape)


def _is_size(value: object) -> bool:
    """Whether a header's dimension or offset is one: a non-negative JSON integer."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
