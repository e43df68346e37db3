"""Keras's ``image_dataset_from_directory``: a folder with one sub-folder of images per class
as a ``tf.data.Dataset`` of batches (see :mod:`braze.data.directory_dataset`), the images
resized as TensorFlow resizes them: decoded with Pillow and resized with
``tf.image.resize``'s arithmetic (half-pixel centres, no antialiasing), as float32 in 0..255.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import numpy as np

from braze.data.dataset import Dataset
from braze.data.directory_dataset import Source, from_directory
from braze.data.image_folder import COLOR_MODES, IMAGE_EXTENSIONS, img_to_array, load_img
from braze.ops.creation import tensor
from braze.ops.image import resize_to
from braze.runtime.device import CPU


def image_dataset_from_directory(
    directory: str | os.PathLike,
    labels: Any = "inferred",
    label_mode: str | None = "int",
    class_names: Any = None,
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
    arguments = dict(locals())
    if pad_to_aspect_ratio or data_format not in (None, "channels_last"):
        raise NotImplementedError(
            "image_dataset_from_directory: pad_to_aspect_ratio and channels_first are not supported"
        )
    if color_mode not in COLOR_MODES or interpolation not in ("bilinear", "nearest"):
        raise ValueError(
            f"image_dataset_from_directory: color_mode {color_mode!r} (one of {tuple(COLOR_MODES)}) or "
            f"interpolation {interpolation!r} (bilinear, nearest)"
        )
    size = (int(image_size[0]), int(image_size[1]))
    load = functools.partial(_image, color_mode, size, interpolation, crop_to_aspect_ratio)
    return from_directory(Source.of("image_dataset_from_directory", IMAGE_EXTENSIONS, load, arguments))


def _image(color_mode: str, size: tuple[int, int], interpolation: str, crop: bool, path: Path) -> np.ndarray:
    pixels = img_to_array(load_img(path, color_mode))
    return resize_to(tensor(pixels[None], device=CPU), *size, interpolation, crop).numpy()[0]
