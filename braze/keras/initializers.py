"""``keras.initializers``."""

from braze.nn.initializers import *  # noqa: F403 - the same initializers, under Keras's module path
from braze.nn.initializers import CLASSES, Initializer, get

__all__ = [*CLASSES, "Initializer", "get"]
