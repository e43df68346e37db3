"""``keras.utils``."""

from braze.data.image_dataset import image_dataset_from_directory
from braze.data.image_folder import array_to_img, img_to_array, load_img, save_img
from braze.data.keras_utils import PyDataset, Sequence, pad_sequences, to_categorical
from braze.data.text_dataset import text_dataset_from_directory
from braze.data.timeseries import timeseries_dataset_from_array
from braze.nn.adapters import pack as pack_x_y_sample_weight
from braze.nn.adapters import unpack as unpack_x_y_sample_weight
from braze.nn.saving import CustomObjectScope, deserialize, serialize
from braze.nn.seeds import plot_model, set_random_seed

custom_object_scope = CustomObjectScope
serialize_keras_object = serialize
deserialize_keras_object = deserialize

__all__ = [
    "CustomObjectScope",
    "PyDataset",
    "array_to_img",
    "custom_object_scope",
    "deserialize_keras_object",
    "image_dataset_from_directory",
    "img_to_array",
    "load_img",
    "plot_model",
    "save_img",
    "Sequence",
    "pack_x_y_sample_weight",
    "pad_sequences",
    "serialize_keras_object",
    "set_random_seed",
    "text_dataset_from_directory",
    "timeseries_dataset_from_array",
    "to_categorical",
    "unpack_x_y_sample_weight",
]
