"""Keras's ``image_dataset_from_directory``: a folder with one sub-folder of images per class
as a ``tf.data.Dataset`` of batches, the images resized as TensorFlow resizes them.

As in Keras: the classes are the sub-folders in sorted order (or ``class_names``); the
files are listed per class in sorted order, then shuffled with ``seed``; a
``validation_split`` keeps the last fraction for ``subset="validation"`` (``"both"``
returns both datasets, which share one shuffled order, so they never overlap); each epoch
draws batches from a buffer of eight batches. Images are decoded with Pillow and resized
with ``tf.image.resize``'s arithmetic (half-pixel centres, no antialiasing), as float32
in 0..255.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from braze.data.dataset import Dataset
from braze.data.errors import DataError
from braze.data.image_folder import COLOR_MODES, IMAGE_EXTENSIONS, _list_images, img_to_array, load_img
from braze.ops.creation import tensor
from braze.ops.image import resize_to
from braze.runtime.device import CPU

LABEL_MODES = ("int", "categorical", "binary", None)
SUBSETS = ("training", "validation", "both")


def image_dataset_from_directory(
    directory: str | os.PathLike,
    labels: Any = "inferred",
    label_mode: str | None = "int",
    class_names: Sequence[str] | None = None,
    color_mode: str = "rgb",
    batch_size: int | None = 32,
    image_size: tuple[int, int] = (256, 256),
    shuffle: bool = True,
    seed: int | None = None,
    validation_split: float | None = None,
    subset: str | None = None,
    interpolation: str = "bilinear",
    follow_links: bool = False,
    crop_to_aspect_ratio: bool = False,
    pad_to_aspect_ratio: bool = False,
    data_format: str | None = None,
    verbose: bool = True,
) -> Dataset | tuple[Dataset, Dataset]:
    """The images under ``directory`` as batches ``(images, labels)`` (``images`` alone
    with ``label_mode=None``); ``labels``: ``"inferred"`` from the sub-folders, or None."""
    if pad_to_aspect_ratio or data_format not in (None, "channels_last"):
        raise NotImplementedError(
            "image_dataset_from_directory: pad_to_aspect_ratio and channels_first are not supported"
        )
    if labels not in ("inferred", None):
        raise NotImplementedError(
            "image_dataset_from_directory: labels must be 'inferred' or None (a list is not supported)"
        )
    if label_mode not in LABEL_MODES or color_mode not in COLOR_MODES or interpolation not in ("bilinear", "nearest"):
        raise ValueError(
            f"image_dataset_from_directory: label_mode {label_mode!r} (one of {LABEL_MODES}), color_mode "
            f"{color_mode!r} (one of {tuple(COLOR_MODES)}) or interpolation {interpolation!r} (bilinear, nearest)"
        )
    _check_split(validation_split, subset, shuffle, seed)
    root = Path(directory)
    if not root.is_dir():
        raise DataError(f"image_dataset_from_directory: {root} is not a directory")
    found = sorted(p.name for p in root.iterdir() if p.is_dir() and (follow_links or not p.is_symlink()))
    names = list(class_names) if class_names is not None else found
    if class_names is not None and sorted(class_names) != found:
        raise ValueError(
            f"image_dataset_from_directory: class_names {list(class_names)} are not the sub-folders {found}"
        )
    if labels is None:
        files = [p for p in sorted(root.rglob("*")) if p.suffix.lower() in IMAGE_EXTENSIONS and p.is_file()]
        classes = np.zeros(len(files), np.int64)
    else:
        per_class = [_list_images(root / name) for name in names]
        files = [path for paths in per_class for path in paths]
        classes = np.concatenate([np.full(len(paths), k, np.int64) for k, paths in enumerate(per_class)] or [[]])
    if not files:
        raise DataError(f"image_dataset_from_directory: no images ({', '.join(IMAGE_EXTENSIONS)}) under {root}")
    if label_mode == "binary" and len(names) != 2:
        raise ValueError(f"image_dataset_from_directory: label_mode 'binary' needs 2 classes, found {len(names)}")
    if shuffle:
        seed = np.random.randint(1_000_000) if seed is None else seed
        order = np.random.RandomState(seed).permutation(len(files))
        files, classes = [files[i] for i in order], classes[order]
    say = print if verbose else (lambda *_: None)
    say(f"Found {len(files)} files belonging to {len(names)} classes.")
    settings = _Settings(
        label_mode if labels is not None else None,
        len(names),
        color_mode,
        (int(image_size[0]), int(image_size[1])),
        interpolation,
        crop_to_aspect_ratio,
        batch_size,
        shuffle,
        seed,
    )
    if validation_split:
        cut = len(files) - int(validation_split * len(files))
        parts = {"training": (files[:cut], classes[:cut]), "validation": (files[cut:], classes[cut:])}
        for part, (paths, _) in parts.items():
            say(f"Using {len(paths)} files for {part}.")
        if subset == "both":
            return tuple(settings.dataset(*parts[part], names) for part in ("training", "validation"))
        return settings.dataset(*parts[subset], names)
    return settings.dataset(files, classes, names)


def _check_split(validation_split: float | None, subset: str | None, shuffle: bool, seed: int | None) -> None:
    if validation_split and not 0 < validation_split < 1:
        raise ValueError(f"image_dataset_from_directory: validation_split must be in (0, 1), got {validation_split}")
    if bool(validation_split) != (subset is not None) or (subset is not None and subset not in SUBSETS):
        raise ValueError(
            "image_dataset_from_directory: give validation_split with subset 'training', 'validation' or 'both' "
            f"(got validation_split={validation_split!r}, subset={subset!r})"
        )
    if validation_split and shuffle and seed is None:
        raise ValueError("image_dataset_from_directory: a validation_split of shuffled files needs a seed")


@dataclass(frozen=True)
class _Settings:
    """How files become batches, shared by the training and validation datasets."""

    label_mode: str | None
    classes: int
    color_mode: str
    image_size: tuple[int, int]
    interpolation: str
    crop: bool
    batch_size: int | None
    shuffle: bool
    seed: int | None

    def image(self, path: Path) -> np.ndarray:
        pixels = img_to_array(load_img(path, self.color_mode))
        resized = resize_to(tensor(pixels[None], device=CPU), *self.image_size, self.interpolation, self.crop)
        return resized.numpy()[0]

    def label(self, k: int) -> np.ndarray:
        if self.label_mode == "categorical":
            return np.eye(self.classes, dtype=np.float32)[k]
        if self.label_mode == "binary":
            return np.array([k], np.float32)
        return np.int32(k)

    def dataset(self, files: list[Path], classes: np.ndarray, names: list[str]) -> Dataset:
        def generate() -> Iterator[Any]:
            for path, k in zip(files, classes, strict=True):
                yield self.image(path) if self.label_mode is None else (self.image(path), self.label(int(k)))

        data = Dataset(generate, len(files))
        if self.shuffle and self.batch_size:
            data = data.shuffle(self.batch_size * 8, seed=self.seed)
        if self.batch_size:
            data = data.batch(self.batch_size)
        data.class_names = names
        data.file_paths = [str(p) for p in files]
        return data
