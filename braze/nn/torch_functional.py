"""PyTorch's ``torch.nn.functional`` functions with PyTorch's layouts, argument order and
defaults: activations, ``linear``, ``dropout``, the softmaxes, ``pad``, ``one_hot``,
``normalize`` and ``cosine_similarity``; the image functions (``conv2d``, the poolings,
``batch_norm``) are ``torch_convolution``'s. ``braze.nn.functional`` exports them.

``inplace=True`` is accepted where PyTorch takes it, and a new tensor is returned: its
value is what PyTorch's in-place call returns; only the input is not overwritten.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

from braze import ops
from braze.ir.errors import DTypeError, ShapeError

# Modules, not names: braze.nn.functional imports this file while those are loading.
from braze.nn import activations, keras_random, layers
from braze.ops import tensorflow as tf_ops
from braze.ops.core import broadcast_shapes
from braze.ops.linalg import matmul_transposed
from braze.ops.random import Generator
from braze.tensor import Tensor, user_error
from braze.torch_methods import zero_safe_root

__all__ = [
    "cosine_similarity",
    "dropout",
    "elu",
    "hardtanh",
    "leaky_relu",
    "linear",
    "log_softmax",
    "normalize",
    "one_hot",
    "pad",
    "relu",
    "sigmoid",
    "silu",
    "softmax",
    "softplus",
    "tanh",
]


# Activations ------------------------------------------------------------------------------


def relu(input: Any, inplace: bool = False) -> Tensor:
    layers.check_inplace("relu", inplace)
    return ops.relu(ops.as_tensor(input))


def silu(input: Any, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)``."""
    layers.check_inplace("silu", inplace)
    return activations.silu(ops.as_tensor(input))


