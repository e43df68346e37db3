"""``tensorflow.keras.preprocessing.sequence``."""

from braze.data.keras_utils import pad_sequences

__all__ = ["pad_sequences"]
