"""A directory of class sub-folders as batches of images, like Keras ``flow_from_directory``.

Keras tutorials (and the XLA article this framework follows) train from a folder with
one sub-folder per class; this class reproduces those semantics (alphabetical class
indices, label encodings, batches per epoch) so the same directory and settings give
the same data. Images are decoded with Pillow, which is imported only when an image
is decoded, so ``import braze.data`` works without it.
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from braze.data.augment import Augment, apply_transform
from braze.data.errors import DataError
from braze.data.loader import shard_position

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".gif")
CLASS_MODES = ("binary", "categorical", "sparse")
# color_mode -> (Pillow mode, channels)
COLOR_MODES = {"rgb": ("RGB", 3), "grayscale": ("L", 1)}
INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "lanczos", "box", "hamming")


def _check_options(color_mode: str, interpolation: str) -> None:
    if color_mode not in COLOR_MODES:
        raise DataError(f"color_mode must be one of {tuple(COLOR_MODES)}, got {color_mode!r}")
    if interpolation not in INTERPOLATIONS:
        raise DataError(f"interpolation must be one of {INTERPOLATIONS}, got {interpolation!r}")


def load_img(
    path: str | os.PathLike,
    color_mode: str = "rgb",
    target_size: tuple[int, int] | None = None,
    interpolation: str = "nearest",
) -> Any:
    """Keras's ``load_img``: the image at ``path`` as a Pillow image in ``color_mode``, resized
    to ``target_size = (height, width)`` if given. A file that does not decode is a
    :class:`DataError` naming it."""
    from PIL import Image, UnidentifiedImageError

    _check_options(color_mode, interpolation)
    path = Path(path)
    try:
        with _open_regular(path) as handle, Image.open(handle) as img:
            _check_pixels(path, img.size, Image.MAX_IMAGE_PIXELS)
            img = img.convert(COLOR_MODES[color_mode][0])  # a loaded copy, independent of the file
            # Pillow sizes are (width, height); target_size is (height, width).
            if target_size is not None and img.size != (target_size[1], target_size[0]):
                resample = Image.Resampling[interpolation.upper()]
                img = img.resize((target_size[1], target_size[0]), resample)
            return img
    except DataError:
        raise
    except UnidentifiedImageError:
        what = "empty file" if path.stat().st_size == 0 else "unknown image format or wrong magic bytes"
        raise DataError(f"{path}: image does not decode ({what})") from None
    except FileNotFoundError:
        raise DataError(f"{path}: no such image file") from None
    # Pillow's decoders report truncated or corrupt data with any of these.
    except (OSError, SyntaxError, ValueError, EOFError, struct.error, Image.DecompressionBombError) as e:
        raise DataError(f"{path}: image does not decode ({e})") from e


def _open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading when it is a regular file (a FIFO or a device named like
    an image would block the loader, or never end)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise DataError(f"{path}: not a regular file")
    return os.fdopen(fd, "rb")


def _check_pixels(path: Path, size: tuple[int, int], limit: int | None) -> None:
    """Refuse, before it is decoded, an image bigger than Pillow's limit for one image, which
    Pillow only warns about below twice that (a small file can decode to gigabytes)."""
    if limit is not None and size[0] * size[1] > limit:
        raise DataError(
            f"{path}: {size[0]}x{size[1]} pixels, more than Pillow's limit of {limit:,} for one image "
            "(a decompression bomb?); raise PIL.Image.MAX_IMAGE_PIXELS to load it anyway"
        )


def list_files(class_dir: Path, extensions: tuple[str, ...] = IMAGE_EXTENSIONS) -> list[Path]:
    """Files with one of ``extensions`` under ``class_dir`` (recursively), in a stable sorted
    order like Keras; such a name that is not a regular file is a :class:`DataError`."""
    found = []
    for root, _, files in sorted(os.walk(class_dir), key=lambda entry: entry[0]):
        found.extend(Path(root) / f for f in sorted(files) if f.lower().endswith(extensions))
    for path in found:
        try:
            regular = stat.S_ISREG(path.stat().st_mode)
        except OSError as error:
            raise DataError(f"{path}: cannot read ({error.strerror or error})") from None
        if not regular:
            raise DataError(f"{path}: not a regular file")
    return found


def img_to_array(image: Any) -> np.ndarray:
    """Keras's ``img_to_array``: a Pillow image as float32 ``[H, W, C]`` (C = 1 for grayscale)."""
    array = np.asarray(image, dtype=np.float32)
    return array[..., None] if array.ndim == 2 else array


