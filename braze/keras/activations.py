"""``keras.activations``."""

from braze.nn.activations import *  # noqa: F403 - the same functions, under Keras's module path
from braze.nn.activations import ACTIVATIONS, get

__all__ = [*ACTIVATIONS, "get"]
