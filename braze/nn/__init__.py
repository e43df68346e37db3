"""Layers, losses, regularizers, callbacks and the Module base (with Keras's
compile/fit/evaluate/predict/summary)."""

from braze.nn import functional, regularizers, utils
from braze.nn.attention import MultiHeadAttention
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
from braze.nn.transformer import GELU, Embedding, LayerNorm

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
    "Embedding",
    "Flatten",
    "GELU",
    "History",
    "IncompatibleKeys",
    "Layer",
    "LayerNorm",
    "Linear",
    "MaxPool2D",
    "MaxPooling2D",
    "ModelCheckpoint",
    "Module",
    "MultiHeadAttention",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Softmax",
    "Statistics",
    "Tanh",
    "binary_cross_entropy",
    "categorical_crossentropy",
    "count_correct",
    "functional",
    "glorot_uniform",
    "mean_squared_error",
    "regularizers",
    "softmax_cross_entropy",
    "sparse_categorical_crossentropy",
    "utils",
]
