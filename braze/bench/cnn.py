"""The XLA article's case study: its CNN on a two-class 150x150 image folder, trained with
Keras-style ``fit`` (Adam, batch 64, 840 // 64 steps per epoch, augmentation)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from braze.data import Augment, DataError, ImageFolder, make_two_class_folder
from braze.distributed import DistributedOptimizer, all_reduce, rank, size
from braze.models import XlaArticleCNN
from braze.nn import History, binary_cross_entropy
from braze.optim import Adam
from braze.runtime.cachedir import cache_root, private_folder
from braze.runtime.device import Device

IMAGE_SIZE = 150


def image_folders(data: str | None, image_size: int = IMAGE_SIZE) -> tuple[Path, Path]:
    """(train, validation) folders: ``data/train`` and ``data/validation``, or a generated
    two-class folder (840 + 188 images) in the user's cache folder (``data/`` in
    ``~/.cache/braze``), private to the user as the kernels are."""
    if data is not None:
        root = Path(data)
        train, validation = root / "train", root / "validation"
        if not root.is_dir():
            raise DataError(f"image folder {root} does not exist or is not a directory")
        if not train.is_dir() or not validation.is_dir():
            raise DataError(f"image folder {root} needs 'train' and 'validation' sub-folders of class folders")
        return train, validation
    root = private_folder(private_folder(cache_root(), "data"), f"two-class-{image_size}")
    return make_two_class_folder(root, size=(image_size, image_size))


def train_cnn(
    device: Device,
    epochs: int = 5,
    batch_size: int = 64,
    lr: float = 1e-3,
    data: str | None = None,
    seed: int = 0,
    steps_per_epoch: int | None = None,
    image_size: int = IMAGE_SIZE,
    report: Callable[[str], None] = print,
    eval_steps: int | None = None,
    distributed: bool = False,
    dtype: str = "float32",
) -> tuple[object, History]:
    """Train the CNN with Keras-style ``fit``; return the model and its :class:`History`.

    ``distributed``: one rank of a data-parallel job (``braze.distributed.init()`` done).
    The job trains as one process would, on the same (augmented) batches of
    ``batch_size``: each rank takes its share of every batch, gradients are averaged over
    the ranks and the epoch's statistics summed, so every rank's History holds the job's;
    rank 0 alone prints the epochs. ``dtype``: the parameters' and images' float dtype."""
    ranks = size() if distributed else 1
    if distributed and data is None and rank() != 0:
        all_reduce(0)  # the generated folder is rank 0's to write: the others wait, then find it made
    train_dir, validation_dir = image_folders(data, image_size)
    if distributed and data is None and rank() == 0:
        all_reduce(0)
    shape = (image_size, image_size)
    augment = Augment(shear_range=0.2, zoom_range=0.2, horizontal_flip=True, seed=seed)
    share = batch_size // ranks
    common = {"rescale": 1 / 255, "shard": distributed, "dtype": dtype}
    train = ImageFolder(train_dir, shape, "binary", share, shuffle=True, seed=seed, augment=augment, **common)
    validation = ImageFolder(validation_dir, shape, "binary", share, shuffle=False, **common)
    model = XlaArticleCNN(image_size, seed=seed).to(device, dtype)
    optimizer = Adam(lr=lr, eps=1e-7)
    model.compile(
        loss=binary_cross_entropy,
        optimizer=DistributedOptimizer(optimizer) if distributed else optimizer,
        metrics=["accuracy"],
    )
    report(f"Training the XLA article's CNN on {train.samples} images ({validation.samples} for validation)")
    history = model.fit(
        train,
        epochs=epochs,
        verbose=int(not distributed or rank() == 0),
        validation_data=validation,
        steps_per_epoch=steps_per_epoch or max(train.samples // batch_size, 1),
        validation_steps=eval_steps,  # None: every image (the last batch smaller)
    )
    return model, history
