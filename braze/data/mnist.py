"""MNIST: find the four IDX files locally, or download them, verify and parse them.

Training scripts should run unchanged on a laptop with a repository checkout, on a
machine with a shared data directory, and on a fresh machine with network access, so
the files are looked up in several places before anything is downloaded, unless the
caller names a directory: then that directory is the only source. Every file is
checked against the canonical MD5 of its uncompressed content, because a corrupt or
substituted dataset otherwise shows up only as a mysteriously bad accuracy.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from braze.data.errors import DataError
from braze.data.idx import parse_idx, read_bytes
from braze.runtime.cachedir import default_root

TRAIN_IMAGES = "train-images-idx3-ubyte"
TRAIN_LABELS = "train-labels-idx1-ubyte"
TEST_IMAGES = "t10k-images-idx3-ubyte"
TEST_LABELS = "t10k-labels-idx1-ubyte"

# MD5 of the *uncompressed* files, so raw and gzipped copies verify the same way.
MD5: dict[str, str] = {
    TRAIN_IMAGES: "6bbc9ace898e44ae57da46a324031adb",
    TRAIN_LABELS: "a25bea736e30d166cdddb491f175f624",
    TEST_IMAGES: "2646ac647ad5339dbf082846283269ea",
    TEST_LABELS: "27ae3e4e09519cfbb04c329615203637",
}

MIRRORS: tuple[str, ...] = (
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
)

# The checkout's data/mnist/, located from this file: braze/data/mnist.py -> repo root.
REPO_DIR = Path(__file__).resolve().parents[2] / "data" / "mnist"

DOWNLOAD_TIMEOUT_S = 60


@dataclass(frozen=True, eq=False)
class MNIST:
    """The MNIST train and test splits as NumPy arrays.

    Images are uint8 ``[N, 28, 28]`` exactly as stored, so no precision or memory is
    spent before the caller decides how to normalise; labels are int32 ``[N]``.
    Equality is identity (``eq=False``): element-wise array comparison has no single
    truth value.
    """

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray


def cache_dir() -> Path:
    """Where downloads go: ``mnist/`` in braze's cache folder, ``$BRAZE_CACHE`` else
    ``~/.cache/braze`` (resolved at call time, so the environment and HOME count)."""
    return default_root() / "mnist"


def _find_file(directory: Path, name: str) -> Path | None:
    """Return the raw or gzipped copy of ``name`` in ``directory``, preferring the raw one."""
    for candidate in (directory / name, directory / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    return None


def _find_all(directory: Path) -> dict[str, Path] | None:
    """Return all four files in ``directory``, or None unless every one is present."""
    found = {}
    for name in MD5:
        file = _find_file(directory, name)
        if file is None:
            return None
        found[name] = file
    return found


def _search_places() -> list[tuple[str, Path | None]]:
    """The directories to search, in order, each with a label used in error messages."""
    places: list[tuple[str, Path | None]] = []
    env = os.environ.get("BRAZE_DATA")
    if env:
        places.append(("$BRAZE_DATA", Path(env).expanduser()))
        places.append(("$BRAZE_DATA/mnist", Path(env).expanduser() / "mnist"))
    else:
        places.append(("$BRAZE_DATA (not set)", None))
    places.append(("repository data/mnist", REPO_DIR))
    places.append(("download cache", cache_dir()))
    return places


def _download(url: str, dest: Path) -> None:
    """Stream ``url`` into ``dest``; a module-level function so tests can replace it."""
    with (
        urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response,
        open(dest, "wb") as out,
    ):
        shutil.copyfileobj(response, out)


def _md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def _fetch_one(name: str, directory: Path) -> Path:
    """Download ``name`` into ``directory`` from the first mirror that serves a good copy.

    The file is written to a temporary name and checked before ``os.replace`` moves it
    into place, so an interrupted or corrupt download never looks like a valid file.
    Raises OSError (URLError is one) carrying every mirror's failure when all fail.
    """
    failures = []
    for mirror in MIRRORS:
        url = f"{mirror}{name}.gz"
        # Hidden, and ending in .gz so read_bytes decompresses it for the MD5 check.
        fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", suffix=".part.gz", dir=directory)
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            _download(url, tmp)
            actual = _md5(read_bytes(tmp))
            if actual != MD5[name]:
                failures.append(f"{url}: MD5 {actual} != expected {MD5[name]}")
                continue
            final = directory / f"{name}.gz"
            os.replace(tmp, final)
            return final
        except (OSError, DataError) as e:
            failures.append(f"{url}: {e}")
        finally:
            tmp.unlink(missing_ok=True)
    raise OSError("; ".join(failures))


def _not_found_error(places: list[tuple[str, Path | None]], reason: str) -> DataError:
    lines = ["MNIST not found. Looked for " + ", ".join(f"{n}[.gz]" for n in MD5) + " in, in order:"]
    for label, directory in places:
        if directory is None:
            lines.append(f"  - {label}")
            continue
        missing = [n for n in MD5 if _find_file(directory, n) is None]
        state = "does not exist" if not directory.is_dir() else f"missing {', '.join(missing)}"
        lines.append(f"  - {directory} ({label}): {state}")
    lines.append(f"Downloading into {cache_dir()} failed: {reason}")
    lines.append(
        "Supply the files by copying the four IDX files (gzipped or raw) into a directory "
        "and setting BRAZE_DATA=/that/directory, or pass load_mnist(path=...)."
    )
    return DataError("\n".join(lines))


def _in_named_directory(path: str | os.PathLike) -> dict[str, Path]:
    """The four files in the directory the caller named; never another source."""
    directory = Path(path).expanduser()
    if not directory.is_dir():
        raise DataError(f"MNIST directory {directory} does not exist or is not a directory")
    missing = [name for name in MD5 if _find_file(directory, name) is None]
    if missing:
        raise DataError(f"MNIST directory {directory} is missing {', '.join(f'{n}[.gz]' for n in missing)}")
    return {name: _find_file(directory, name) for name in MD5}


def _locate(path: str | os.PathLike | None) -> dict[str, Path]:
    """Find a directory holding all four files, downloading into the cache as a last resort."""
    if path is not None:
        return _in_named_directory(path)
    places = _search_places()
    for _, directory in places:
        if directory is not None and (found := _find_all(directory)) is not None:
            return found
    target = cache_dir()
    try:
        target.mkdir(parents=True, exist_ok=True)
        return {name: _find_file(target, name) or _fetch_one(name, target) for name in MD5}
    except OSError as e:
        raise _not_found_error(places, str(e)) from e


def _load(file: Path, verify: bool) -> np.ndarray:
    data = read_bytes(file)
    if verify:
        name = file.name.removesuffix(".gz")
        actual = _md5(data)
        if actual != MD5[name]:
            raise DataError(f"{file}: MD5 mismatch (of the uncompressed content): expected {MD5[name]}, got {actual}")
    return parse_idx(data, file)


def _check_pair(images: np.ndarray, labels: np.ndarray, files: tuple[Path, Path]) -> None:
    """Reject arrays that parse as IDX but cannot be an MNIST split."""
    image_file, label_file = files
    if images.ndim != 3 or images.dtype != np.uint8:
        raise DataError(f"{image_file}: expected uint8 images of shape [N, H, W], got {images.dtype} {images.shape}")
    if labels.ndim != 1:
        raise DataError(f"{label_file}: expected labels of shape [N], got {labels.shape}")
    if labels.shape[0] != images.shape[0]:
        raise DataError(
            f"{label_file}: label count {labels.shape[0]} does not match the image count "
            f"{images.shape[0]} in {image_file}"
        )


def load_mnist(path: str | os.PathLike | None = None, verify: bool = True) -> MNIST:
    """Load MNIST from the directory ``path``, or when it is None search ``$BRAZE_DATA``
    (and its ``mnist/``), the repository's ``data/mnist/`` and :func:`cache_dir`.

    A named ``path`` must hold all four IDX files (each raw or ``.gz``): it is never
    silently replaced by another source. Otherwise the first directory searched holding
    all four wins; if none does, the files are downloaded into the cache. ``verify`` checks each file's MD5
    against the canonical value; turn it off only for hand-made test files.
    Raises :class:`DataError` when the files cannot be found, fetched or validated.
    """
    files = _locate(path)
    arrays = {name: _load(file, verify) for name, file in files.items()}
    for images, labels in ((TRAIN_IMAGES, TRAIN_LABELS), (TEST_IMAGES, TEST_LABELS)):
        _check_pair(arrays[images], arrays[labels], (files[images], files[labels]))
    return MNIST(
        train_images=arrays[TRAIN_IMAGES],
        train_labels=arrays[TRAIN_LABELS].astype(np.int32),
        test_images=arrays[TEST_IMAGES],
        test_labels=arrays[TEST_LABELS].astype(np.int32),
    )


def load_data(path: str = "mnist.npz") -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """``keras.datasets.mnist.load_data()``: ``((x_train, y_train), (x_test, y_test))``,
    uint8 images of shape (N, 28, 28) and uint8 labels, as Keras returns them, from the
    files :func:`load_mnist` finds. Keras's ``path`` names its cache file; braze reads the
    IDX files, so only Keras's default is accepted (name a directory with ``load_mnist``)."""
    if path != "mnist.npz":
        raise DataError(
            f"mnist.load_data(path={path!r}): braze reads MNIST's IDX files, not Keras's npz cache; "
            "use braze.data.load_mnist(directory) for a directory of your own"
        )
    data = load_mnist()
    return (
        (data.train_images, data.train_labels.astype(np.uint8)),
        (data.test_images, data.test_labels.astype(np.uint8)),
    )
