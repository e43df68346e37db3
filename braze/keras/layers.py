"""``tensorflow.keras.layers``: braze's layers, which carry Keras's names and signatures."""

from braze.nn.attention import MultiHeadAttention
from braze.nn.keras_spellings import Embedding, LayerNormalization
from braze.nn.layers import *  # noqa: F403 - the same layers, under Keras's module path
from braze.nn.layers import __all__ as _layers

__all__ = [*_layers, "Embedding", "LayerNormalization", "MultiHeadAttention"]
