"""``keras.layers``: braze's layers, which carry Keras's names and signatures."""

from braze.nn.conv import *  # noqa: F403 - the same layers, under Keras's module path
from braze.nn.conv import __all__ as _conv
from braze.nn.functional import Input, InputLayer
from braze.nn.layer import Layer
from braze.nn.layers import *  # noqa: F403
from braze.nn.layers import __all__ as _core
from braze.nn.merging import *  # noqa: F403
from braze.nn.merging import __all__ as _merging
from braze.nn.normalization import BatchNormalization

__all__ = [*_conv, *_core, *_merging, "BatchNormalization", "Input", "InputLayer", "Layer"]

# Keras layers braze does not have, with what comes nearest in braze.
_MISSING = {
    "Conv2DTranspose": "no transposed convolution yet",
    "Conv1DTranspose": "no transposed convolution yet",
    "SeparableConv2D": "Conv2D computes the same kind of map with a full kernel",
    "DepthwiseConv2D": "Conv2D computes the same kind of map with a full kernel",
    "UpSampling2D": "no upsampling yet",
    "LSTM": "no recurrent layers yet; Conv1D and GlobalAveragePooling1D model sequences",
    "GRU": "no recurrent layers yet; Conv1D and GlobalAveragePooling1D model sequences",
    "SimpleRNN": "no recurrent layers yet; Conv1D and GlobalAveragePooling1D model sequences",
    "Embedding": "not yet",
    "LayerNormalization": "BatchNormalization normalizes over the batch instead",
    "MultiHeadAttention": "not yet",
    "RandomFlip": "braze.keras.preprocessing.image.ImageDataGenerator(horizontal_flip=True) augments images",
    "RandomRotation": "ImageDataGenerator augments images (shear, zoom, flip)",
    "RandomZoom": "ImageDataGenerator(zoom_range=...) augments images",
    "Normalization": "normalize the arrays with NumPy, or Rescaling(scale, offset)",
    "StringLookup": "braze tensors hold numbers: encode strings to integers with NumPy",
    "IntegerLookup": "map the integers with NumPy",
    "TextVectorization": "braze tensors hold numbers: tokenize with Python and keras.utils.pad_sequences",
}


def __getattr__(name: str) -> object:
    if name in _MISSING:
        raise AttributeError(f"braze.keras.layers has no {name}: {_MISSING[name]}")
    raise AttributeError(f"module 'braze.keras.layers' has no attribute {name!r}")
