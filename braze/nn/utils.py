"""``keras.utils``' functions that reach past the data: the seeds of every random stream."""

from __future__ import annotations

import random

import numpy as np

from braze.ops.random import manual_seed


def set_random_seed(seed: int) -> None:
    """Seed Python's ``random``, NumPy's global generator and braze's default generator
    (initial weights, dropout, shuffling), as ``keras.utils.set_random_seed`` does."""
    random.seed(seed)
    np.random.seed(seed)
    manual_seed(seed)