def leaky_relu(input: Any, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    layers.check_inplace("leaky_relu", inplace)
    return activations.leaky_relu(ops.as_tensor(input), float(negative_slope))


def elu(input: Any, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    layers.check_inplace("elu", inplace)
    return activations.elu(ops.as_tensor(input), float(alpha))


def softplus(input: Any, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold``.
    The smooth part is TensorFlow's formulation, which never overflows: a branch not taken
    has a finite gradient, so the selection's zero cotangent keeps it zero."""
    x = ops.as_tensor(input)
    scaled = x * beta if beta != 1 else x
    smooth = tf_ops.softplus(scaled)
    return ops.where(scaled > threshold, x, smooth / beta if beta != 1 else smooth)


def hardtanh(input: Any, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` clipped to ``[min_val, max_val]``; its gradient is 0 at the bounds too (PyTorch's
    ``hardtanh``, where ``clamp``'s, and braze's ``clip``'s, is 1 there)."""
    layers.check_inplace("hardtanh", inplace)
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val {min_val} cannot be greater than max_val {max_val}")
    x = ops.as_tensor(input)
    return ops.where(x <= min_val, float(min_val), ops.where(x >= max_val, float(max_val), x))


def tanh(input: Any) -> Tensor:
    return ops.tanh(ops.as_tensor(input))


def sigmoid(input: Any) -> Tensor:
    return ops.sigmoid(ops.as_tensor(input))


def _softmax_input(op: str, input: Any, dim: int | None, dtype: Any) -> tuple[Tensor, int]:
    x = ops.as_tensor(input)
    if dtype is not None:
        x = x.astype(dtype)
    if dim is None:  # PyTorch's deprecated implicit choice, with its warning
        message = f"Implicit dimension choice for {op} has been deprecated. Change the call to include dim=X."
        warnings.warn(message, stacklevel=3)
        dim = 0 if x.ndim in (0, 1, 3) else 1
    return x, dim


def _along(fn: Any, x: Tensor, dim: int) -> Tensor:
    """``fn(x, dim)``; a 0-d ``x`` is one element along its dim 0 (or -1), as PyTorch takes a
    scalar's (the implicit dim of a 0-d input is 0)."""
    if x.ndim == 0 and dim in (0, -1):
        return fn(x.reshape(1), 0).reshape(())
    return fn(x, dim)


def softmax(input: Any, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """The softmax over ``dim``; ``dtype`` converts the input first."""
    x, dim = _softmax_input("softmax", input, dim, dtype)
    return _along(ops.softmax, x, dim)


def log_softmax(input: Any, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """The log of the softmax over ``dim``, computed stably."""
    x, dim = _softmax_input("log_softmax", input, dim, dtype)
    return _along(ops.log_softmax, x, dim)


# Linear layers and dropout ----------------------------------------------------------------


def linear(input: Any, weight: Any, bias: Any = None) -> Tensor:
    """``input @ weight.T + bias``, ``weight`` of shape (out_features, in_features)."""
    x, w = ops.as_tensor(input), ops.as_tensor(weight)
    if w.ndim != 2 or x.ndim == 0 or x.shape[-1] != w.shape[1]:
        raise user_error(
            ShapeError, f"linear: input {tuple(x.shape)} and weight {tuple(w.shape)} (out, in) do not multiply"
        )
    # One product contracting both last axes: the weight is never copied transposed.
    y = matmul_transposed(x, w) if x.ndim > 1 else matmul_transposed(x.reshape(1, -1), w).reshape(-1)
    return y if bias is None else y + bias


def check_probability(op: str, p: float) -> float:
    if not 0 <= p <= 1:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")
    return float(p)


def dropout(
    input: Any,
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """While ``training``: each element zeroed with probability ``p``, the rest scaled by
    ``1 / (1 - p)``; the draws come from ``generator`` (braze's; the default stream, which
    ``braze.manual_seed`` seeds, when None)."""
    p = check_probability("dropout", p)
    layers.check_inplace("dropout", inplace)
    x = ops.as_tensor(input)
    if not training or p == 0:
        return x
    if p == 1:
        return x * 0.0
    return keras_random.dropout(x, p, seed=generator)


# Normalization ----------------------------------------------------------------------------


def _vector_norm(x: Tensor, p: float, dim: int) -> Tensor:
    """The p-norm over ``dim`` (kept), whose gradient at a zero vector is 0 (PyTorch's)."""
    if p in (1, 2, math.inf):
        return x.norm(p, dim=dim, keepdim=True)
    if p <= 0:
        raise ValueError(f"normalize: p must be positive, got {p}")
    return zero_safe_root(ops.sum(ops.abs(x) ** p, axis=dim, keepdims=True), p)


def normalize(input: Any, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``input / max(||input||_p, eps)``, the norm over ``dim``."""
    x = ops.as_tensor(input)
    return x / ops.maximum(_vector_norm(x, float(p), dim), float(eps))


def cosine_similarity(x1: Any, x2: Any, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between ``x1`` and ``x2`` (broadcast together) along ``dim``:
    each divided by its norm, at least ``eps``, then the dot product (PyTorch's formula)."""
    a, b = ops.as_tensor(x1), ops.as_tensor(x2)
    shape = broadcast_shapes("cosine_similarity", a.shape, b.shape)
    a, b = ops.broadcast_to(a, shape), ops.broadcast_to(b, shape)
    a = a / ops.maximum(_vector_norm(a, 2.0, dim), float(eps))
    b = b / ops.maximum(_vector_norm(b, 2.0, dim), float(eps))
    return ops.sum(a * b, axis=dim)


# Padding and encoding ---------------------------------------------------------------------

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input: Any, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """``pad`` lists (before, after) pairs from the LAST axis backwards: ``(left, right)``
    pads the last axis, ``(left, right, top, bottom)`` the last two. A negative amount crops.
    "reflect" mirrors without repeating the edge, "replicate" repeats the edge, "circular"
    wraps around."""
    x = ops.as_tensor(input)
    widths = [int(p) for p in pad]
    if len(widths) % 2 or len(widths) // 2 > x.ndim:
        raise ValueError(f"pad: {len(widths)} amounts for {x.ndim} axes: (before, after) pairs, one per axis at most")
    pairs = [(0, 0)] * x.ndim
    for i in range(len(widths) // 2):
        pairs[x.ndim - 1 - i] = (widths[2 * i], widths[2 * i + 1])
    if mode == "constant":
        return _pad_constant(x, pairs, 0.0 if value is None else value)
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode must be one of {', '.join(_PAD_MODES)}, got {mode!r}")
    if value:
        raise ValueError(f"pad: padding mode {mode!r} doesn't take in value argument")
    for axis, (before, after) in enumerate(pairs):
        if before or after:
            x = _pad_or_crop_axis(x, axis, before, after, mode)
    return x


def _pad_constant(x: Tensor, pairs: list[tuple[int, int]], value: float) -> Tensor:
    for axis, ((before, after), size) in enumerate(zip(pairs, x.shape, strict=True)):
        if size + before + after < 0:
            raise ValueError(
                f"pad: cropping ({before}, {after}) along axis {axis} of size {size} leaves a negative size"
            )
    grown = [(max(a, 0), max(b, 0)) for a, b in pairs]
    if any(a or b for a, b in grown):
        x = ops.pad(x, grown, value=value)
    if all(a >= 0 and b >= 0 for a, b in pairs):
        return x
    return x[tuple(slice(max(-a, 0), n + min(b, 0)) for (a, b), n in zip(pairs, x.shape, strict=True))]


def _crop_axis(x: Tensor, axis: int, before: int, after: int) -> Tensor:
    index = [slice(None)] * x.ndim
    index[axis] = slice(before, x.shape[axis] - after)
    return x[tuple(index)]


def _pad_or_crop_axis(x: Tensor, axis: int, before: int, after: int, mode: str) -> Tensor:
    """One axis padded by the positive amounts and cropped by the negative ones, in
    PyTorch's order: "reflect" and "replicate" pad first, so that they mirror or repeat the
    input's own edge (a crop of 3 then a reflection of 4 reads back into the cropped part, as
    PyTorch's kernels index); "circular" crops first and wraps what is left."""
    size = x.shape[axis]
    grow, crop = (max(before, 0), max(after, 0)), (max(-before, 0), max(-after, 0))
    what = f"{mode} padding of ({before}, {after}) along axis {axis} of size {size}"
    # PyTorch's limits: a reflection shorter than the input, a wrap around what the crop
    # leaves once at most; an empty result from circular only.
    room = {"reflect": size - 1, "circular": size - sum(crop)}.get(mode, max(grow))
    if max(grow) > room:
        raise ValueError(f"pad: {what} is too large")
    if size + before + after < (0 if mode == "circular" else 1):
        raise ValueError(f"pad: {what} crops too much, leaving {size + before + after} elements")
    if mode == "circular":
        return _pad_axis(_crop_axis(x, axis, *crop), axis, *grow, mode)
    return _crop_axis(_pad_axis(x, axis, *grow, mode), axis, *crop)


def _pad_axis(x: Tensor, axis: int, before: int, after: int, mode: str) -> Tensor:
    if not (before or after):
        return x
    size = x.shape[axis]

    def part(start: int, stop: int) -> Tensor:
        index = [slice(None)] * x.ndim
        index[axis] = slice(start, stop)
        return x[tuple(index)]

    def repeated(edge: Tensor, count: int) -> Tensor:
        return ops.broadcast_to(edge, tuple(count if d == axis else n for d, n in enumerate(x.shape)))

    if mode == "reflect":
        parts = [ops.flip(part(1, before + 1), axis), x, ops.flip(part(size - 1 - after, size - 1), axis)]
    elif mode == "replicate":
        parts = [repeated(part(0, 1), before), x, repeated(part(size - 1, size), after)]
    else:
        parts = [part(size - before, size), x, part(0, after)]
    return ops.concatenate([p for p in parts if p.shape[axis]], axis)


def one_hot(tensor: Any, num_classes: int = -1) -> Tensor:
    """int64 ``out[..., k] = (tensor[...] == k)``; ``num_classes=-1`` reads the largest
    value (one more class than it), which a compiled function cannot. A value outside
    ``[0, num_classes)`` gives a row of zeros where PyTorch raises."""
    labels = ops.as_tensor(tensor)
    if labels.dtype.kind not in "iu":
        raise user_error(DTypeError, f"one_hot: is only applicable to index tensors, got {labels.dtype.name}")
    if num_classes == -1:
        if not labels.size:  # no largest value to read the classes from (PyTorch raises too)
            raise ValueError("one_hot: cannot infer the number of classes from an empty tensor; give num_classes")
        num_classes = int(ops.max(labels).item()) + 1
    return ops.one_hot(labels.astype("int64"), int(num_classes), "int64")
