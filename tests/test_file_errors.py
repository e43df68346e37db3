"""Every file reader turns a malformed file into its braze error naming the file.

One table of readers (IDX raw and gzipped, MNIST, image folders, ``.npz`` and
``.safetensors`` checkpoints),
each fed the same malformed versions of a valid file: empty, truncated, wrong magic
bytes and random bytes. The kernel cache has its own tests (tests/backends).
"""

from __future__ import annotations

import gzip
import io
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from braze.data import DataError, ImageFolder, load_mnist, read_idx
from braze.models import LeNet
from braze.nn import CheckpointError, Dense, Sequential
from braze.nn.checkpoint import write_safetensors

MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def idx_bytes(array: np.ndarray, code: int = 0x08) -> bytes:
    header = struct.pack(">BBBB", 0, 0, code, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.tobytes()


def png_bytes() -> bytes:
    out = io.BytesIO()
    Image.fromarray(np.arange(8 * 8 * 3, dtype=np.uint8).reshape(8, 8, 3)).save(out, format="PNG")
    return out.getvalue()


def npz_bytes() -> bytes:
    out = io.BytesIO()
    np.savez(out, **Sequential(Dense(2, input_dim=3)).state_dict())
    return out.getvalue()


def safetensors_bytes() -> bytes:
    out = io.BytesIO()
    write_safetensors(out, Sequential(Dense(2, input_dim=3)).state_dict())
    return out.getvalue()


def mnist_folder(tmp_path: Path) -> Path:
    """Four valid tiny MNIST files; the test overwrites the training labels."""
    root = tmp_path / "mnist"
    root.mkdir()
    for name in MNIST_FILES:
        shape = (4, 28, 28) if "images" in name else (4,)
        (root / name).write_bytes(idx_bytes(np.zeros(shape, np.uint8)))
    return root / "train-labels-idx1-ubyte"


def image_folder(tmp_path: Path) -> Path:
    for name in ("a", "b"):
        (tmp_path / "images" / name).mkdir(parents=True)
        (tmp_path / "images" / name / "0.png").write_bytes(png_bytes())
    return tmp_path / "images" / "b" / "0.png"


def read_image_folder(path: Path) -> None:
    next(iter(ImageFolder(path.parents[1], target_size=(8, 8), batch_size=2, shuffle=False)))


@dataclass
class Reader:
    name: str
    valid: Callable[[], bytes]
    place: Callable[[Path], Path]  # where the file goes (after creating what it needs)
    read: Callable[[Path], object]
    error: type[Exception]


READERS = [
    Reader(
        "idx", lambda: idx_bytes(np.zeros((3, 28, 28), np.uint8)), lambda t: t / "x-idx3-ubyte", read_idx, DataError
    ),
    Reader(
        "idx.gz",
        lambda: gzip.compress(idx_bytes(np.zeros((3, 5), np.uint8))),
        lambda t: t / "x-idx2-ubyte.gz",
        read_idx,
        DataError,
    ),
    Reader(
        "mnist",
        lambda: idx_bytes(np.arange(4, dtype=np.uint8)),
        mnist_folder,
        lambda p: load_mnist(p.parent, verify=False),
        DataError,
    ),
    Reader("image folder", png_bytes, image_folder, read_image_folder, DataError),
    Reader(
        "checkpoint",
        npz_bytes,
        lambda t: t / "model.npz",
        lambda p: Sequential(Dense(2, input_dim=3)).load(p),
        CheckpointError,
    ),
    Reader(
        "safetensors checkpoint",
        safetensors_bytes,
        lambda t: t / "model.safetensors",
        lambda p: Sequential(Dense(2, input_dim=3)).load(p),
        CheckpointError,
    ),
]

MALFORMED: dict[str, Callable[[bytes], bytes]] = {
    "empty": lambda valid: b"",
    "truncated": lambda valid: valid[: len(valid) // 2],
    "wrong magic": lambda valid: bytes(b ^ 0xFF for b in valid[:4]) + valid[4:],
    "random bytes": lambda valid: np.random.default_rng(0).bytes(len(valid)),
}


@pytest.mark.parametrize("reader", READERS, ids=[r.name for r in READERS])
def test_valid_files_read(tmp_path, reader):
    path = reader.place(tmp_path)
    path.write_bytes(reader.valid())
    reader.read(path)


@pytest.mark.parametrize("how", MALFORMED)
@pytest.mark.parametrize("reader", READERS, ids=[r.name for r in READERS])
def test_malformed_file_is_a_braze_error_naming_the_file(tmp_path, reader, how):
    path = reader.place(tmp_path)
    path.write_bytes(MALFORMED[how](reader.valid()))
    with pytest.raises(reader.error) as info:
        reader.read(path)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_truncated_checkpoint_says_so(tmp_path):
    path = tmp_path / "truncated.npz"
    path.write_bytes(npz_bytes()[:-30])
    with pytest.raises(CheckpointError, match=rf"^{path}: truncated or corrupt checkpoint \(File is not a zip file\)$"):
        LeNet().load(path)


# Files with a good structure but the wrong content type.
WRONG_DTYPE = [
    (
        "idx dtype code",
        lambda t: (t / "x-idx1-ubyte", bytes([0, 0, 0x42, 1]) + struct.pack(">I", 1) + b"\x00"),
        read_idx,
        DataError,
        "unknown IDX dtype code 0x42",
    ),
    (
        "mnist float images",
        lambda t: (mnist_folder(t).with_name("train-images-idx3-ubyte"), idx_bytes(np.zeros((4, 28, 28), ">f4"), 0x0D)),
        lambda p: load_mnist(p.parent, verify=False),
        DataError,
        "expected uint8 images of shape [N, H, W], got float32",
    ),
    (
        "checkpoint of integers",
        lambda t: (
            t / "ints.npz",
            _npz(**{"layers.0.kernel": np.zeros((3, 2), np.int64), "layers.0.bias": np.ones(2)}),
        ),
        lambda p: Sequential(Dense(2, input_dim=3)).load(p),
        CheckpointError,
        "layers.0.kernel is int64 in the checkpoint but float32 in the model",
    ),
    (
        "checkpoint of strings",
        lambda t: (t / "text.npz", _npz(kernel=np.array(["a", "b"]))),
        lambda p: Sequential(Dense(2, input_dim=3)).load(p),
        CheckpointError,
        "wrong dtype: kernel is <U1",
    ),
    (
        "a .npy array, not an .npz checkpoint",
        lambda t: (t / "array.npz", _npy(np.zeros(3, np.float32))),
        lambda p: Sequential(Dense(2, input_dim=3)).load(p),
        CheckpointError,
        "not a checkpoint: wrong magic bytes b'\\x93NUM'",
    ),
]


def _npz(**arrays: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def _npy(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


@pytest.mark.parametrize(("case", "make", "read", "error", "message"), WRONG_DTYPE, ids=[c[0] for c in WRONG_DTYPE])
def test_wrong_content_type_is_named(tmp_path, case, make, read, error, message):
    path, content = make(tmp_path)
    path.write_bytes(content)
    with pytest.raises(error) as info:
        read(path)
    assert str(path) in str(info.value) and message in str(info.value)


@pytest.mark.parametrize(
    ("read", "error"),
    [(read_idx, DataError), (lambda p: Sequential(Dense(2, input_dim=3)).load(p), CheckpointError)],
    ids=["idx", "checkpoint"],
)
def test_missing_file_is_a_braze_error(tmp_path, read, error):
    path = tmp_path / "nothing-here"
    with pytest.raises(error, match=str(path)):
        read(path)
