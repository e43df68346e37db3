"""LeNet-5 in the layout of the Swift for TensorFlow models repository."""

from __future__ import annotations

from braze.nn import AvgPool2D, Conv2D, Dense, Flatten, Sequential
from braze.ops.random import Generator


def LeNet(seed: int | None = None) -> Sequential:  # noqa: N802 - a model constructor, as in Keras
    """conv 6@5x5 same + relu, avg-pool 2, conv 16@5x5 + relu, avg-pool 2, dense 120, 84, 10.

    Takes 28x28x1 NHWC images and returns logits for the 10 digits.
    """
    g = Generator(seed) if seed is not None else None
    return Sequential(
        Conv2D(6, 5, padding="same", activation="relu", input_shape=(28, 28, 1), generator=g),
        AvgPool2D(2, 2),
        Conv2D(16, 5, activation="relu", generator=g),
        AvgPool2D(2, 2),
        Flatten(),
        Dense(120, activation="relu", generator=g),
        Dense(84, activation="relu", generator=g),
        Dense(10, generator=g),
    )
