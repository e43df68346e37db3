"""A generated two-class image folder, standing in for a small real photo dataset.

The XLA article trains a small CNN on 840 training and 188 validation photos in two
classes. Tests and examples need something of the same shape that exists offline and
takes seconds to create: "blobs" (bright ellipses) versus "stripes" (bars at a random
angle), both on noisy backgrounds with random colours, so a model has to learn shape
rather than overall brightness or colour.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from braze.data.errors import DataError

CLASS_NAMES = ("blobs", "stripes")


def _background(rng: np.random.Generator, yy: np.ndarray, xx: np.ndarray) -> np.ndarray:
    """A random dark colour with a linear gradient, float32 ``[H, W, 3]``."""
    h, w = yy.shape
    base = rng.uniform(0, 110, size=3)
    tilt = rng.uniform(-40, 40, size=(2, 3))
    gradient = (yy / h - 0.5)[..., None] * tilt[0] + (xx / w - 0.5)[..., None] * tilt[1]
    return (base + gradient).astype(np.float32)


def _blobs(rng: np.random.Generator, yy: np.ndarray, xx: np.ndarray) -> np.ndarray:
    """One or two soft-edged bright ellipses at random positions, sizes and angles."""
    img = _background(rng, yy, xx)
    h, w = yy.shape
    for _ in range(rng.integers(1, 3)):
        cy, cx = rng.uniform(0.15, 0.85) * h, rng.uniform(0.15, 0.85) * w
        ry, rx = rng.uniform(0.08, 0.25, size=2) * min(h, w)
        angle = rng.uniform(0, np.pi)
        dy, dx = yy - cy, xx - cx
        u = dx * np.cos(angle) + dy * np.sin(angle)
        v = dy * np.cos(angle) - dx * np.sin(angle)
        alpha = np.clip((1 - (u / rx) ** 2 - (v / ry) ** 2) * 4, 0, 1)[..., None]
        colour = rng.uniform(140, 255, size=3)
        img = img * (1 - alpha) + colour * alpha
    return img


def _stripes(rng: np.random.Generator, yy: np.ndarray, xx: np.ndarray) -> np.ndarray:
    """Parallel bars at a random angle, period, duty cycle, colour, contrast and extent."""
    img = _background(rng, yy, xx)
    angle = rng.uniform(0, np.pi)
    period = rng.uniform(0.08, 0.3) * min(yy.shape)
    phase = ((xx * np.cos(angle) + yy * np.sin(angle)) / period + rng.uniform()) % 1.0
    h, w = yy.shape
    top, left = rng.uniform(0, 0.5) * h, rng.uniform(0, 0.5) * w
    bottom, right = top + rng.uniform(0.4, 1.0) * h, left + rng.uniform(0.4, 1.0) * w
    # Bars fill a random window, so the bright area is not a giveaway against blobs.
    window = (yy >= top) & (yy < bottom) & (xx >= left) & (xx < right)
    bars = ((phase < rng.uniform(0.25, 0.6)) & window)[..., None]
    colour = rng.uniform(140, 255, size=3)
    contrast = rng.uniform(0.4, 1.0)
    return np.where(bars, img * (1 - contrast) + colour * contrast, img)


def _class_counts(n: int) -> dict[str, int]:
    """Split ``n`` evenly between the classes; the first gets the odd one out."""
    return {CLASS_NAMES[0]: n - n // 2, CLASS_NAMES[1]: n // 2}


def _is_complete(split_dir: Path, counts: dict[str, int]) -> bool:
    return all(
        (split_dir / name).is_dir() and len(list((split_dir / name).glob("*.png"))) == count
        for name, count in counts.items()
    )


def _write_split(split_dir: Path, n: int, size: tuple[int, int], rng: np.random.Generator) -> None:
    from PIL import Image

    counts = _class_counts(n)
    if _is_complete(split_dir, counts):
        return
    yy, xx = np.mgrid[0 : size[0], 0 : size[1]].astype(np.float32)
    draw = {CLASS_NAMES[0]: _blobs, CLASS_NAMES[1]: _stripes}
    for name, count in counts.items():
        class_dir = split_dir / name
        class_dir.mkdir(parents=True, exist_ok=True)
        for stale in class_dir.glob(f"{name}_*.png"):
            stale.unlink()
        for i in range(count):
            img = draw[name](rng, yy, xx)
            img += rng.standard_normal(img.shape, dtype=np.float32) * rng.uniform(4, 20)
            pixels = np.clip(img, 0, 255).astype(np.uint8)
            # Written under a name that is not *.png, then renamed: an interrupted run never
            # leaves a truncated image that _is_complete would count. Fast compression:
            # these files are regenerated cheaply, size matters little.
            final = class_dir / f"{name}_{i:04d}.png"
            partial = class_dir / f".{final.name}.part"
            try:
                Image.fromarray(pixels).save(partial, format="PNG", compress_level=1)
                os.replace(partial, final)
            finally:
                partial.unlink(missing_ok=True)


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
    A split whose class folders already hold the expected number of PNGs is left as it
    is (only the counts are checked), so calling this again is cheap.
    """
    if n_train < 2 or n_val < 2:
        raise DataError(f"need at least 2 images per split, got n_train={n_train}, n_val={n_val}")
    if min(size) < 1:
        raise DataError(f"size must be positive (height, width), got {size}")
    root = Path(root)
    train_seq, val_seq = np.random.SeedSequence(seed).spawn(2)
    train_dir, val_dir = root / "train", root / "validation"
    _write_split(train_dir, n_train, size, np.random.default_rng(train_seq))
    _write_split(val_dir, n_val, size, np.random.default_rng(val_seq))
    return train_dir, val_dir
