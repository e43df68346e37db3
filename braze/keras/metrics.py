"""``keras.metrics``: stateful metrics, and the per-example functions behind them."""

from braze.nn.keras_losses import (
    binary_crossentropy,
    categorical_crossentropy,
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_squared_error,
    sparse_categorical_crossentropy,
)
from braze.nn.metrics import *  # noqa: F403 - the same metrics, under Keras's module path
from braze.nn.metrics import (
    CLASSES,
    MeanMetricWrapper,
    Metric,
    binary_accuracy,
    categorical_accuracy,
    get,
    sparse_categorical_accuracy,
)

mae, mse, mape = mean_absolute_error, mean_squared_error, mean_absolute_percentage_error

__all__ = [
    *CLASSES,
    "MeanMetricWrapper",
    "Metric",
    "binary_accuracy",
    "binary_crossentropy",
    "categorical_accuracy",
    "categorical_crossentropy",
    "get",
    "mae",
    "mape",
    "mean_absolute_error",
    "mean_absolute_percentage_error",
    "mean_squared_error",
    "mse",
    "sparse_categorical_accuracy",
    "sparse_categorical_crossentropy",
]
