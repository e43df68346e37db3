"""``tensorflow.keras.preprocessing``."""

from braze.keras.preprocessing import image, sequence

__all__ = ["image", "sequence"]