def array_to_img(x: Any, scale: bool = True) -> Any:
    """Keras's ``array_to_img``: an ``[H, W, C]`` array (C = 1 or 3) as a Pillow image; with
    ``scale`` its values are stretched to 0..255 first."""
    from PIL import Image

    array = np.asarray(x.numpy() if hasattr(x, "numpy") else x, dtype=np.float64)
    if scale:
        low, high = array.min(), array.max()
        array = (array - low) / (high - low if high > low else 1.0) * 255.0
    pixels = np.clip(array, 0, 255).astype(np.uint8)
    return Image.fromarray(pixels[..., 0] if pixels.shape[-1] == 1 else pixels)


def save_img(
    path: Any, x: Any, data_format: str | None = None, file_format: str | None = None, scale: bool = True, **kwargs: Any
) -> None:
    """Keras's ``save_img``: an ``[H, W, C]`` array written as an image file (PNG, JPEG...,
    by ``file_format`` or the name's extension), through ``array_to_img``."""
    if data_format not in (None, "channels_last"):
        raise NotImplementedError("save_img: channels_last arrays only")
    array_to_img(x, scale=scale).save(path, format=file_format, **kwargs)


class ImageFolder:
    """Iterate over ``directory/<class>/<image>`` files as ``(images, labels)`` batches.

    Each ``for`` loop is one epoch of ``len(self)`` batches (the last may be smaller);
    with ``shuffle`` every epoch uses a new permutation from a generator seeded by
    ``seed``, so runs are reproducible. Images are ``dtype`` (float32 unless told, as
    Keras's ``ImageDataGenerator(dtype=...)``) ``[B, H, W, C]`` (NHWC) with ``target_size
    = (H, W)``, in 0..255 unless ``rescale`` multiplies them (e.g. 1/255). Labels:
    ``binary`` ``dtype`` ``[B]`` of 0/1, ``categorical`` ``dtype`` one-hot
    ``[B, n_classes]``, ``sparse`` int32 ``[B]``. With ``cache`` each image is decoded
    and resized once and kept in memory as uint8, so later epochs skip the decoding.
    Images are resized with ``interpolation`` (bilinear here; Keras's default is nearest).

    ``shard=True`` (data-parallel training, after ``braze.distributed.init()``): the job's
    batches are those of one process with ``batch_size`` x N images, and rank r of N takes
    their rows r, r + N, r + 2N, ..., augmented as one process would augment them (every
    rank draws every row's transform from ``augment``'s generator and applies its own), so
    ``seed`` and ``augment``'s seed must be the same on every rank. Each image is in one
    rank's share, counted once when the ranks' statistics are summed. ``samples`` is still
    the folder's number of images; ``len()`` counts this rank's batches: those in which it
    has rows, so the last ranks have one batch fewer when the last batch has fewer rows
    than ranks. A last, partial batch is split unevenly, so a training step on it is not
    one process's: train data-parallel on whole batches (``samples // (batch_size * N)``
    steps per epoch), which every rank has.
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        target_size: tuple[int, int] = (150, 150),
        class_mode: str = "binary",
        batch_size: int = 32,
        shuffle: bool = True,
        seed: int | None = None,
        augment: Augment | None = None,
        rescale: float | None = None,
        color_mode: str = "rgb",
        cache: bool = True,
        interpolation: str = "bilinear",
        shard: bool = False,
        dtype: str | np.dtype = "float32",
    ) -> None:
        if class_mode not in CLASS_MODES:
            raise DataError(f"class_mode must be one of {CLASS_MODES}, got {class_mode!r}")
        _check_options(color_mode, interpolation)
        if batch_size < 1:
            raise DataError(f"batch_size must be >= 1, got {batch_size}")
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise DataError(f"image folder {self.directory} does not exist or is not a directory")
        class_names = sorted(d.name for d in self.directory.iterdir() if d.is_dir())
        if not class_names:
            raise DataError(
                f"empty image folder: {self.directory} has no class sub-folders "
                "(expected one sub-folder of images per class)"
            )
        if class_mode == "binary" and len(class_names) != 2:
            raise DataError(
                f"class_mode 'binary' needs exactly 2 class sub-folders in {self.directory}, "
                f"found {len(class_names)}: {class_names}"
            )
        self.class_indices = {name: i for i, name in enumerate(class_names)}
        files = [(f, i) for name, i in self.class_indices.items() for f in list_files(self.directory / name)]
        if not files:
            raise DataError(
                f"empty image folder: no images with extensions {', '.join(IMAGE_EXTENSIONS)} "
                f"(any case) in the class sub-folders {class_names} of {self.directory}"
            )
        self.filenames = [str(f.relative_to(self.directory)) for f, _ in files]
        self.classes = np.array([i for _, i in files], dtype=np.int32)
        self.samples = len(files)
        self.target_size = (int(target_size[0]), int(target_size[1]))
        self.image_shape = (*self.target_size, COLOR_MODES[color_mode][1])
        self.class_mode = class_mode
        self.color_mode = color_mode
        self.interpolation = interpolation
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.augment = augment
        self.rescale = rescale
        self.dtype = np.dtype(dtype)
        if self.dtype.kind != "f":
            raise DataError(f"dtype must be a float dtype, got {self.dtype.name}")
        if shard and shuffle and seed is None:
            raise DataError("shard=True with shuffle=True needs a seed, the same on every rank")
        self.rank, self.ranks = shard_position() if shard else (0, 1)
        self._rng = np.random.default_rng(seed)
        self._cache: dict[int, np.ndarray] | None = {} if cache else None

    def __len__(self) -> int:
        """Batches per epoch (on this rank, when sharded), counting a final partial batch
        (as Keras does) when it has rows for this rank."""
        job_batch = self.batch_size * self.ranks
        whole, rest = divmod(self.samples, job_batch)
        return whole + (rest > self.rank)

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        order = self._rng.permutation(self.samples) if self.shuffle else np.arange(self.samples)
        job_batch = self.batch_size * self.ranks
        for start in range(0, self.samples, job_batch):
            # Made even when it has no rows for this rank, to draw its rows' transforms.
            images, labels = self._batch(order[start : start + job_batch])
            if len(labels):
                yield images, labels

    def _decode(self, index: int) -> np.ndarray:
        """Read, convert and resize one image to uint8 ``[H, W, C]``."""
        image = load_img(self.directory / self.filenames[index], self.color_mode, self.target_size, self.interpolation)
        return np.asarray(image, dtype=np.uint8).reshape(self.image_shape)

    def _image(self, index: int) -> np.ndarray:
        if self._cache is None:
            return self._decode(index)
        if index not in self._cache:
            self._cache[index] = self._decode(index)
        return self._cache[index]

    def _batch(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """This rank's share of the job's batch of images ``rows``, decoded and augmented."""
        mine = rows[self.rank :: self.ranks]
        images = np.empty((len(mine), *self.image_shape), dtype=self.dtype)
        for position, index in enumerate(rows):
            # Every row's transform is drawn, so each rank's generator stays in step with one process's.
            transform = self.augment.random_params() if self.augment is not None else None
            if position % self.ranks != self.rank:
                continue
            image = self._image(int(index))
            images[position // self.ranks] = image if transform is None else apply_transform(image, **transform)
        if self.rescale is not None:
            images *= self.dtype.type(self.rescale)
        return images, self._encode(self.classes[mine])

    def _encode(self, labels: np.ndarray) -> np.ndarray:
        if self.class_mode == "binary":
            return labels.astype(self.dtype)
        if self.class_mode == "categorical":
            return np.eye(len(self.class_indices), dtype=self.dtype)[labels]
        return labels.astype(np.int32)
