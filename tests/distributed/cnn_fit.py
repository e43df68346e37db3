"""Two epochs of ``train_cnn`` (Keras-style ``fit`` with augmentation, Adam) on a tiny
generated image folder: the program that tests/distributed runs on 2 ranks (batch 4 each)
and on 1 process (batch 8), whose parameters and History must agree."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import braze
from braze.bench.cnn import train_cnn
from braze.data import make_two_class_folder

IMAGE_SIZE = 36  # the smallest side the CNN's three 5x5 convolutions and pools take
BATCH = 8
TRAIN_IMAGES = 16  # 2 whole batches an epoch
VALIDATION_IMAGES = 9  # a last batch of 1 image: rank 0's alone, counted once


def image_folder(root: Path) -> Path:
    """``root`` with train/ and validation/ class folders of IMAGE_SIZE-pixel images."""
    make_two_class_folder(root, TRAIN_IMAGES, VALIDATION_IMAGES, size=(IMAGE_SIZE, IMAGE_SIZE))
    return root


def train(data: Path, distributed: bool = False) -> tuple[dict[str, np.ndarray], dict[str, list[float]]]:
    """The parameters and History after 2 epochs, eagerly on the CPU."""
    model, history = train_cnn(
        braze.CPU, epochs=2, batch_size=BATCH, data=str(data), image_size=IMAGE_SIZE, distributed=distributed
    )
    return model.state_dict(), history.history
