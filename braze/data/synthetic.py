"""A generated two-class image folder, standing in for a small real photo dataset.

The XLA article trains a small CNN for 50 epochs on 840 training and 188 validation photos
in two classes (African and Asian elephants). Tests and examples need a task of the same
shape that exists offline, takes seconds to create, and that a small CNN learns in such a
run, but not at once: one or two objects per image, of random shape (ellipse or rotated
rectangle), size, position and colours, on a cluttered background, covered in a texture
that is the only difference between the classes: spots ("blobs") or stripes ("stripes"),
at random scales and angles. Overall brightness, colour, object shape and position carry no
information, and LABEL_NOISE of each split is drawn as the other class (a real folder has
mislabelled photos too), so no model can be right on every image.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

import numpy as np

from braze.data.errors import DataError

CLASS_NAMES = ("blobs", "stripes")
LABEL_NOISE = 0.04
# Written beside a finished split: a folder made by another version of this generator (or
# with other parameters) is made again rather than reused.
_STAMP = ".two-class-folder"
_VERSION = 2


def _background(rng: np.random.Generator, yy: np.ndarray, xx: np.ndarray) -> np.ndarray:
    """A random colour with a linear gradient and a few soft patches of other colours."""
    h, w = yy.shape
    tilt = rng.uniform(-50, 50, size=(2, 3))
    img = rng.uniform(0, 255, size=3) + (yy / h - 0.5)[..., None] * tilt[0] + (xx / w - 0.5)[..., None] * tilt[1]
    for _ in range(rng.integers(1, 4)):
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        spread = rng.uniform(0.1, 0.3) * min(h, w)
        weight = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * spread**2))[..., None]
        img = img * (1 - weight) + rng.uniform(0, 255, size=3) * weight
    return img.astype(np.float32)


def _texture(kind: str, rng: np.random.Generator, yy: np.ndarray, xx: np.ndarray) -> np.ndarray:
    """Where the texture's second colour shows, in [0, 1]: spots on a lattice or stripes,
    at a random angle, period and phase, with soft edges."""
    period = rng.uniform(0.07, 0.14) * min(yy.shape)
    angle = rng.uniform(0, np.pi)
    u = (xx * np.cos(angle) + yy * np.sin(angle)) / period + rng.uniform()
    v = (yy * np.cos(angle) - xx * np.sin(angle)) / period + rng.uniform()
    if kind == "stripes":
        distance = np.abs((u % 1.0) - 0.5) * period  # from the middle of the nearest bar
        half_width = rng.uniform(0.15, 0.3) * period
    else:
        v_row = v + 0.5 * (np.floor(u) % 2)  # alternate rows shifted: a hexagonal-ish lattice
        distance = np.hypot((u % 1.0) - 0.5, (v_row % 1.0) - 0.5) * period
        half_width = rng.uniform(0.25, 0.4) * period
    return np.clip(half_width - distance + 0.5, 0, 1)


def _shape(rng: np.random.Generator, yy: np.ndarray, xx: np.ndarray) -> np.ndarray:
    """An object's coverage in [0, 1]: an ellipse or a rotated rectangle, soft-edged."""
    h, w = yy.shape
    size = min(h, w)
    cy, cx = rng.uniform(0.3, 0.7) * h, rng.uniform(0.3, 0.7) * w
    ry, rx = rng.uniform(0.25, 0.45, size=2) * size
    angle = rng.uniform(0, np.pi)
    u = (xx - cx) * np.cos(angle) + (yy - cy) * np.sin(angle)
    v = (yy - cy) * np.cos(angle) - (xx - cx) * np.sin(angle)
    ellipse = rng.uniform() < 0.5
    outside = np.hypot(u / rx, v / ry) if ellipse else np.maximum(np.abs(u) / rx, np.abs(v) / ry)
    return np.clip((1 - outside) * min(rx, ry) + 0.5, 0, 1)


def draw(kind: str, rng: np.random.Generator, yy: np.ndarray, xx: np.ndarray) -> np.ndarray:
    """One float ``[H, W, 3]`` image of class ``kind`` ("blobs" or "stripes"), before noise."""
    img = _background(rng, yy, xx)
    for _ in range(rng.integers(1, 3)):
        # Bright marks on a dark surface, in random colours: the marks' shape is the class.
        first, second = rng.uniform(0, 100, size=3), rng.uniform(155, 255, size=3)
        texture = _texture(kind, rng, yy, xx)[..., None]
        coverage = _shape(rng, yy, xx)[..., None]
        surface = first * (1 - texture) + second * texture
        img = img * (1 - coverage) + surface * coverage
    return img


