"""``.npz`` archives of float arrays (one ``NAME.npy`` member each, as ``np.savez`` writes
them), read without pickles and within what the archive can hold.

Before a member is inflated, its declared size must be its ``.npy`` header's (shape times
item size, plus the header), a stored member must take the room it declares, and the
archive's members together may declare at most ``MAX_RATIO`` times the file's size (plus
``SLACK``): a 1 MB archive that inflates to a gigabyte (a zip bomb), or a member claiming
1000 GiB, is a CheckpointError, never that much memory. Members are read to their
declared size and no further.
"""

from __future__ import annotations

import io
import math
import os
import zipfile
import zlib
from typing import BinaryIO

import numpy as np

from braze.nn.errors import CheckpointError

MAX_RATIO = 100  # float parameters compress about 1.1:1; zeros (fresh biases) far more
SLACK = 256 << 20  # so small archives of zeros are always fine
# What zipfile raises on a damaged archive; NotImplementedError for a compression method or
# zip version that a flipped byte names.
CORRUPT = (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError)


def write_npz(handle: BinaryIO, state: dict[str, np.ndarray]) -> None:
    """Write arrays to ``handle`` as ``np.savez`` does (one ``NAME.npy`` member each), for
    any name a zip member can hold: ``np.savez(handle, **state)`` fails on a parameter
    named ``file``; a name with a NUL (which ends a member's name when read back) or longer
    than a zip name's 65,535 bytes is a CheckpointError before anything is written."""
    for name in state:
        encoded = f"{name}.npy".encode("utf-8", errors="replace")
        if "\0" in name or len(encoded) > 0xFFFF:
            shown = name if len(name) <= 40 else f"{name[:40]}... ({len(name):,} characters)"
            raise CheckpointError(f"{shown!r}: an .npz checkpoint cannot hold this name (a NUL, or over 65,535 bytes)")
    with zipfile.ZipFile(handle, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, value in state.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(value), allow_pickle=False)


def _header(member: BinaryIO) -> tuple[tuple[int, ...], bool, np.dtype]:
    version = np.lib.format.read_magic(member)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(member)
    return np.lib.format.read_array_header_2_0(member)


def _member(path: str | os.PathLike, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
    name = info.filename[: -len(".npy")]
    if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
        raise CheckpointError(f"{path}: truncated or corrupt checkpoint ({name} declares {info.file_size:,} bytes)")
    with archive.open(info) as member:
        shape, fortran, dtype = _header(member)
        if dtype.hasobject:
            raise CheckpointError(f"{path}: not a checkpoint: {name} holds Python objects (a pickle)")
        nbytes = math.prod(shape) * dtype.itemsize
        if member.tell() + nbytes != info.file_size:
            raise CheckpointError(
                f"{path}: truncated or corrupt checkpoint ({name}: its header says shape {list(shape)} of {dtype}, "
                f"{nbytes:,} bytes, but the archive declares {info.file_size - member.tell():,})"
            )
        array = np.empty(shape, dtype, order="F" if fortran else "C")
        view = memoryview(array.reshape(-1, order="A").view(np.uint8)) if nbytes else memoryview(b"")
        done = 0
        while done < nbytes:
            got = member.readinto(view[done:])
            if not got:
                raise CheckpointError(f"{path}: truncated or corrupt checkpoint ({name} ends early)")
            done += got
        return array


def read_npz(path: str | os.PathLike, source: io.BytesIO | None = None) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` archive ``path`` (or of ``source``, an archive read from
    inside ``path``, whose arrays are bounded by the size of ``path`` itself), by name
    (CheckpointError naming the file and what is wrong with it otherwise)."""
    try:
        with zipfile.ZipFile(path if source is None else source) as archive:
            infos = archive.infolist()
            declared = sum(info.file_size for info in infos)
            size = os.path.getsize(path)
            if declared > MAX_RATIO * size + SLACK:
                raise CheckpointError(
                    f"{path}: not loaded: its arrays declare {declared:,} bytes, {declared / max(size, 1):,.0f} times "
                    f"the {size:,} bytes of the archive (a decompression bomb?)"
                )
            seen: set[str] = set()  # a set, not a count per member: linear in the members
            for info in infos:
                if not info.filename.endswith(".npy"):
                    raise CheckpointError(f"{path}: not a checkpoint: member {info.filename!r} is not an array")
                if info.filename in seen:
                    raise CheckpointError(f"{path}: not a checkpoint: member {info.filename!r} appears twice")
                seen.add(info.filename)
            return {info.filename[: -len(".npy")]: _member(path, archive, info) for info in infos}
    except CORRUPT as error:
        raise CheckpointError(f"{path}: truncated or corrupt checkpoint ({error})") from None
    except (OSError, ValueError) as error:
        if isinstance(error, CheckpointError):
            raise
        raise CheckpointError(f"{path}: not a checkpoint: {error}") from None


MODEL_WEIGHTS = "model.weights.npz"  # the weights' member of a model saved whole (model.save)


def read_member(path: str | os.PathLike, archive: zipfile.ZipFile, name: str) -> bytes:
    """Member ``name`` of the zip ``archive`` (the file ``path``), if what it declares is
    within ``MAX_RATIO`` times the file's size (plus ``SLACK``)."""
    info = archive.getinfo(name)
    if info.file_size > MAX_RATIO * os.path.getsize(path) + SLACK:
        raise CheckpointError(f"{path}: not loaded: {name} declares {info.file_size:,} bytes (a decompression bomb?)")
    return archive.read(info)


def read_model_weights(path: str | os.PathLike) -> dict[str, np.ndarray] | None:
    """The model's weights (not its optimizer's) in a ``.keras`` archive written by
    ``model.save``, within the same size checks; None for any other archive."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            if "config.json" not in names or MODEL_WEIGHTS not in names:
                return None
            inner = io.BytesIO(read_member(path, archive, MODEL_WEIGHTS))
    except CORRUPT as error:
        raise CheckpointError(f"{path}: truncated or corrupt checkpoint ({error})") from None
    state = read_npz(path, inner)
    return {name: value for name, value in state.items() if not name.startswith("optimizer/")}
