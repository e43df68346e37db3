"""Activation functions by Keras's names (``activation="relu"``, ``keras.activations.gelu``).

Each is an ordinary function of a tensor built from the op library, so its gradient, its
lazy trace and its compiled kernels come from the ops it uses.
"""

from __future__ import annotations

from collections.abc import Callable

from braze import ops
from braze.nn import functional
from braze.ops import tensorflow as tf_ops
from braze.tensor import Tensor


def linear(x: Tensor) -> Tensor:
    return x


def relu(x: Tensor) -> Tensor:
    return ops.relu(x)


def sigmoid(x: Tensor) -> Tensor:
    return ops.sigmoid(x)


def tanh(x: Tensor) -> Tensor:
    return ops.tanh(x)


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    return ops.softmax(x, axis)


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    return ops.log_softmax(x, axis)


def softplus(x: Tensor) -> Tensor:
    """``log(1 + exp(x))`` written so that it never overflows, with the slope 1/2 at 0
    (``tf.math.softplus``'s formulation: relu's and abs's derivatives at 0 would give 0)."""
    return tf_ops.softplus(x)


def silu(x: Tensor) -> Tensor:
    """``x * sigmoid(x)`` (Keras's ``swish``)."""
    return x * ops.sigmoid(x)


def elu(x: Tensor, alpha: float = 1.0) -> Tensor:
    return ops.where(x > 0, x, alpha * (ops.exp(ops.minimum(x, 0.0)) - 1.0))


def selu(x: Tensor) -> Tensor:
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    return scale * elu(x, alpha)


def leaky_relu(x: Tensor, negative_slope: float = 0.2) -> Tensor:
    return ops.where(x > 0, x, negative_slope * x)


def gelu(x: Tensor, approximate: bool = False) -> Tensor:
    """``x * Phi(x)``, Phi the standard normal's distribution function: exact, by erf, or
    by its tanh approximation (``approximate=True``), as Keras's."""
    return functional.gelu(x, "tanh" if approximate else "none")


swish = silu
"""Keras's other name of ``silu``."""

ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "linear": linear,
    "relu": relu,
    "sigmoid": sigmoid,
    "tanh": tanh,
    "softmax": softmax,
    "log_softmax": log_softmax,
    "softplus": softplus,
    "silu": silu,
    "swish": silu,
    "elu": elu,
    "selu": selu,
    "leaky_relu": leaky_relu,
    "gelu": gelu,
}


def get(activation: str | Callable | None) -> Callable[[Tensor], Tensor]:
    """An activation from its Keras name, a function, or None (the identity)."""
    if activation is None:
        return linear
    if callable(activation):
        return activation
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}: expected one of {sorted(ACTIVATIONS)} or a function")
    return ACTIVATIONS[activation]


def name_of(activation: Callable) -> str | None:
    """The Keras name of ``activation`` (for saving a model), or None for another function."""
    return next((name for name, fn in ACTIVATIONS.items() if fn is activation), None)
