"""``tensorflow.keras.preprocessing``."""

from braze.data.image_dataset import image_dataset_from_directory
from braze.keras.preprocessing import image, sequence

__all__ = ["image", "image_dataset_from_directory", "sequence"]
