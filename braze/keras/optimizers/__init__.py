"""``tensorflow.keras.optimizers``: the learning-rate schedules (``schedules``)."""

from braze.keras.optimizers import schedules

__all__ = ["schedules"]
