"""``keras.utils``' functions that reach past the data: the seeds of every random stream, and plot_model."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from braze.ops.random import manual_seed


def set_random_seed(seed: int) -> None:
    """Seed Python's ``random``, NumPy's global generator and braze's default generator
    (initial weights, dropout, shuffling), as ``keras.utils.set_random_seed`` does."""
    random.seed(seed)
    np.random.seed(seed)
    manual_seed(seed)


def plot_model(model: Any, to_file: str = "model.png", **options: Any) -> None:
    """Keras draws a model with pydot and Graphviz; braze does not: it raises ImportError, as
    Keras does where pydot is missing. ``model.summary()`` prints the layers instead."""
    raise ImportError(
        "plot_model: braze does not draw models (Keras needs pydot and Graphviz for it); "
        "model.summary() prints the layers, their shapes and parameters"
    )
