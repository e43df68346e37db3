"""The module paths of Keras (``keras`` 3 and ``tensorflow.keras``), so that a Keras program
ports to braze by its imports alone: ``import braze.keras as keras`` for ``import keras``,
``from braze.keras import layers`` for ``from tensorflow.keras import layers``, and so on.
Each module re-exports what ``braze.nn``, ``braze.optim`` and ``braze.data`` define;
nothing here is a second implementation.
"""

from braze.keras import (
    activations,
    backend,
    callbacks,
    datasets,
    initializers,
    layers,
    losses,
    metrics,
    mixed_precision,
    models,
    ops,
    optimizers,
    preprocessing,
    random,
    regularizers,
    saving,
    utils,
)
from braze.nn.functional_api import Input
from braze.nn.layer import Layer
from braze.nn.model import KerasSequential as Sequential
from braze.nn.model import Model

# The Keras API whose names and behaviour braze.keras follows (programs check it).
__version__ = "3.0.0"

__all__ = [
    "Input",
    "Layer",
    "Model",
    "Sequential",
    "activations",
    "backend",
    "callbacks",
    "datasets",
    "initializers",
    "layers",
    "losses",
    "metrics",
    "mixed_precision",
    "models",
    "ops",
    "optimizers",
    "preprocessing",
    "random",
    "regularizers",
    "saving",
    "utils",
]
