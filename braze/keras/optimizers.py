"""``keras.optimizers``: Keras's optimizers, with Keras's arguments and update formulas."""

from braze.optim.keras import SGD, Adagrad, Adam, AdamW, RMSprop, get
from braze.optim.optimizer import Optimizer

__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "get"]