def _class_counts(n: int) -> dict[str, int]:
    """Split ``n`` evenly between the classes; the first gets the odd one out."""
    return {CLASS_NAMES[0]: n - n // 2, CLASS_NAMES[1]: n // 2}


def _real_folder(path: Path) -> Path:
    """``path`` made if missing, and refused unless it is a folder itself (not a link to one,
    which could lead the images' writes elsewhere)."""
    path.mkdir(exist_ok=True)
    if not _is(path, stat.S_ISDIR):
        raise DataError(f"{path} is not a folder (a link?): not writing generated images through it")
    return path


def _is(path: Path, kind) -> bool:
    """Whether ``path`` itself (not what a link there points to) passes ``kind`` (S_ISREG, S_ISDIR)."""
    try:
        return kind(path.lstat().st_mode)
    except OSError:
        return False


def _read_stamp(path: Path) -> str | None:
    """The stamp's text, read without following a link; None when there is no such file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return handle.read(4096).decode(errors="replace")


def _create(path: Path) -> BinaryIO:
    """A new file at ``path`` for writing, never through a link found there."""
    path.unlink(missing_ok=True)  # a stale one of an interrupted run (unlink never follows a link)
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644), "wb")


def _is_complete(split_dir: Path, counts: dict[str, int], stamp: str) -> bool:
    return _read_stamp(split_dir / _STAMP) == stamp and all(
        _is(split_dir / name, stat.S_ISDIR)
        and sum(_is(f, stat.S_ISREG) for f in (split_dir / name).glob("*.png")) == count
        for name, count in counts.items()
    )


def _write_split(split_dir: Path, n: int, size: tuple[int, int], rng: np.random.Generator, stamp: str) -> None:
    from PIL import Image

    counts = _class_counts(n)
    _real_folder(split_dir)
    if _is_complete(split_dir, counts, stamp):
        return
    (split_dir / _STAMP).unlink(missing_ok=True)
    yy, xx = np.mgrid[0 : size[0], 0 : size[1]].astype(np.float32)
    for name, count in counts.items():
        class_dir = _real_folder(split_dir / name)
        for stale in class_dir.glob(f"{name}_*.png"):
            stale.unlink()
        for i in range(count):
            other = CLASS_NAMES[1 - CLASS_NAMES.index(name)]
            img = draw(other if rng.uniform() < LABEL_NOISE else name, rng, yy, xx)
            img += rng.standard_normal(img.shape, dtype=np.float32) * rng.uniform(4, 20)
            pixels = np.clip(img, 0, 255).astype(np.uint8)
            # Written under a name that is not *.png, then renamed: an interrupted run never
            # leaves a truncated image that _is_complete would count. Fast compression:
            # these files are regenerated cheaply, size matters little.
            final = class_dir / f"{name}_{i:04d}.png"
            partial = class_dir / f".{final.name}.part"
            try:
                with _create(partial) as handle:
                    Image.fromarray(pixels).save(handle, format="PNG", compress_level=1)
                os.replace(partial, final)
            finally:
                partial.unlink(missing_ok=True)
    partial = split_dir / f".{_STAMP}.part"
    with _create(partial) as handle:
        handle.write(stamp.encode())
    os.replace(partial, split_dir / _STAMP)


def make_two_class_folder(
    root: str | os.PathLike,
    n_train: int = 840,
    n_val: int = 188,
    size: tuple[int, int] = (150, 150),
    seed: int = 0,
) -> tuple[Path, Path]:
    """Write ``root/train/{blobs,stripes}/*.png`` and ``root/validation/...``; return both.

    ``n_train`` and ``n_val`` are totals per split, halved between the two classes;
    ``size`` is ``(height, width)``. The output is deterministic for a given ``seed``.
    A split made before by this version of the generator with the same arguments, whose
    class folders still hold the expected number of PNGs, is left as it is (only the counts
    are checked), so calling this again is cheap. Folders and files are made without
    following links: a link in their place is an error, never written through.
    """
    if n_train < 2 or n_val < 2:
        raise DataError(f"need at least 2 images per split, got n_train={n_train}, n_val={n_val}")
    if min(size) < 1:
        raise DataError(f"size must be positive (height, width), got {size}")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    train_seq, val_seq = np.random.SeedSequence(seed).spawn(2)
    train_dir, val_dir = root / "train", root / "validation"
    stamp = f"version {_VERSION}, size {size[0]}x{size[1]}, seed {seed}, images {{}}\n"
    _write_split(train_dir, n_train, size, np.random.default_rng(train_seq), stamp.format(n_train))
    _write_split(val_dir, n_val, size, np.random.default_rng(val_seq), stamp.format(n_val))
    return train_dir, val_dir
