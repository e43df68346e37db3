"""``keras.ops``: the common functions, on tensors and on the functional API's symbolic
tensors alike."""

from braze.nn.keras_ops import FUNCTIONS

globals().update(FUNCTIONS)

__all__ = sorted(FUNCTIONS)
