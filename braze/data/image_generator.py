"""Keras's ``ImageDataGenerator`` spelling of :class:`Augment` plus :class:`ImageFolder`.

``ImageDataGenerator(rescale=1./255, shear_range=0.2, zoom_range=0.2, horizontal_flip=True)
.flow_from_directory(path, target_size=(150, 150), batch_size=64, class_mode="binary")`` is
an ``ImageFolder`` over ``path`` whose images pass through an ``Augment`` with those
settings: one implementation, two spellings. Only the transforms braze implements are
accepted; any other Keras argument is a ``TypeError`` naming it.
"""

from __future__ import annotations

import os

import numpy as np

from braze.data.augment import Augment
from braze.data.image_folder import ImageFolder


class ImageDataGenerator:
    """Settings shared by every folder it flows from: ``rescale`` multiplies the pixels
    (0..255) and the ranges are those of :class:`Augment`."""

    def __init__(
        self,
        rescale: float | None = None,
        shear_range: float = 0.0,
        zoom_range: float | tuple[float, float] = 0.0,
        horizontal_flip: bool = False,
    ) -> None:
        self.rescale = rescale
        self.shear_range, self.zoom_range, self.horizontal_flip = shear_range, zoom_range, horizontal_flip
        Augment(shear_range, zoom_range, horizontal_flip)  # bad ranges fail here, as in Keras

    def _augment(self, seed: int | None) -> Augment | None:
        if not (self.shear_range or self.zoom_range or self.horizontal_flip):
            return None
        return Augment(self.shear_range, self.zoom_range, self.horizontal_flip, seed=seed)

    def flow_from_directory(
        self,
        directory: str | os.PathLike,
        target_size: tuple[int, int] = (256, 256),
        color_mode: str = "rgb",
        class_mode: str = "categorical",
        batch_size: int = 32,
        shuffle: bool = True,
        seed: int | None = None,
        interpolation: str = "nearest",
    ) -> ImageFolder:
        """Batches of ``directory/<class>/<image>`` with Keras's defaults; ``seed`` seeds both
        the shuffling and the random transforms. Prints what it found, as Keras does."""
        if seed is None:
            # Keras draws from NumPy's global generator, so np.random.seed makes a run repeatable.
            seed = int(np.random.randint(2**31))
        folder = ImageFolder(
            directory,
            target_size,
            class_mode,
            batch_size,
            shuffle=shuffle,
            seed=seed,
            augment=self._augment(seed),
            rescale=self.rescale,
            color_mode=color_mode,
            interpolation=interpolation,
        )
        print(f"Found {folder.samples} images belonging to {len(folder.class_indices)} classes.")
        return folder
