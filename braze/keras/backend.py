"""``tensorflow.keras.backend``: the session state braze has, and the common functions of
``tf.keras``'s older backend module (Keras 3's ``keras.ops`` and ``keras.random`` under
their tf.keras names)."""

from typing import Any

import numpy as np

from braze.keras.ops import abs, cast, exp, log, max, mean, min, sqrt, square, std, sum  # noqa: A004 - Keras's names
from braze.nn import keras_random
from braze.nn.ctc import backend_ctc_decode as ctc_decode
from braze.nn.ctc import ctc_batch_cost
from braze.nn.names import reset_names
from braze.tensor import Tensor


def clear_session() -> None:
    """Start layer names over (the next model's first Dense is ``dense`` again), as Keras
    does; braze keeps no other per-session state (compiled steps are cached by structure)."""
    reset_names()


def epsilon() -> float:
    """Keras's fuzz factor, the 1e-7 its losses and metrics clip with."""
    return 1e-7


def floatx() -> str:
    return "float32"


def get_value(x: Any) -> Any:
    """``x`` as NumPy (a tensor, a variable, an optimizer's learning rate)."""
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


def set_value(x: Any, value: Any) -> None:
    """Set a variable (or an optimizer's ``learning_rate``) to ``value``."""
    if not hasattr(x, "assign"):
        raise TypeError(f"set_value: {type(x).__name__} is not a variable (a weight or an optimizer's learning_rate)")
    x.assign(value)


def int_shape(x: Any) -> tuple[int | None, ...]:
    return tuple(x.shape)


def random_normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = None, seed: Any = None) -> Tensor:
    return keras_random.normal(shape, mean, stddev, dtype, seed)


def random_uniform(shape: Any, minval: float = 0.0, maxval: float = 1.0, dtype: Any = None, seed: Any = None) -> Tensor:
    return keras_random.uniform(shape, minval, maxval, dtype, seed)


__all__ = [
    "abs",
    "cast",
    "clear_session",
    "ctc_batch_cost",
    "ctc_decode",
    "epsilon",
    "exp",
    "floatx",
    "get_value",
    "int_shape",
    "log",
    "max",
    "mean",
    "min",
    "random_normal",
    "random_uniform",
    "set_value",
    "sqrt",
    "square",
    "std",
    "sum",
]
