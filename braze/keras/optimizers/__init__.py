"""``keras.optimizers``: Keras's optimizers, with Keras's arguments and update formulas, and
the learning-rate schedules (``schedules``)."""

from braze.keras.optimizers import schedules
from braze.optim.keras import SGD, Adagrad, Adam, AdamW, RMSprop, get
from braze.optim.optimizer import Optimizer

__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "get", "schedules"]
