"""``keras.initializers``."""

from braze.nn.initializers import *  # noqa: F403 - the same initializers, under Keras's module path
from braze.nn.initializers import CLASSES, Initializer, deserialize, get, serialize

__all__ = [*CLASSES, "Initializer", "deserialize", "get", "serialize"]
