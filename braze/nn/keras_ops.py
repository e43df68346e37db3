"""``keras.ops``: the common functions, under Keras's names and arguments, each working on
tensors (and arrays) and on the symbolic tensors of the functional API, where a call
records a node of the model (``x = keras.ops.mean(inputs, axis=1)``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from braze import ops
from braze.nn import activations
from braze.nn.symbolic import KerasTensor, symbolic_op
from braze.ops import tf_image
from braze.ops.image import extract_patches
from braze.tensor import Tensor


def _std(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    return ops.sqrt(ops.var(x, axis, keepdims))


def _norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A002 - Keras's name
    if ord not in (None, 2, "fro", "euclidean"):
        raise NotImplementedError(f"keras.ops.norm: ord={ord!r} is not supported (the L2 norm is)")
    x = ops.as_tensor(x)
    return ops.sqrt(ops.sum(x * x, axis, keepdims))


def _where(condition: Any, x1: Any = None, x2: Any = None) -> Tensor:
    if x1 is None or x2 is None:
        raise NotImplementedError("keras.ops.where(condition) without x1 and x2 (indices) is not supported")
    return ops.where(condition, x1, x2)


def _one_hot(x: Any, num_classes: int, axis: int = -1, dtype: Any = None) -> Tensor:
    if axis != -1:
        raise NotImplementedError("keras.ops.one_hot: only axis=-1 is supported")
    return ops.one_hot(ops.as_tensor(x), num_classes, dtype or "float32")


def _cast(x: Any, dtype: Any) -> Tensor:
    return ops.astype(ops.as_tensor(x), dtype)


def _square(x: Any) -> Tensor:
    x = ops.as_tensor(x)
    return x * x


def _concatenate(xs: Sequence[Any], axis: int = 0) -> Tensor:
    return ops.concatenate(xs, axis)


def shape(x: Any) -> tuple[int | None, ...]:
    """The shape as a tuple (None where a symbolic tensor's dimension is not fixed)."""
    return tuple(x.shape)


def convert_to_numpy(x: Any) -> np.ndarray:
    if isinstance(x, KerasTensor):
        return x.numpy()
    return np.array(x.numpy() if isinstance(x, Tensor) else x)


_WRAPPED = {
    "abs": ops.abs,
    "add": ops.add,
    "arange": ops.arange,
    "argmax": ops.argmax,
    "cast": _cast,
    "clip": ops.clip,
    "concatenate": _concatenate,
    "convert_to_tensor": ops.as_tensor,
    "divide": ops.divide,
    "elu": activations.elu,
    "equal": ops.equal,
    "exp": ops.exp,
    "expand_dims": ops.expand_dims,
    "flip": ops.flip,
    "full": ops.full,
    "full_like": ops.full_like,
    "gelu": activations.gelu,
    "greater": ops.greater,
    "greater_equal": ops.greater_equal,
    "leaky_relu": activations.leaky_relu,
    "less": ops.less,
    "less_equal": ops.less_equal,
    "log": ops.log,
    "log_softmax": ops.log_softmax,
    "logical_and": ops.logical_and,
    "logical_not": ops.logical_not,
    "logical_or": ops.logical_or,
    "logsumexp": ops.logsumexp,
    "matmul": ops.matmul,
    "max": ops.max,
    "maximum": ops.maximum,
    "mean": ops.mean,
    "min": ops.min,
    "minimum": ops.minimum,
    "multiply": ops.multiply,
    "negative": ops.negative,
    "norm": _norm,
    "not_equal": ops.not_equal,
    "one_hot": _one_hot,
    "ones": ops.ones,
    "ones_like": ops.ones_like,
    "pad": ops.pad,
    "power": ops.power,
    "relu": ops.relu,
    "reshape": ops.reshape,
    "rsqrt": ops.rsqrt,
    "selu": activations.selu,
    "sigmoid": ops.sigmoid,
    "sign": ops.sign,
    "silu": activations.silu,
    "softmax": ops.softmax,
    "softplus": activations.softplus,
    "sqrt": ops.sqrt,
    "square": _square,
    "squeeze": ops.squeeze,
    "stack": ops.stack,
    "std": _std,
    "subtract": ops.subtract,
    "sum": ops.sum,
    "swish": activations.silu,
    "tanh": ops.tanh,
    "transpose": ops.transpose,
    "var": ops.var,
    "where": _where,
    "zeros": ops.zeros,
    "zeros_like": ops.zeros_like,
}


def _resize(
    images: Any,
    size: Sequence[int],
    interpolation: str = "bilinear",
    antialias: bool = False,
    crop_to_aspect_ratio: bool = False,
    data_format: str | None = None,
) -> Tensor:
    if crop_to_aspect_ratio or data_format not in (None, "channels_last"):
        raise NotImplementedError("keras.ops.image.resize: crop_to_aspect_ratio and channels_first are not supported")
    return tf_image.resize(images, size, interpolation, antialias=antialias)


def _extract_patches(
    images: Any, size: Any, strides: Any = None, dilation_rate: int = 1, padding: str = "valid", data_format: Any = None
) -> Tensor:
    if dilation_rate != 1 or data_format not in (None, "channels_last"):
        raise NotImplementedError("keras.ops.image.extract_patches: dilation_rate 1 and channels_last only")
    return extract_patches(ops.as_tensor(images), size, strides, padding)


# keras.ops.image: the image functions, symbolic too.
IMAGE_FUNCTIONS = {"resize": symbolic_op(_resize), "extract_patches": symbolic_op(_extract_patches)}
FUNCTIONS: dict[str, Any] = {name: symbolic_op(fn) for name, fn in _WRAPPED.items()}
FUNCTIONS.update(shape=shape, convert_to_numpy=convert_to_numpy)
for _name, _fn in [*FUNCTIONS.items(), *IMAGE_FUNCTIONS.items()]:
    _fn.__name__ = _name
