"""``tensorflow.keras.models``."""

from braze.nn.layers import Sequential

__all__ = ["Sequential"]
