"""Layers, losses, regularizers, callbacks and the Module base (with Keras's
compile/fit/evaluate/predict/summary)."""

from braze.nn import regularizers, utils
from braze.nn.callbacks import Callback, CSVLogger, EarlyStopping, History, ModelCheckpoint
from braze.nn.init import glorot_uniform
from braze.nn.layers import (
    Activation,
    AveragePooling2D,
    AvgPool2D,
    Conv2D,
    Dense,
    Dropout,
    Flatten,
    Layer,
    Linear,
    MaxPool2D,
    MaxPooling2D,
    ReLU,
    Sequential,
    Sigmoid,
    Softmax,
    Tanh,
)
from braze.nn.losses import (
    binary_cross_entropy,
    categorical_crossentropy,
    mean_squared_error,
    softmax_cross_entropy,
    sparse_categorical_crossentropy,
)
from braze.nn.module import CheckpointError, IncompatibleKeys, Module
from braze.nn.training import Statistics, count_correct

__all__ = [
    "Activation",
    "AveragePooling2D",
    "AvgPool2D",
    "CSVLogger",
    "Callback",
    "CheckpointError",
    "Conv2D",
    "Dense",
    "Dropout",
    "EarlyStopping",
    "Flatten",
    "History",
    "IncompatibleKeys",
    "Layer",
    "Linear",
    "MaxPool2D",
    "MaxPooling2D",
    "ModelCheckpoint",
    "Module",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Softmax",
    "Statistics",
    "Tanh",
    "binary_cross_entropy",
    "categorical_crossentropy",
    "count_correct",
    "glorot_uniform",
    "mean_squared_error",
    "regularizers",
    "softmax_cross_entropy",
    "sparse_categorical_crossentropy",
    "utils",
]
