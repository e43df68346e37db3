"""The module paths of ``tensorflow.keras``, so that a Keras program ports to braze by its
imports alone: ``from braze.keras.layers import Dense`` for ``from tensorflow.keras.layers
import Dense``, and so on. Each module re-exports what ``braze.nn`` and ``braze.data``
define; nothing here is a second implementation.
"""

from braze.keras import activations, backend, callbacks, layers, models, optimizers, preprocessing, regularizers

__all__ = ["activations", "backend", "callbacks", "layers", "models", "optimizers", "preprocessing", "regularizers"]
