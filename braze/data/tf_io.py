"""``tf.io``: a file's bytes and the images they hold, for a ``tf.data`` map.

They run eagerly, as a map's functions do here. A file's contents are ``bytes`` (where
TensorFlow has a string tensor), and a decoded image is a NumPy ``uint8`` array of
(height, width, channels) (braze tensors hold no uint8), which
``tf.image.convert_image_dtype`` scales to floats in [0, 1] as TensorFlow does. Images
decode with Pillow, within its limit on an image's pixels.
"""

from __future__ import annotations

import io
import os
from typing import Any

import numpy as np

from braze.data.errors import DataError
from braze.data.image_folder import _check_pixels, _open_regular

__all__ = ["decode_image", "decode_jpeg", "decode_png", "read_file"]

_MODES = {1: "L", 3: "RGB", 4: "RGBA"}


def _name(value: Any) -> str:
    value = value.item() if isinstance(value, np.ndarray) else value
    return os.fsdecode(value) if isinstance(value, (bytes, np.bytes_)) else os.fspath(str(value))


def read_file(filename: Any, name: str | None = None) -> bytes:
    """The bytes of the file ``filename`` (a str, bytes, or a 0-d array of either):
    ``tf.io.read_file``."""
    path = _name(filename)
    try:
        with _open_regular(path) as handle:
            return handle.read()
    except FileNotFoundError:
        raise DataError(f"tf.io.read_file: {path}: no such file") from None


def decode_image(
    contents: Any,
    channels: int | None = None,
    dtype: Any = "uint8",
    name: str | None = None,
    expand_animations: bool = True,
) -> np.ndarray:
    """The image (PNG, JPEG, GIF, BMP...) whose file bytes are ``contents`` as a ``uint8``
    array of (height, width, channels): ``channels`` 1, 3 or 4, or the image's own (0 or
    None); ``tf.io.decode_image``. The first frame of an animation."""
    from PIL import Image, UnidentifiedImageError

    if str(dtype) != "uint8":
        raise NotImplementedError("tf.io.decode_image: dtype uint8 only; convert with tf.image.convert_image_dtype")
    if channels not in (None, 0, 1, 3, 4):
        raise ValueError(f"tf.io.decode_image: channels must be 0, 1, 3 or 4, got {channels}")
    data = contents.item() if isinstance(contents, np.ndarray) else contents
    try:
        with Image.open(io.BytesIO(bytes(data))) as img:
            _check_pixels("tf.io.decode_image", img.size, Image.MAX_IMAGE_PIXELS)
            if channels:
                image = img.convert(_MODES[channels])
            elif img.mode in ("L", "RGB", "RGBA"):
                image = img
            else:  # the image's own channels: palettes and bit maps as colours (with alpha where they have it)
                image = img.convert("RGBA" if "A" in img.getbands() or "transparency" in img.info else "RGB")
            pixels = np.asarray(image, dtype=np.uint8)
    except UnidentifiedImageError:
        raise DataError("tf.io.decode_image: the bytes are no image Pillow reads") from None
    return pixels[..., None] if pixels.ndim == 2 else pixels


def decode_png(contents: Any, channels: int = 0, dtype: Any = "uint8", name: str | None = None) -> np.ndarray:
    """``tf.io.decode_png``: see :func:`decode_image`."""
    return decode_image(contents, channels, dtype)


def decode_jpeg(contents: Any, channels: int = 0, **options: Any) -> np.ndarray:
    """``tf.io.decode_jpeg``: see :func:`decode_image` (TensorFlow's decoding options are
    Pillow's defaults here)."""
    return decode_image(contents, channels)
