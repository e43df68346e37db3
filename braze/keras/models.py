"""``keras.models``."""

from braze.nn.model import KerasSequential as Sequential
from braze.nn.model import Model
from braze.nn.saving import clone_model, load_model, model_from_json, save_model

__all__ = ["Model", "Sequential", "clone_model", "load_model", "model_from_json", "save_model"]
