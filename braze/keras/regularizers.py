"""``tensorflow.keras.regularizers``."""

from braze.nn.regularizers import L1, L1L2, L2, Regularizer, get, l1, l1_l2, l2

__all__ = ["L1", "L1L2", "L2", "Regularizer", "get", "l1", "l1_l2", "l2"]
