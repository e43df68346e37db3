"""``keras.models``."""

from braze.nn.model import KerasSequential as Sequential
from braze.nn.model import Model
from braze.nn.saving import load_model, model_from_json, save_model

__all__ = ["Model", "Sequential", "load_model", "model_from_json", "save_model"]
