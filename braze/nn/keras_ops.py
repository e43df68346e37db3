"""``keras.ops``: the common functions, under Keras's names and arguments, each working on
tensors (and arrays) and on the symbolic tensors of the functional API, where a call
records a node of the model (``x = keras.ops.mean(inputs, axis=1)``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from braze import array_api, ops
from braze.ir.errors import TraceError
from braze.nn import activations, ctc
from braze.nn.losses import binary_cross_entropy_elements
from braze.nn.symbolic import KerasTensor, symbolic_op
from braze.ops import strings, tf_image
from braze.ops import tensorflow as tf_ops
from braze.ops.core import normalize_axis
from braze.ops.image import extract_patches
from braze.ops.tensorflow import plain
from braze.tensor import Tensor

_EPSILON = 1e-7  # Keras's backend.epsilon(): how far probabilities are kept from 0 and 1


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


def _one_hot(x: Any, num_classes: int, axis: int = -1, dtype: Any = None, sparse: bool = False) -> Tensor:
    if sparse:
        raise NotImplementedError("keras.ops.one_hot: sparse=True is not supported (braze has no sparse tensors)")
    return tf_ops.one_hot(x, num_classes, axis=axis, dtype=dtype or "float32")


def _cast(x: Any, dtype: Any) -> Tensor:
    return ops.astype(ops.as_tensor(x), dtype)


def _convert_to_tensor(x: Any, dtype: Any = None, sparse: Any = None, ragged: Any = None) -> Any:
    """A tensor of ``x``; text stays a NumPy array of ``str`` (braze's string tensor)."""
    if dtype is not None and str(dtype) in ("string", "str") or strings.is_text(x):
        return strings.as_strings(x, "convert_to_tensor")
    return ops.as_tensor(x, dtype=dtype)


def _reshape(x: Any, newshape: Any = None, shape: Any = None) -> Tensor:
    """``x`` in ``newshape`` (Keras's name; ``shape`` as braze's)."""
    if (newshape is None) == (shape is None):
        raise TypeError("reshape: give the new shape once, as newshape (or shape)")
    return ops.reshape(x, newshape if newshape is not None else shape)


def _square(x: Any) -> Tensor:
    x = ops.as_tensor(x)
    return x * x


def _concatenate(xs: Sequence[Any], axis: int = 0) -> Tensor:
    return ops.concatenate(xs, axis)


# Arrays: tiling, splitting, indexing ----------------------------------------------------


def _tile(x: Any, repeats: Any) -> Tensor:
    """NumPy's tile: ``repeats`` an int or one count per axis."""
    return plain(array_api.tile(ops.as_tensor(x), (repeats,) if isinstance(repeats, int) else repeats))


def _repeat(x: Any, repeats: Any, axis: int | None = None) -> Tensor:
    return tf_ops.repeat(x, repeats, axis)


def _split(x: Any, indices_or_sections: Any, axis: int = 0) -> list[Tensor]:
    """NumPy's split: into equal sections, or at the indices listed."""
    x = ops.as_tensor(x)
    if isinstance(indices_or_sections, (int, np.integer)):
        return tf_ops.split(x, indices_or_sections, axis)
    d = normalize_axis("split", axis, x.ndim)
    bounds = [0, *(int(i) for i in indices_or_sections), x.shape[d]]
    return [x[(slice(None),) * d + (slice(a, b),)] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _take(x: Any, indices: Any, axis: int | None = None) -> Tensor:
    return ops.take(x, indices, axis)


def _take_along_axis(x: Any, indices: Any, axis: int | None = None) -> Tensor:
    return ops.take_along_axis(x, indices, axis)


def _unstack(x: Any, num: int | None = None, axis: int = 0) -> list[Tensor]:
    return tf_ops.unstack(x, num, axis)


def _top_k(x: Any, k: int, sorted: bool = True) -> tuple[Tensor, Tensor]:  # noqa: A002 - Keras's name
    return ops.topk(x, k)  # sorted or not, the values come largest first


def _linspace(
    start: Any, stop: Any, num: int = 50, endpoint: bool = True, retstep: bool = False, dtype: Any = None, axis: int = 0
) -> Any:
    if np.ndim(start) or np.ndim(stop):  # ``axis`` places the samples of array bounds only
        raise NotImplementedError("keras.ops.linspace: start and stop must be numbers (arrays are not supported)")
    start, stop = float(start), float(stop)
    values = plain(array_api.linspace(start, stop, int(num), dtype=dtype or "float32", endpoint=endpoint))
    if not retstep:
        return values
    steps = num - 1 if endpoint else num
    return values, (stop - start) / steps if steps > 0 else float("nan")


def _meshgrid(*x: Any, indexing: str = "xy") -> list[Tensor]:
    return plain(array_api.meshgrid(*(ops.as_tensor(a) for a in x), indexing=indexing))


def _roll(x: Any, shift: Any, axis: Any = None) -> Tensor:
    return plain(array_api.roll(ops.as_tensor(x), shift, axis=axis))


def _tensordot(x1: Any, x2: Any, axes: Any = 2) -> Tensor:
    return tf_ops.tensordot(x1, x2, axes)


def _eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None) -> Tensor:  # noqa: N803 - Keras's names
    return plain(array_api.eye(int(N), None if M is None else int(M), k=k, dtype=dtype or "float32"))


def _identity(n: int, dtype: Any = None) -> Tensor:
    return _eye(n, dtype=dtype)


def _moveaxis(x: Any, source: Any, destination: Any) -> Tensor:
    return plain(array_api.moveaxis(ops.as_tensor(x), source, destination))


def _dot(x1: Any, x2: Any) -> Tensor:
    """NumPy's dot: the last axis of ``x1`` against the second-to-last of ``x2`` (its only one
    when it is a vector); a product when either is a number."""
    a, b = ops.as_tensor(x1), ops.as_tensor(x2)
    if a.ndim == 0 or b.ndim == 0:
        return ops.multiply(a, b)
    return _tensordot(a, b, (a.ndim - 1, max(b.ndim - 2, 0)))


def _outer(x1: Any, x2: Any) -> Tensor:
    return ops.multiply(ops.reshape(x1, (-1, 1)), ops.reshape(x2, (1, -1)))


def _vstack(xs: Sequence[Any]) -> Tensor:
    items = [ops.as_tensor(x) for x in xs]
    return ops.concatenate([x.reshape((1, -1)) if x.ndim < 2 else x for x in items], 0)


def _hstack(xs: Sequence[Any]) -> Tensor:
    items = [ops.as_tensor(x) for x in xs]
    items = [x.reshape((1,)) if x.ndim == 0 else x for x in items]
    return ops.concatenate(items, 0 if items and items[0].ndim == 1 else 1)


def _ravel(x: Any) -> Tensor:
    return ops.reshape(x, (-1,))


def _slice(inputs: Any, start_indices: Any, shape: Any) -> Tensor:
    """The block of ``shape`` at ``start_indices``, which must lie inside ``inputs`` (braze
    reads start indices given as tensors)."""
    x = ops.as_tensor(inputs)
    starts, sizes = [int(s) for s in start_indices], [int(s) for s in shape]
    if len(starts) != x.ndim or len(sizes) != x.ndim:
        raise ValueError(f"keras.ops.slice: {x.ndim} start indices and sizes needed, got {starts} and {sizes}")
    if any(not 0 <= s <= s + n <= d for s, n, d in zip(starts, sizes, x.shape, strict=True)):
        raise ValueError(f"keras.ops.slice: a block of {sizes} at {starts} does not fit in {x.shape}")
    return x[tuple(slice(s, s + n) for s, n in zip(starts, sizes, strict=True))]


def _segment_sum(data: Any, segment_ids: Any, num_segments: int | None = None, sorted: bool = False) -> Tensor:  # noqa: A002
    if num_segments is None:
        raise NotImplementedError("keras.ops.segment_sum: give num_segments (braze's shapes cannot follow the ids)")
    return tf_ops.unsorted_segment_sum(data, segment_ids, num_segments)


def _expand_dims(x: Any, axis: Any) -> Tensor:
    """``x`` with an axis of 1 at ``axis``, or at each of a tuple of axes (NumPy's rule: the
    positions are in the result)."""
    x = ops.as_tensor(x)
    if isinstance(axis, (int, np.integer)):
        return ops.expand_dims(x, int(axis))
    rank = x.ndim + len(axis)
    positions = {normalize_axis("expand_dims", int(a), rank) for a in axis}
    if len(positions) != len(axis):
        raise ValueError(f"keras.ops.expand_dims: repeated axis in {tuple(axis)}")
    sizes = iter(x.shape)
    return ops.reshape(x, tuple(1 if d in positions else next(sizes) for d in range(rank)))


def _pad(x: Any, pad_width: Any, mode: str = "constant", constant_values: Any = None) -> Tensor:
    """NumPy's pad in Keras's modes ``constant`` (``constant_values``, 0 by default),
    ``reflect`` (the edge not repeated) and ``symmetric`` (the edge repeated)."""
    x = ops.as_tensor(x)
    if mode == "constant":
        return ops.pad(x, pad_width, 0.0 if constant_values is None else float(constant_values))
    if constant_values is not None:
        raise ValueError(f"keras.ops.pad: constant_values is for mode='constant', not {mode!r}")
    if mode not in ("reflect", "symmetric"):
        raise NotImplementedError(f"keras.ops.pad: mode={mode!r} (constant, reflect and symmetric are supported)")
    pairs = [(pad_width, pad_width)] * x.ndim if isinstance(pad_width, int) else [tuple(p) for p in pad_width]
    if len(pairs) != x.ndim:
        raise ValueError(f"keras.ops.pad: {x.ndim} (before, after) pairs needed, got {pad_width}")
    skip = 1 if mode == "reflect" else 0  # reflect mirrors about the edge element, symmetric after it
    for d, (before, after) in enumerate(pairs):
        if max(before, after) > x.shape[d] - skip:
            raise ValueError(
                f"keras.ops.pad: {mode} padding of ({before}, {after}) on axis {d} of size {x.shape[d]} needs at most "
                f"{x.shape[d] - skip} a side"
            )
        x = _mirrored(x, d, before, after, skip)
    return x


def _mirrored(x: Tensor, d: int, before: int, after: int, skip: int) -> Tensor:
    """``x`` with ``before`` and ``after`` elements mirrored onto axis ``d``'s ends, ``skip``
    edge elements left out of each mirror."""

    def flipped(start: int, stop: int) -> Tensor:
        return ops.flip(x[(slice(None),) * d + (slice(start, stop),)], d)

    size = x.shape[d]
    pieces = [flipped(skip, skip + before)] if before else []
    pieces.append(x)
    if after:
        pieces.append(flipped(size - skip - after, size - skip))
    return ops.concatenate(pieces, d)


def _isclose(x1: Any, x2: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> Tensor:
    """NumPy's ``|x1 - x2| <= atol + rtol * |x2|`` (equal infinities are close)."""
    a, b = ops.as_tensor(x1), ops.as_tensor(x2)
    if a.dtype != b.dtype:  # compared in one dtype, as Keras promotes them
        common = str(np.result_type(a.dtype.numpy, b.dtype.numpy))
        a, b = ops.astype(a, common), ops.astype(b, common)
    close = ops.logical_or(a == b, ops.abs(a - b) <= atol + rtol * ops.abs(b))
    if equal_nan:
        close = ops.logical_or(close, ops.logical_and(a != a, b != b))
    return close


def _tril(x: Any, k: int = 0) -> Tensor:
    return ops.tril(x, k)


def _triu(x: Any, k: int = 0) -> Tensor:
    return ops.triu(x, k)


def _cumprod(x: Any, axis: int | None = None, dtype: Any = None) -> Tensor:
    return ops.cumprod(ops.as_tensor(x, dtype), axis)


def _relu6(x: Any) -> Tensor:
    return ops.clip(ops.as_tensor(x), 0.0, 6.0)


def _hard_sigmoid(x: Any) -> Tensor:
    """Keras 3's ``relu6(x + 3) / 6``."""
    return ops.clip(ops.as_tensor(x) / 6.0 + 0.5, 0.0, 1.0)


# Math -----------------------------------------------------------------------------------


def _of_floats(op: Any) -> Any:
    """``op`` of floats, integers and bools taken as float32 first, as Keras does."""

    def function(x: Any) -> Tensor:
        x = ops.as_tensor(x)
        return op(x if x.dtype.is_float else ops.astype(x, "float32"))

    function.__doc__ = op.__doc__
    return function


def _array_test(test: str) -> Any:
    def function(x: Any) -> Tensor:
        return plain(getattr(array_api, test)(ops.as_tensor(x)))

    return function


def _logical_reduction(test: str) -> Any:
    def function(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
        return plain(getattr(array_api, test)(ops.as_tensor(x), axis=axis, keepdims=keepdims))

    return function


def _count_nonzero(x: Any, axis: Any = None) -> Tensor:
    return plain(array_api.count_nonzero(ops.as_tensor(x), axis=axis))


def _cumsum(x: Any, axis: int | None = None, dtype: Any = None) -> Tensor:
    return ops.cumsum(ops.as_tensor(x, dtype), axis)


def _round(x: Any, decimals: int = 0) -> Tensor:
    """To ``decimals`` places (halves to even), scaled by a power of ten as NumPy does."""
    x = ops.as_tensor(x)
    if decimals == 0:
        return ops.round(x)
    if not x.dtype.is_float:
        raise NotImplementedError("keras.ops.round: decimals other than 0 are supported for floats only")
    if decimals > 0:
        return ops.round(x * 10.0**decimals) / 10.0**decimals
    return ops.round(x / 10.0**-decimals) * 10.0**-decimals


def _stop_gradient(variable: Any) -> Tensor:
    return ops.as_tensor(variable).detach()


def _normalize(x: Any, axis: Any = -1, order: int = 2, epsilon: float | None = None) -> Tensor:
    """``x / max(norm(x), epsilon)`` along ``axis``: the L2 norm by ``rsqrt``, as Keras."""
    if not isinstance(order, int) or order < 1:
        raise ValueError(f"keras.ops.normalize: order must be an int >= 1, got {order!r}")
    x = ops.as_tensor(x)
    x = x if x.dtype.is_float else ops.astype(x, "float32")
    x = x.reshape((1,)) if x.ndim == 0 else x
    epsilon = _EPSILON if epsilon is None else epsilon
    if order == 2:
        return x * ops.minimum(ops.rsqrt(ops.sum(x * x, axis, keepdims=True)), 1.0 / epsilon)
    if not isinstance(axis, (int, np.integer)):
        raise NotImplementedError("keras.ops.normalize: orders other than 2 need a single axis")
    norm = ops.power(ops.sum(ops.power(ops.abs(x), float(order)), axis, keepdims=True), 1.0 / order)
    return x / ops.maximum(norm, epsilon)


def _nan_to_num(x: Any, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    x = ops.as_tensor(x)
    if not x.dtype.is_float:
        return x
    info = array_api.finfo(x.dtype)
    x = ops.where(x != x, nan, x)
    x = ops.where(x == float("inf"), info.max if posinf is None else posinf, x)
    return ops.where(x == float("-inf"), info.min if neginf is None else neginf, x)


def _average(x: Any, axis: int | None = None, weights: Any = None) -> Tensor:
    """The mean along ``axis``, or NumPy's weighted average: weights of ``x``'s shape, or a
    1-D one along ``axis``."""
    x = ops.as_tensor(x)
    if weights is None:
        return ops.mean(x, axis)
    x = x if x.dtype.is_float else ops.astype(x, "float32")
    w = ops.as_tensor(weights, x.dtype)  # in the values' float dtype, as Keras's backends compute it
    if w.ndim == 1 and x.ndim > 1 and axis is not None:
        d = normalize_axis("average", axis, x.ndim)
        w = w.reshape(tuple(w.shape[0] if k == d else 1 for k in np.arange(x.ndim)))
    return ops.divide(ops.sum(x * w, axis), ops.sum(w, axis))


def _size(x: Any) -> Tensor:
    """The number of elements, as a 0-d int32 tensor (as TensorFlow's backend gives it), so
    that a symbolic tensor's is known when the model runs."""
    x = ops.as_tensor(x)
    return ops.full((), x.size, "int32", device=x.device)


def ndim(x: Any) -> int:
    """The number of axes (known for symbolic tensors too)."""
    return len(x.shape)


# Losses ---------------------------------------------------------------------------------


def _same_shape(op: str, target: Tensor, output: Tensor) -> None:
    if target.shape != output.shape:
        raise ValueError(f"keras.ops.{op}: target {target.shape} and output {output.shape} must have one shape")


def _log_probabilities(output: Tensor, from_logits: bool, axis: int) -> Tensor:
    if from_logits:
        return ops.log_softmax(output, axis)
    # Keras rescales probabilities to sum to 1, then keeps them from 0 and 1.
    output = output / ops.sum(output, axis, keepdims=True)
    return ops.log(ops.clip(output, _EPSILON, 1.0 - _EPSILON))


def _binary_crossentropy(target: Any, output: Any, from_logits: bool = False) -> Tensor:
    output = ops.as_tensor(output)
    target = ops.as_tensor(target, output.dtype)
    _same_shape("binary_crossentropy", target, output)
    return binary_cross_entropy_elements(output, target, from_logits)


def _categorical_crossentropy(target: Any, output: Any, from_logits: bool = False, axis: int = -1) -> Tensor:
    output = ops.as_tensor(output)
    target = ops.as_tensor(target, output.dtype)
    _same_shape("categorical_crossentropy", target, output)
    return -ops.sum(target * _log_probabilities(output, from_logits, axis), axis)


def _sparse_categorical_crossentropy(target: Any, output: Any, from_logits: bool = False, axis: int = -1) -> Tensor:
    output = ops.as_tensor(output)
    labels = ops.as_tensor(target, "int32")
    if labels.ndim == output.ndim and labels.shape[-1] == 1:
        labels = ops.squeeze(labels, -1)
    if labels.shape != output.shape[:-1]:
        raise ValueError(f"keras.ops.sparse_categorical_crossentropy: labels {labels.shape} for output {output.shape}")
    hot = tf_ops.one_hot(labels, output.shape[axis], axis=axis, dtype=output.dtype)
    return -ops.sum(hot * _log_probabilities(output, from_logits, axis), axis)


def cond(pred: Any, true_fn: Any, false_fn: Any) -> Any:
    """``true_fn()`` when ``pred`` holds, else ``false_fn()``: the predicate must have a value
    now (a bool, or an eager tensor); for a symbolic or traced one, compute both branches and
    choose with ``keras.ops.where``."""
    if isinstance(pred, KerasTensor):
        raise TypeError(
            "keras.ops.cond: the predicate is symbolic: braze picks a branch only from a value known at the call; "
            "compute both branches and choose with keras.ops.where"
        )
    try:
        chosen = bool(pred)
    except TraceError as error:
        raise TraceError(
            "keras.ops.cond: the predicate is traced (under @jit or tf.function): braze picks a branch only from a "
            "value known at the call; compute both branches and choose with keras.ops.where"
        ) from error
    return true_fn() if chosen else false_fn()


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
    "all": _logical_reduction("all"),
    "any": _logical_reduction("any"),
    "arange": ops.arange,
    "argmax": ops.argmax,
    "argmin": ops.argmin,
    "argsort": ops.argsort,
    "average": _average,
    "binary_crossentropy": _binary_crossentropy,
    "cast": _cast,
    "categorical_crossentropy": _categorical_crossentropy,
    "ceil": _of_floats(ops.ceil),
    "clip": ops.clip,
    "concatenate": _concatenate,
    "convert_to_tensor": _convert_to_tensor,
    "cos": _of_floats(ops.cos),
    "count_nonzero": _count_nonzero,
    "ctc_decode": ctc.ctc_decode,
    "ctc_loss": ctc.ctc_loss,
    "cumprod": _cumprod,
    "cumsum": _cumsum,
    "divide": ops.divide,
    "dot": _dot,
    "einsum": ops.einsum,
    "elu": activations.elu,
    "equal": ops.equal,
    "exp": ops.exp,
    "expand_dims": _expand_dims,
    "expm1": _of_floats(ops.expm1),
    "eye": _eye,
    "flip": ops.flip,
    "floor": _of_floats(ops.floor),
    "floor_divide": ops.floor_divide,
    "full": ops.full,
    "full_like": ops.full_like,
    "gelu": activations.gelu,  # exact by default: how graphs saved before recorded it
    "greater": ops.greater,
    "greater_equal": ops.greater_equal,
    "hard_sigmoid": _hard_sigmoid,
    "hstack": _hstack,
    "identity": _identity,
    "isclose": _isclose,
    "isfinite": _array_test("isfinite"),
    "isnan": _array_test("isnan"),
    "leaky_relu": activations.leaky_relu,
    "less": ops.less,
    "less_equal": ops.less_equal,
    "linspace": _linspace,
    "log": ops.log,
    "log1p": _of_floats(ops.log1p),
    "log_sigmoid": tf_ops.log_sigmoid,
    "log_softmax": ops.log_softmax,
    "logical_and": ops.logical_and,
    "logical_not": ops.logical_not,
    "logical_or": ops.logical_or,
    "logsumexp": ops.logsumexp,
    "matmul": ops.matmul,
    "max": ops.max,
    "maximum": ops.maximum,
    "mean": ops.mean,
    "meshgrid": _meshgrid,
    "min": ops.min,
    "minimum": ops.minimum,
    "mod": ops.remainder,
    "moveaxis": _moveaxis,
    "multiply": ops.multiply,
    "nan_to_num": _nan_to_num,
    "negative": ops.negative,
    "norm": _norm,
    "normalize": _normalize,
    "not_equal": ops.not_equal,
    "one_hot": _one_hot,
    "ones": ops.ones,
    "ones_like": ops.ones_like,
    "outer": _outer,
    "pad": _pad,
    "power": ops.power,
    "ravel": _ravel,
    "relu": ops.relu,
    "relu6": _relu6,
    "repeat": _repeat,
    "reshape": _reshape,
    "roll": _roll,
    "round": _round,
    "rsqrt": ops.rsqrt,
    "segment_sum": _segment_sum,
    "selu": activations.selu,
    "sigmoid": ops.sigmoid,
    "sign": ops.sign,
    "silu": activations.silu,
    "sin": _of_floats(ops.sin),
    "size": _size,
    "slice": _slice,
    "softmax": ops.softmax,
    "softplus": activations.softplus,
    "sort": ops.sort,
    "sparse_categorical_crossentropy": _sparse_categorical_crossentropy,
    "split": _split,
    "sqrt": ops.sqrt,
    "square": _square,
    "squeeze": ops.squeeze,
    "stack": ops.stack,
    "std": _std,
    "stop_gradient": _stop_gradient,
    "subtract": ops.subtract,
    "sum": ops.sum,
    "swish": activations.silu,
    "take": _take,
    "take_along_axis": _take_along_axis,
    "tanh": ops.tanh,
    "tensordot": _tensordot,
    "tile": _tile,
    "top_k": _top_k,
    "transpose": ops.transpose,
    "tril": _tril,
    "triu": _triu,
    "unstack": _unstack,
    "var": ops.var,
    "vstack": _vstack,
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
    if data_format not in (None, "channels_last"):
        raise NotImplementedError("keras.ops.image.extract_patches: channels_last only")
    return extract_patches(ops.as_tensor(images), size, strides, padding, dilation_rate)


# keras.ops.image: the image functions, symbolic too.
IMAGE_FUNCTIONS = {"resize": symbolic_op(_resize), "extract_patches": symbolic_op(_extract_patches)}
FUNCTIONS: dict[str, Any] = {name: symbolic_op(fn) for name, fn in _WRAPPED.items()}
_SYMBOLIC_GELU = FUNCTIONS["gelu"]


def gelu(x: Any, approximate: bool = True) -> Any:
    """Keras 3's ``keras.ops.gelu``: the tanh approximation by default (its
    ``keras.activations.gelu`` is exact by default). The choice is passed on by name, so a
    saved functional graph records it; one saved when braze's default was exact loads exact."""
    return _SYMBOLIC_GELU(x, approximate=approximate)


FUNCTIONS.update(shape=shape, ndim=ndim, cond=cond, convert_to_numpy=convert_to_numpy, gelu=gelu)
for _name, _fn in [*FUNCTIONS.items(), *IMAGE_FUNCTIONS.items()]:
    _fn.__name__ = _name
