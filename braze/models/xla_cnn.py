"""The CNN of the XLA article's case study (a two-class classifier of 150x150 RGB images)."""

from __future__ import annotations

from braze.nn import Conv2D, Dense, Flatten, MaxPool2D, Sequential
from braze.ops.random import Generator


def XlaArticleCNN(image_size: int = 150, seed: int | None = None) -> Sequential:  # noqa: N802
    """conv 64, 32, 16 filters of 5x5 with relu, each followed by 2x2 max-pool; dense 126 and
    52 with relu; dense 1 with sigmoid (a probability, for binary cross-entropy)."""
    g = Generator(seed) if seed is not None else None
    return Sequential(
        Conv2D(64, 5, activation="relu", input_shape=(image_size, image_size, 3), generator=g),
        MaxPool2D(2),
        Conv2D(32, 5, activation="relu", generator=g),
        MaxPool2D(2),
        Conv2D(16, 5, activation="relu", generator=g),
        MaxPool2D(2),
        Flatten(),
        Dense(126, activation="relu", generator=g),
        Dense(52, activation="relu", generator=g),
        Dense(1, activation="sigmoid", generator=g),
    )
