"""``keras.activations``."""

from braze.nn.activations import (
    elu,
    gelu,
    get,
    leaky_relu,
    linear,
    log_softmax,
    relu,
    selu,
    sigmoid,
    silu,
    softmax,
    softplus,
    swish,
    tanh,
)

__all__ = [
    "elu",
    "gelu",
    "get",
    "leaky_relu",
    "linear",
    "log_softmax",
    "relu",
    "selu",
    "sigmoid",
    "silu",
    "softmax",
    "softplus",
    "swish",
    "tanh",
]
