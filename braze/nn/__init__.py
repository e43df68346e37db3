"""Layers, losses and the Module base (with Keras-style compile/fit/evaluate)."""

from braze.nn.init import glorot_uniform
from braze.nn.layers import (
    Activation,
    AvgPool2D,
    Conv2D,
    Dense,
    Dropout,
    Flatten,
    Layer,
    Linear,
    MaxPool2D,
    ReLU,
    Sequential,
    Sigmoid,
    Softmax,
    Tanh,
)
from braze.nn.losses import (
    binary_cross_entropy,
    mean_squared_error,
    softmax_cross_entropy,
    sparse_categorical_crossentropy,
)
from braze.nn.module import CheckpointError, Module
from braze.nn.training import History, Statistics, count_correct

__all__ = [
    "Activation",
    "AvgPool2D",
    "CheckpointError",
    "Conv2D",
    "Dense",
    "Dropout",
    "Flatten",
    "History",
    "Layer",
    "Linear",
    "MaxPool2D",
    "Module",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Softmax",
    "Statistics",
    "Tanh",
    "binary_cross_entropy",
    "count_correct",
    "glorot_uniform",
    "mean_squared_error",
    "softmax_cross_entropy",
    "sparse_categorical_crossentropy",
]
