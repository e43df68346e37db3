"""``keras.utils``."""

from braze.data.image_dataset import image_dataset_from_directory
from braze.data.image_folder import array_to_img, img_to_array, load_img
from braze.data.keras_utils import PyDataset, Sequence, pad_sequences, to_categorical
from braze.nn.adapters import pack as pack_x_y_sample_weight
from braze.nn.adapters import unpack as unpack_x_y_sample_weight
from braze.nn.seeds import plot_model, set_random_seed

__all__ = [
    "PyDataset",
    "array_to_img",
    "image_dataset_from_directory",
    "img_to_array",
    "load_img",
    "plot_model",
    "Sequence",
    "pack_x_y_sample_weight",
    "pad_sequences",
    "set_random_seed",
    "to_categorical",
    "unpack_x_y_sample_weight",
]
