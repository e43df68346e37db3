"""``tensorflow.keras.preprocessing``."""

from braze.keras.preprocessing import image

__all__ = ["image"]
