"""``tensorflow.keras.activations``: braze's activations under Keras's names."""

from braze.nn.keras_spellings import gelu
from braze.ops import relu, sigmoid, softmax, tanh

__all__ = ["gelu", "relu", "sigmoid", "softmax", "tanh"]
