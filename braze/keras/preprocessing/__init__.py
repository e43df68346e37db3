"""``tensorflow.keras.preprocessing``."""

from braze.data.image_dataset import image_dataset_from_directory
from braze.data.text_dataset import text_dataset_from_directory
from braze.data.timeseries import timeseries_dataset_from_array
from braze.keras.preprocessing import image, sequence

__all__ = [
    "image",
    "image_dataset_from_directory",
    "sequence",
    "text_dataset_from_directory",
    "timeseries_dataset_from_array",
]
