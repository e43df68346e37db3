"""safetensors files (Hugging Face's format, read by its NumPy and PyTorch loaders) of float
arrays, read with the checks the safetensors library makes.

An 8-byte little-endian header size N, N bytes of JSON ``{name: {"dtype", "shape",
"data_offsets"}}`` (offsets into the data that follows) with an optional
``"__metadata__"`` of strings, then the arrays' bytes, C order, little-endian. A file is
read only if its header is one JSON object of at most 100 MB without repeated names, its
metadata maps strings to strings, every shape's size fits in 64 bits and matches its
offsets, and the tensors cover the data exactly: in order, without gaps, overlaps or
trailing bytes.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import BinaryIO

import numpy as np

from braze.nn.errors import CheckpointError

# safetensors dtype names of the types a checkpoint may hold: floating-point parameters and
# integer buffers (a batch norm's count of batches). bfloat16 has no NumPy dtype: its 16
# bits are the high half of a float32.
STORED = {
    "F16": np.dtype("<f2"),
    "F32": np.dtype("<f4"),
    "F64": np.dtype("<f8"),
    "BF16": np.dtype("<u2"),
    "I32": np.dtype("<i4"),
    "I64": np.dtype("<i8"),
}
_NAMES = {
    np.dtype("float16"): "F16",
    np.dtype("float32"): "F32",
    np.dtype("float64"): "F64",
    np.dtype("int32"): "I32",
    np.dtype("int64"): "I64",
}
# The other dtypes the library knows: a tensor of one is a well-formed file, not a checkpoint.
_OTHERS = {"BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "U32", "U64"}
MAX_HEADER = 100_000_000  # the safetensors library's own limit
_LIMIT = 2**64  # sizes and offsets are 64-bit in the library


def write_safetensors(handle: BinaryIO, state: dict[str, np.ndarray]) -> None:
    """Write float and integer arrays to ``handle`` in the safetensors format."""
    header, offset, arrays = {}, 0, []
    for name, value in state.items():
        if name == "__metadata__":
            raise CheckpointError(f"{name}: safetensors reserves this name for the file's metadata")
        array = np.asarray(value)
        native = array.dtype.newbyteorder("=")
        if native not in _NAMES:
            raise CheckpointError(
                f"{name}: cannot write {array.dtype} to safetensors, a checkpoint holds floats and integer buffers"
            )
        # Little-endian and C order; np.ascontiguousarray would make a 0-d array 1-d.
        array = np.require(array.astype(native.newbyteorder("<"), copy=False), requirements="C")
        header[name] = {
            "dtype": _NAMES[native],
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


def _unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
    found: dict[str, object] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"the name {key!r} appears twice")
        found[key] = value
    return found


def _corrupt(path: Path, why: str) -> CheckpointError:
    return CheckpointError(f"{path}: truncated or corrupt checkpoint ({why})")


def _header(path: Path, content: bytes) -> dict:
    if len(content) < 8:
        raise _corrupt(path, f"{len(content)} bytes, less than a header size")
    (size,) = struct.unpack("<Q", content[:8])
    if size > MAX_HEADER:
        raise _corrupt(path, f"a header of {size:,} bytes, more than the {MAX_HEADER:,} safetensors allows")
    if 8 + size > len(content):
        raise _corrupt(path, f"a header of {size:,} bytes in a file of {len(content):,}")
    try:
        header = json.loads(content[8 : 8 + size], object_pairs_hook=_unique)
    except (ValueError, RecursionError) as error:  # not UTF-8, not JSON, a name twice, or nested past Python's depth
        raise _corrupt(path, f"its header is not one JSON object of distinct names: {error}") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: not a checkpoint: the safetensors header is not a JSON object")
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise _corrupt(path, f"its __metadata__ must map strings to strings, got {metadata!r:.200}")
    return header


def _is_size(value: object) -> bool:
    """Whether a header's dimension or offset is one: a non-negative 64-bit JSON integer."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _LIMIT


def _entry(path: Path, name: str, entry: object) -> tuple[str, tuple[int, ...], int, int]:
    """(dtype, shape, begin, end) of a header entry, all checked."""
    try:
        dtype, shape, (begin, end) = entry["dtype"], tuple(entry["shape"]), entry["data_offsets"]  # type: ignore[index]
    except (TypeError, KeyError, ValueError):
        raise CheckpointError(f"{path}: not a checkpoint: bad safetensors entry for {name}: {entry!r:.200}") from None
    if not isinstance(dtype, str) or not all(_is_size(v) for v in (*shape, begin, end)):
        raise CheckpointError(f"{path}: not a checkpoint: bad safetensors entry for {name}: {entry!r:.200}")
    if dtype not in STORED:
        what = "a tensor" if dtype in _OTHERS else "an unknown safetensors dtype"
        raise CheckpointError(
            f"{path}: wrong dtype: {name} is {dtype} ({what}), a checkpoint holds floating-point parameters "
            "and integer buffers"
        )
    nbytes = STORED[dtype].itemsize
    for dim in shape:
        nbytes *= dim
        if nbytes >= _LIMIT:
            raise _corrupt(path, f"{name}: shape {list(shape)} of {dtype} is more than 2^64 bytes")
    if end - begin != nbytes:
        raise _corrupt(path, f"{name}: bytes {begin}-{end} for shape {list(shape)} of {dtype}, {nbytes:,} bytes")
    return dtype, shape, begin, end


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The arrays of the safetensors file ``path``, by name (CheckpointError naming the file
    and what is wrong with it otherwise)."""
    content = path.read_bytes()
    header = _header(path, content)
    data = memoryview(content)[8 + struct.unpack("<Q", content[:8])[0] :]
    entries = {name: _entry(path, name, entry) for name, entry in header.items()}
    covered = 0
    for name, (_, _, begin, end) in sorted(entries.items(), key=lambda item: (item[1][2], item[1][3])):
        if begin != covered:
            what = "overlap" if begin < covered else f"bytes {covered}-{begin} belong to no tensor"
            raise _corrupt(path, f"{name} starts at byte {begin} of the data: {what}")
        covered = end
    if covered != len(data):
        what = f"{len(data) - covered:,} trailing bytes" if covered < len(data) else "the data ends early"
        raise _corrupt(path, f"the tensors end at byte {covered:,} of {len(data):,} bytes of data: {what}")
    try:
        return {name: _array(dtype, shape, data[begin:end]) for name, (dtype, shape, begin, end) in entries.items()}
    except ValueError as error:  # a shape NumPy cannot make (past 64 dimensions, or a size past its index)
        raise _corrupt(path, f"a tensor's shape NumPy cannot hold ({error})") from None


def _array(dtype: str, shape: tuple[int, ...], raw: memoryview) -> np.ndarray:
    if dtype == "BF16":
        return (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32).reshape(shape)
    stored = STORED[dtype]
    return np.frombuffer(raw, stored).astype(stored.newbyteorder("=")).reshape(shape)
