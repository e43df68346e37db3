"""``tensorflow.keras.optimizers.schedules``: braze's schedules, under Keras's module path."""

from braze.optim.schedules import *  # noqa: F403 - the same schedules, under Keras's module path
from braze.optim.schedules import __all__  # noqa: F401
