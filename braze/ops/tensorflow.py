"""TensorFlow's names for ops braze has (``tf.reduce_mean``, ``tf.concat``, ``tf.cast``...),
so that a program that reads ``import braze as tf`` finds them."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from braze.ops import creation, math, reduction
from braze.ops import random as random_ops
from braze.ops import shape as shape_ops
from braze.ops.core import as_tensor, astype
from braze.tensor import Tensor


def reduce_sum(input_tensor: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The sum over ``axis`` (all axes when None): ``tf.reduce_sum``."""
    return reduction.sum(input_tensor, axis, keepdims)


def reduce_mean(input_tensor: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The mean over ``axis`` (all axes when None): ``tf.reduce_mean``."""
    return reduction.mean(input_tensor, axis, keepdims)


def reduce_max(input_tensor: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The maximum over ``axis`` (all axes when None): ``tf.reduce_max``."""
    return reduction.max(input_tensor, axis, keepdims)


def reduce_min(input_tensor: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The minimum over ``axis`` (all axes when None): ``tf.reduce_min``."""
    return reduction.min(input_tensor, axis, keepdims)


def concat(values: Sequence[Any], axis: int) -> Tensor:
    """The tensors joined along ``axis``: ``tf.concat``."""
    return shape_ops.concatenate(values, axis)


def cast(x: Any, dtype: Any) -> Tensor:
    """``x`` converted to ``dtype``: ``tf.cast``."""
    return astype(as_tensor(x), dtype)


def constant(value: Any, dtype: Any = None, shape: Sequence[int] | None = None) -> Tensor:
    """A tensor holding ``value``; with ``shape``, a single value fills it and more values
    are reshaped to it, as in TensorFlow."""
    out = creation.tensor(value, dtype)
    if shape is None or tuple(shape) == out.shape:
        return out
    if out.size == 1:
        return creation.full(shape, out.item(), out.dtype)
    return out.reshape(tuple(shape))


def convert_to_tensor(value: Any, dtype: Any = None) -> Tensor:
    """A tensor of ``value`` (an array, list or number; a tensor as it is): ``tf.convert_to_tensor``."""
    return as_tensor(value, dtype)


def square(x: Any) -> Tensor:
    """``x * x``: ``tf.square``."""
    x = as_tensor(x)
    return x * x


def clip_by_value(t: Any, clip_value_min: Any, clip_value_max: Any) -> Tensor:
    """``t`` clipped to ``[clip_value_min, clip_value_max]``: ``tf.clip_by_value``."""
    return math.clip(t, clip_value_min, clip_value_max)


def _normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = "float32", seed: int | None = None):
    return random_ops.randn(shape, dtype, seed=seed) * stddev + mean


def _uniform(shape: Any, minval: float = 0.0, maxval: float = 1.0, dtype: Any = "float32", seed: int | None = None):
    return random_ops.uniform(shape, minval, maxval, dtype, seed=seed)


# tf.random: samples from braze's default generator (tf.random.set_seed seeds it).
random = SimpleNamespace(normal=_normal, uniform=_uniform, set_seed=random_ops.manual_seed)


def _as_bytes(text: bytes | bytearray | str, encoding: str = "utf-8") -> bytes:
    if isinstance(text, (bytes, bytearray)):
        return bytes(text)
    if isinstance(text, str):
        return text.encode(encoding)
    raise TypeError(f"tf.compat.as_bytes: expected bytes or str, got {type(text).__name__}")


def _as_text(text: bytes | bytearray | str, encoding: str = "utf-8") -> str:
    if isinstance(text, str):
        return text
    if isinstance(text, (bytes, bytearray)):
        return bytes(text).decode(encoding)
    raise TypeError(f"tf.compat.as_text: expected bytes or str, got {type(text).__name__}")


compat = SimpleNamespace(as_bytes=_as_bytes, as_text=_as_text, as_str=_as_text)
"""``tf.compat``: TensorFlow's conversions between text and bytes, ``as_bytes(text)``,
``as_text(data)`` and ``as_str(data)`` (UTF-8 unless an ``encoding`` is given)."""


def shape(input: Any, out_type: Any = None) -> tuple[int, ...]:  # noqa: A002 - TensorFlow's name
    """The shape of ``input`` as a tuple of ints (braze's shapes are static; ``np.shape``'s
    answer rather than TensorFlow's int32 tensor, so it indexes and builds shapes alike)."""
    return tuple(int(d) for d in (input.shape if hasattr(input, "shape") else as_tensor(input).shape))


def Variable(  # noqa: N802 - TensorFlow's spelling
    initial_value: Any, trainable: bool = True, name: str | None = None, dtype: Any = None
) -> Tensor:
    """A tensor holding ``initial_value``, trained when it is ``trainable`` and a float:
    a leaf that requires grad, updated in place by ``assign``, ``assign_add``, ``assign_sub``."""
    value = creation.tensor(initial_value.numpy() if isinstance(initial_value, Tensor) else initial_value, dtype)
    return value.requires_grad_() if trainable and value.dtype.is_float else value


__all__ = [
    "Variable",
    "cast",
    "clip_by_value",
    "concat",
    "constant",
    "convert_to_tensor",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_sum",
    "shape",
    "square",
]
