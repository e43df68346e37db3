"""``keras.utils``."""

from braze.data.keras_utils import PyDataset, Sequence, pad_sequences, to_categorical
from braze.nn.adapters import pack as pack_x_y_sample_weight
from braze.nn.adapters import unpack as unpack_x_y_sample_weight
from braze.nn.utils import set_random_seed

__all__ = [
    "PyDataset",
    "Sequence",
    "pack_x_y_sample_weight",
    "pad_sequences",
    "set_random_seed",
    "to_categorical",
    "unpack_x_y_sample_weight",
]
