"""Strict reader for the IDX format used by MNIST.

IDX is a tiny binary format: a 4-byte magic number (two zero bytes, a dtype code and
the number of dimensions), one big-endian uint32 per dimension, then the raw
big-endian data. It is so simple that corrupt or truncated files would otherwise load
silently as garbage, so every field is checked and each failure names the file.
"""

from __future__ import annotations

import gzip
import math
import os
import zlib
from pathlib import Path

import numpy as np

from braze.data.errors import DataError

# IDX dtype codes, all big-endian on disk.
IDX_DTYPES: dict[int, np.dtype] = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


# Deflate compresses at most about 1032:1, so a gzip file promising more than this many
# bytes per byte of its own size cannot hold what its header says.
_MAX_DEFLATE_RATIO = 1032


def read_bytes(path: str | os.PathLike) -> bytes:
    """Return the uncompressed content of ``path``, gunzipping it when it ends in ``.gz``.

    MNIST is distributed gzipped but often stored unpacked; accepting both means users
    never have to convert. A gzipped file is inflated only as far as its IDX header says
    the file goes (a byte more, to tell trailing data), so a small file that inflates to
    gigabytes costs nothing. A file that cannot be read or decompressed is a
    :class:`DataError` naming it.
    """
    path = Path(path)
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as f:
                head = f.read(4)
                ndim = head[3] if len(head) == 4 else 0
                head += f.read(4 * ndim)
                promised = _promised_bytes(head)
                if promised is None:
                    return head + f.read(4)  # no header to trust: parse_idx says what is wrong
                if promised > _MAX_DEFLATE_RATIO * path.stat().st_size + len(head):
                    raise DataError(
                        f"{path}: its IDX header promises {promised:,} bytes, more than {path.stat().st_size:,} "
                        "bytes of gzip data can hold (a decompression bomb?)"
                    )
                return head + f.read(promised - len(head) + 1)
        return path.read_bytes()
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise DataError(f"{path}: cannot decompress gzip data ({e})") from e
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e.strerror or e})") from e


def _promised_bytes(head: bytes) -> int | None:
    """The size an IDX file with header ``head`` has, or None for a header that is not one."""
    if len(head) < 4 or head[0] != 0 or head[1] != 0 or head[2] not in IDX_DTYPES or len(head) < 4 + 4 * head[3]:
        return None
    shape = [int.from_bytes(head[4 + 4 * i : 8 + 4 * i], "big") for i in range(head[3])]
    return len(head) + math.prod(shape) * IDX_DTYPES[head[2]].itemsize


def parse_idx(data: bytes, name: str | os.PathLike = "<bytes>") -> np.ndarray:
    """Parse IDX ``data`` into a native-endian array; ``name`` is only used in errors.

    Kept separate from :func:`read_idx` so callers that already hold the bytes (for
    example to checksum them) do not read the file twice.
    """
    if len(data) < 4:
        raise DataError(f"{name}: too short for an IDX header ({len(data)} bytes)")
    zero0, zero1, code, ndim = data[0], data[1], data[2], data[3]
    magic = int.from_bytes(data[:4], "big")
    if zero0 != 0 or zero1 != 0:
        raise DataError(f"{name}: bad IDX magic number 0x{magic:08x} (the first two bytes must be zero)")
    if code not in IDX_DTYPES:
        known = ", ".join(f"0x{c:02x}" for c in IDX_DTYPES)
        raise DataError(f"{name}: unknown IDX dtype code 0x{code:02x} (expected one of {known})")
    header_len = 4 + 4 * ndim
    if len(data) < header_len:
        raise DataError(
            f"{name}: truncated IDX header: {ndim} dimensions need {header_len} bytes, file has {len(data)}"
        )
    shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    dtype = IDX_DTYPES[code]
    count = math.prod(shape)
    expected = header_len + count * dtype.itemsize
    if len(data) < expected:
        raise DataError(
            f"{name}: truncated IDX data: header promises shape {shape} "
            f"({expected} bytes in all), file has only {len(data)} bytes"
        )
    if len(data) > expected:
        raise DataError(f"{name}: {len(data) - expected} unexpected trailing bytes after IDX data of shape {shape}")
    flat = np.frombuffer(data, dtype=dtype, count=count, offset=header_len)
    try:  # astype copies, so the result is writable and in native byte order
        return flat.astype(dtype.newbyteorder("=")).reshape(shape)
    except ValueError as error:  # a shape NumPy cannot make (past 64 dimensions, or past its index)
        raise DataError(f"{name}: an IDX shape {shape} NumPy cannot hold ({error})") from None


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an IDX file (raw, or gzipped when the name ends in ``.gz``) into an array.

    Raises :class:`DataError` naming the file for a bad magic number, an unknown dtype
    code, or a size that does not match the header.
    """
    return parse_idx(read_bytes(path), path)
