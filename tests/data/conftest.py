"""Shared helpers for the braze.data tests: hand-built IDX files and the real MNIST.

Helpers are handed out as fixtures rather than imported, so the tests work whatever
pytest import mode or other conftest.py files the rest of the repository uses.
"""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

from braze.data import load_mnist
from braze.data.mnist import REPO_DIR

# IDX dtype codes, written out here independently of braze.data.idx.
CODES = {
    np.dtype(np.uint8): 0x08,
    np.dtype(np.int8): 0x09,
    np.dtype(np.int16): 0x0B,
    np.dtype(np.int32): 0x0C,
    np.dtype(np.float32): 0x0D,
    np.dtype(np.float64): 0x0E,
}


def _idx_bytes(array: np.ndarray) -> bytes:
    """IDX encoding of ``array``: magic (0, 0, code, ndim), big-endian dims, big-endian data."""
    header = struct.pack(">BBBB", 0, 0, CODES[array.dtype], array.ndim)
    header += struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


def _write_file(path: Path, data: bytes) -> Path:
    """Write ``data``, gzipped when the name ends in .gz."""
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


def _write_small_mnist(
    directory: Path, n_train: int = 6, n_test: int = 4, label_base: int = 0, n_train_labels: int | None = None
) -> None:
    """Four tiny MNIST-named IDX files (train gzipped, test raw) with recognisable labels."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(label_base)
    n_labels = n_train if n_train_labels is None else n_train_labels
    files = {
        "train-images-idx3-ubyte.gz": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte.gz": ((np.arange(n_labels) + label_base) % 10).astype(np.uint8),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": (np.arange(n_test) % 10).astype(np.uint8),
    }
    for name, array in files.items():
        _write_file(directory / name, _idx_bytes(array))


@pytest.fixture
def idx_bytes():
    return _idx_bytes


@pytest.fixture
def write_file():
    return _write_file


@pytest.fixture
def small_mnist():
    return _write_small_mnist


@pytest.fixture
def hermetic(tmp_path, monkeypatch):
    """No MNIST anywhere: empty HOME, no BRAZE_DATA or BRAZE_CACHE, repository directory moved to tmp."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BRAZE_DATA", raising=False)
    monkeypatch.delenv("BRAZE_CACHE", raising=False)
    monkeypatch.setattr("braze.data.mnist.REPO_DIR", tmp_path / "repo" / "data" / "mnist")
    return tmp_path


@pytest.fixture(scope="session")
def real_mnist():
    """The real MNIST from the repository's data/mnist/, loaded (and verified) once."""
    if not all(
        (REPO_DIR / f"{n}.gz").is_file()
        for n in (
            "train-images-idx3-ubyte",
            "train-labels-idx1-ubyte",
            "t10k-images-idx3-ubyte",
            "t10k-labels-idx1-ubyte",
        )
    ):
        pytest.skip(f"real MNIST files not present in {REPO_DIR}")
    return load_mnist(REPO_DIR)
