"""``keras.losses``: loss functions in Keras's ``(y_true, y_pred)`` order and Loss classes."""

from braze.nn.keras_losses import *  # noqa: F403 - the same losses, under Keras's module path
from braze.nn.keras_losses import CLASSES, FUNCTIONS, Loss, LossFunctionWrapper, get

__all__ = [*CLASSES, *FUNCTIONS, "Loss", "LossFunctionWrapper", "get"]
