"""Two epochs of ``train_cnn`` (Keras-style ``fit`` with augmentation, Adam) on a tiny
generated image folder: the program that tests/distributed runs on 2 ranks (batch 4 each)
and on 1 process (batch 8), whose parameters and History must agree.

It trains in float64. The ranks' mean of two means of 4 rounds unlike one mean of 8, and
the host's BLAS orders its sums as it likes, so two correct runs differ by rounding; in
float32 that rounding (about 1e-7 of a pre-activation) can move a pre-activation across
ReLU's kink, which switches one pixel's share of a filter's gradient on or off, and Adam,
which divides each gradient by its own root mean square, turns that into a step of a
different size: on a Zen 4 host one first-layer filter ended 3.3e-5 apart (2.4e-6 from a
float64 run elsewhere). In float64 a kink is crossed only by a pre-activation within
about 1e-16 of zero, which never happens here, so the runs agree to rounding whatever the
host's kernels."""

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
    """The parameters and History after 2 epochs, eagerly on the CPU, in float64."""
    model, history = train_cnn(
        braze.CPU,
        epochs=2,
        batch_size=BATCH,
        data=str(data),
        image_size=IMAGE_SIZE,
        distributed=distributed,
        dtype="float64",
    )
    return model.state_dict(), history.history
