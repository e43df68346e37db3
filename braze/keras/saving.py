"""``keras.saving``."""

from braze.nn.saving import get_custom_objects, load_model, register_keras_serializable, save_model

__all__ = ["get_custom_objects", "load_model", "register_keras_serializable", "save_model"]
