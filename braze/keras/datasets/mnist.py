"""``keras.datasets.mnist``."""

from braze.data.mnist import load_data

__all__ = ["load_data"]
