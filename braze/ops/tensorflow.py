"""TensorFlow's names for ops braze has (``tf.reduce_mean``, ``tf.concat``, ``tf.cast``,
``tf.one_hot``, ``tf.gather``, ``tf.math``...), so that a program that reads
``import braze as tf`` finds them, with TensorFlow's arguments (``name=`` is accepted and
ignored: braze's ops are not named)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from types import ModuleType, SimpleNamespace
from typing import Any, NamedTuple

import numpy as np

from braze.ir.dtypes import DEFAULT_FLOAT, DType, as_dtype, float64, int32, int64
from braze.ir.errors import DTypeError, ShapeError
from braze.ir.prims import indexing as index_prims
from braze.ir.prims import structural
from braze.ops import creation, indexing, reduction, selection, sorting, strings
from braze.ops import math as math_ops
from braze.ops import random as random_ops
from braze.ops import shape as shape_ops
from braze.ops.core import as_tensor, astype, normalize_axes, normalize_axis, operands
from braze.tensor import Tensor, user_error


def _reduction(op: Callable[[Any, Any, bool], Tensor], tf_name: str, doc: str) -> Callable[..., Tensor]:
    """``op(x, axis, keepdims)`` with TensorFlow's arguments, as ``tf.math.<tf_name>``."""

    def reduce(input_tensor: Any, axis: Any = None, keepdims: bool = False, name: str | None = None) -> Tensor:
        return op(input_tensor, axis, keepdims)

    reduce.__name__ = reduce.__qualname__ = tf_name
    reduce.__doc__ = f"{doc} over ``axis`` (all axes when None): ``tf.math.{tf_name}``."
    return reduce


def _mean(x: Any, axis: Any, keepdims: bool) -> Tensor:
    x = as_tensor(x)
    if x.dtype.kind != "i":
        return reduction.mean(x, axis, keepdims)
    # TensorFlow's mean of integers is an integer: the sum divided by the count in integers,
    # rounding toward zero.
    total = reduction.sum(x, axis, keepdims)
    count = int(np.prod([x.shape[a] for a in normalize_axes("reduce_mean", axis, x.ndim)]))
    return math_ops.sign(total) * math_ops.floor_divide(math_ops.abs(total), max(count, 1))


def _std(x: Any, axis: Any, keepdims: bool) -> Tensor:
    return math_ops.sqrt(reduction.var(x, axis, keepdims))


def _euclidean_norm(x: Any, axis: Any, keepdims: bool) -> Tensor:
    x = as_tensor(x)
    return math_ops.sqrt(reduction.sum(x * x, axis, keepdims))


def _true_count(op: str, x: Tensor, axis: Any, keepdims: bool) -> Tensor:
    if x.dtype.kind != "b":
        raise user_error(DTypeError, f"tf.math.{op}: expected a bool tensor, got {x.dtype.name}")
    return reduction.sum(astype(x, int32), axis, keepdims)


def _any(x: Any, axis: Any, keepdims: bool) -> Tensor:
    return _true_count("reduce_any", as_tensor(x), axis, keepdims) > 0


def _all(x: Any, axis: Any, keepdims: bool) -> Tensor:
    x = as_tensor(x)
    return _true_count("reduce_all", math_ops.logical_not(x) if x.dtype.kind == "b" else x, axis, keepdims) == 0


reduce_sum = _reduction(reduction.sum, "reduce_sum", "The sum")
reduce_mean = _reduction(_mean, "reduce_mean", "The mean (of integers, an integer rounded toward zero)")
reduce_max = _reduction(reduction.max, "reduce_max", "The maximum")
reduce_min = _reduction(reduction.min, "reduce_min", "The minimum")
reduce_prod = _reduction(reduction.prod, "reduce_prod", "The product")
reduce_variance = _reduction(reduction.var, "reduce_variance", "The (biased) variance")
reduce_std = _reduction(_std, "reduce_std", "The (biased) standard deviation")
reduce_logsumexp = _reduction(reduction.logsumexp, "reduce_logsumexp", "``log(sum(exp(x)))``, computed stably,")
reduce_euclidean_norm = _reduction(_euclidean_norm, "reduce_euclidean_norm", "``sqrt(sum(x * x))``")
reduce_any = _reduction(_any, "reduce_any", "Whether any element is True (False for none)")
reduce_all = _reduction(_all, "reduce_all", "Whether every element is True (True for none)")


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


def square(x: Any, name: str | None = None) -> Tensor:
    """``x * x``: ``tf.square``."""
    x = as_tensor(x)
    return x * x


def clip_by_value(t: Any, clip_value_min: Any, clip_value_max: Any) -> Tensor:
    """``t`` clipped to ``[clip_value_min, clip_value_max]``: ``tf.clip_by_value``."""
    return math_ops.clip(t, clip_value_min, clip_value_max)


def _normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = "float32", seed: int | None = None):
    return random_ops.randn(shape, dtype, seed=seed) * stddev + mean


def _uniform(shape: Any, minval: float = 0.0, maxval: float = 1.0, dtype: Any = "float32", seed: int | None = None):
    return random_ops.uniform(shape, minval, maxval, dtype, seed=seed)


def _set_seed(seed: int) -> None:
    """``tf.random.set_seed``: seed braze's default generator and NumPy's global one, which a
    dataset's ``shuffle`` without a seed draws from (TensorFlow's global seed fixes it too)."""
    random_ops.manual_seed(seed)
    np.random.seed(seed)


# tf.random: samples from braze's default generator (tf.random.set_seed seeds it).
random = SimpleNamespace(normal=_normal, uniform=_uniform, set_seed=_set_seed)


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


# Arrays: indexing, tiling, splitting ---------------------------------------------------


def plain(result: Any) -> Any:
    """A ``braze.array_api`` result (an ``Array``, or a sequence of them) as plain braze
    Tensors, whose operators are braze's rather than the Array API's: a reshape to its own
    shape, through which gradients flow as through any op."""
    if isinstance(result, (list, tuple)):
        return [plain(r) for r in result]
    return structural.reshape.bind(result, new_sizes=tuple(result.shape))


def _array_api() -> ModuleType:
    # Imported at the first call: braze.array_api is built on braze.ops, which imports this
    # module, and ``import braze`` need not load it.
    from braze import array_api

    return array_api


def _is_dtype(value: Any) -> bool:
    """Whether ``value`` names a dtype (braze's, a name, or NumPy's), not a number."""
    if isinstance(value, (DType, str, np.dtype)) or (isinstance(value, type) and issubclass(value, np.generic)):
        try:
            as_dtype(value, "one_hot")
        except DTypeError:
            return False
        return True
    return False


def one_hot(
    indices: Any,
    depth: int,
    on_value: Any = None,
    off_value: Any = None,
    axis: int | None = None,
    dtype: Any = None,
    name: str | None = None,
) -> Tensor:
    """``on_value`` where ``indices`` has the class, ``off_value`` elsewhere, along a new axis
    of ``depth`` classes at ``axis`` (the last when None or -1): ``tf.one_hot``. Indices
    outside ``[0, depth)`` give ``off_value`` throughout. The dtype is ``dtype``, else that
    of ``on_value`` or ``off_value``, else float32."""
    if _is_dtype(on_value) and off_value is None and dtype is None:
        on_value, dtype = None, on_value  # braze's own one_hot(labels, num_classes, dtype), called so before
    if dtype is None:
        given = on_value if on_value is not None else off_value
        dtype = as_tensor(given).dtype if given is not None else DEFAULT_FLOAT
    indices = as_tensor(indices)
    if indices.dtype.is_float:  # TensorFlow takes float labels (the guides' float32 arrays) as integers
        indices = astype(indices, int32)
    hot = creation.one_hot(indices, depth, dtype="bool")
    if axis is not None and axis != -1:  # the classes' axis, made last, moves to ``axis``
        order = [int(d) for d in np.arange(hot.ndim - 1)]
        order.insert(normalize_axis("one_hot", axis, hot.ndim), hot.ndim - 1)
        hot = shape_ops.transpose(hot, order)
    if on_value is None and off_value is None:
        return astype(hot, dtype)
    on = as_tensor(1 if on_value is None else on_value, dtype)
    off = as_tensor(0 if off_value is None else off_value, dtype)
    return math_ops.where(hot, on, off)


def gather(
    params: Any,
    indices: Any,
    validate_indices: Any = None,
    axis: int | None = None,
    batch_dims: int = 0,
    name: str | None = None,
) -> Tensor:
    """The slices of ``params`` at ``indices`` along ``axis`` (0 when None): ``tf.gather``;
    the result's shape is ``params.shape[:axis] + indices.shape + params.shape[axis + 1:]``.
    As on TensorFlow's CPU, an index outside ``[0, params.shape[axis])`` (a negative one
    too) raises; compiled, it is clamped."""
    if batch_dims != 0:
        raise NotImplementedError(f"tf.gather: batch_dims={batch_dims} is not supported (only 0)")
    params = as_tensor(params)
    d = normalize_axis("gather", 0 if axis is None else int(axis), params.ndim)
    idx = indexing.checked("gather", indexing.index_tensor("gather", indices, params.device), params.shape[d], d, False)
    return indexing.take(params, idx, d)


def expand_dims(input: Any, axis: int, name: str | None = None) -> Any:  # noqa: A002 - TensorFlow's name
    """``input`` with a new axis of size 1 at ``axis``: ``tf.expand_dims``, which takes text
    too (a NumPy array of ``str``, braze's string tensor: see :mod:`braze.ops.strings`)."""
    if strings.is_text(input):
        return np.expand_dims(strings.as_strings(input, "tf.expand_dims"), axis)
    return shape_ops.expand_dims(input, axis)


def identity(input: Any, name: str | None = None) -> Tensor:  # noqa: A002 - TensorFlow's name
    """A new tensor of ``input``'s value (a later ``assign`` to ``input`` leaves it as it
    is): ``tf.identity``."""
    x = as_tensor(input)
    return shape_ops.reshape(x, (*x.shape, 1)).reshape(x.shape)  # a new tensor of the same values


def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """Elements of ``x`` where ``condition`` holds, else of ``y``; with neither, the
    coordinates (int64, one row each) of the true elements: ``tf.where``."""
    if x is None and y is None:
        return as_tensor(np.argwhere(np.asarray(as_tensor(condition).numpy())).astype(np.int64))
    if x is None or y is None:
        raise ValueError("tf.where: give both x and y, or neither")
    return math_ops.where(condition, x, y)


def numpy_function(  # noqa: N803 - TensorFlow's names
    func: Callable[..., Any], inp: Sequence[Any], Tout: Any, stateful: bool = True, name: str | None = None
) -> Any:
    """``func`` called on NumPy arrays of ``inp``, its results as tensors of ``Tout``'s
    dtypes: ``tf.numpy_function``. It runs Python, so it runs eagerly (in a dataset's map, or
    outside a compiled step); a compiled step cannot call it."""
    return _results(func(*[_host(v) for v in inp]), Tout)


def py_function(func: Callable[..., Any], inp: Sequence[Any], Tout: Any, name: str | None = None) -> Any:  # noqa: N803 - TensorFlow's names
    """``func`` called on the tensors of ``inp``, eagerly, its results as tensors of
    ``Tout``'s dtypes: ``tf.py_function``."""
    return _results(func(*[v if strings.is_text(v) else as_tensor(v) for v in inp]), Tout)


def _host(value: Any) -> np.ndarray:
    """A tensor's values, or text, as a NumPy array."""
    return strings.as_strings(value) if strings.is_text(value) else np.asarray(as_tensor(value).numpy())


def _results(values: Any, dtypes: Any) -> Any:
    """A Python function's results as tensors of ``dtypes`` (one, or a list of them)."""
    if isinstance(dtypes, (list, tuple)):
        outputs = values if isinstance(values, (list, tuple)) else [values]
        if len(outputs) != len(dtypes):
            raise ValueError(f"the function returned {len(outputs)} values for {len(dtypes)} dtypes in Tout")
        return [_result(v, d) for v, d in zip(outputs, dtypes, strict=True)]
    return _result(values, dtypes)


def _result(value: Any, dtype: Any) -> Any:
    if str(dtype) in ("string", "str"):  # text stays text
        return strings.as_strings(value)
    return as_tensor(value.numpy() if isinstance(value, Tensor) else np.asarray(value), dtype=as_dtype(dtype))


def tensordot(a: Any, b: Any, axes: Any, name: str | None = None) -> Tensor:
    """The sum of products over ``axes``: the last ``axes`` of ``a`` with the first of ``b``,
    or a pair of axes (or of lists of axes): ``tf.tensordot``, NumPy's ``tensordot``."""
    if not isinstance(axes, (int, np.integer)):
        axes = tuple([d] if isinstance(d, (int, np.integer)) else list(d) for d in axes)
    return plain(_array_api().tensordot(as_tensor(a), as_tensor(b), axes=axes))


def tile(input: Any, multiples: Any, name: str | None = None) -> Tensor:  # noqa: A002 - TensorFlow's name
    """``input`` repeated ``multiples[k]`` times along each axis k (one multiple per axis): ``tf.tile``."""
    x = as_tensor(input)
    reps = tuple(int(m) for m in multiples)
    if len(reps) != x.ndim:
        raise user_error(ValueError, f"tf.tile: {len(reps)} multiples for a tensor of rank {x.ndim}: give one per axis")
    return plain(_array_api().tile(x, reps))


def repeat(input: Any, repeats: Any, axis: int | None = None, name: str | None = None) -> Tensor:  # noqa: A002
    """Each element repeated ``repeats`` times (a count, or one per element along ``axis``)
    along ``axis``, of the flattened tensor when None: ``tf.repeat``. Counts in a tensor decide
    the result's shape by their values, which are read (an error under ``@jit``)."""
    counts = repeats if isinstance(repeats, (int, np.integer)) else as_tensor(repeats)
    return plain(_array_api().repeat(as_tensor(input), counts, axis=axis))


def _split_sizes(num_or_size_splits: Any, length: int) -> list[int]:
    """The sizes of ``tf.split``'s pieces of an axis of ``length``: ``n`` equal ones, or the
    sizes listed, one of which may be -1 (the rest of the axis)."""
    if isinstance(num_or_size_splits, (int, np.integer)):
        count = int(num_or_size_splits)
        if count <= 0 or length % count:
            raise user_error(ValueError, f"tf.split: an axis of {length} does not split into {count} equal pieces")
        return [length // count] * count
    sizes = [int(s) for s in num_or_size_splits]
    if sizes.count(-1) == 1:
        sizes[sizes.index(-1)] = length - sum(s for s in sizes if s != -1)
    if any(s < 0 for s in sizes) or sum(sizes) != length:
        raise user_error(ValueError, f"tf.split: sizes {list(num_or_size_splits)} do not add up to the axis's {length}")
    return sizes


def split(
    value: Any, num_or_size_splits: Any, axis: int = 0, num: int | None = None, name: str | None = None
) -> list[Tensor]:
    """``value`` cut along ``axis`` into ``num_or_size_splits`` equal pieces, or into pieces of
    the sizes listed (one may be -1): ``tf.split``."""
    x = as_tensor(value)
    d = normalize_axis("split", int(axis), x.ndim)
    return shape_ops.split(x, _split_sizes(num_or_size_splits, x.shape[d]), d)


def unstack(value: Any, num: int | None = None, axis: int = 0, name: str | None = None) -> list[Tensor]:
    """The slices of ``value`` along ``axis``, each without that axis: ``tf.unstack``."""
    x = as_tensor(value)
    length = x.shape[normalize_axis("unstack", axis, x.ndim)]
    if num is not None and num != length:
        raise user_error(ValueError, f"tf.unstack: num={num}, but axis {axis} has {length} elements")
    return plain(_array_api().unstack(x, axis=axis))


def _number(value: Any) -> Any:
    return value.item() if isinstance(value, Tensor) else value


# tf.math -------------------------------------------------------------------------------


def _named(op: Callable[..., Any], tf_name: str) -> Callable[..., Any]:
    """``op`` as ``tf.math.<tf_name>``, taking TensorFlow's ``name=`` too."""

    @functools.wraps(op)
    def function(*args: Any, name: str | None = None, **kwargs: Any) -> Any:
        return op(*args, **kwargs)

    function.__name__ = function.__qualname__ = tf_name
    return function


def _floats(op: str, x: Any) -> Tensor:
    x = as_tensor(x)
    if not x.dtype.is_float:
        raise user_error(DTypeError, f"tf.math.{op}: braze computes it for floats, got {x.dtype.name}")
    return x


def truediv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x / y``: ``tf.math.truediv`` (and ``divide``); integers divide in float64, as in TensorFlow."""
    a, b = operands("truediv", x, y)
    if a.dtype.kind == "i":
        a, b = astype(a, float64), astype(b, float64)
    return math_ops.divide(a, b)


def divide_no_nan(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x / y``, and 0 where ``y`` is 0: ``tf.math.divide_no_nan`` (floats)."""
    a, b = operands("divide_no_nan", _floats("divide_no_nan", x), y)
    zero = b == 0
    # Dividing by 1 where y is 0 keeps the unused quotient, and its gradient, finite.
    return math_ops.where(zero, 0.0, math_ops.divide(a, math_ops.where(zero, 1.0, b)))


def reciprocal(x: Any, name: str | None = None) -> Tensor:
    """``1 / x``: ``tf.math.reciprocal`` (floats)."""
    return math_ops.divide(1.0, _floats("reciprocal", x))


def squared_difference(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``(x - y) * (x - y)``: ``tf.math.squared_difference``."""
    difference = math_ops.subtract(x, y)
    return difference * difference


def softplus_parts(x: Tensor) -> tuple[Tensor, Tensor]:
    """``max(x, 0)`` and ``log1p(exp(-|x|))``, whose sum is ``log(1 + exp(x))`` without
    overflow, both parts chosen by where: relu's and abs's derivatives at 0 (both 0) would
    not give the slope there, sigmoid(0) = 1/2. Apart, so that a loss can subtract from the
    first before adding the small second (braze's softplus, binary cross-entropy of logits)."""
    positive = x > 0
    return math_ops.where(positive, x, 0.0), math_ops.log1p(math_ops.exp(math_ops.where(positive, -x, x)))


def softplus(features: Any, name: str | None = None) -> Tensor:
    """``log(1 + exp(x))``, which never overflows: ``tf.math.softplus``."""
    linear, tail = softplus_parts(_floats("softplus", features))
    return linear + tail


def log_sigmoid(x: Any, name: str | None = None) -> Tensor:
    """``log(sigmoid(x))``, which never overflows: ``tf.math.log_sigmoid``."""
    return -softplus(-_floats("log_sigmoid", x))


def _classified(test: str) -> Callable[..., Tensor]:
    def classify(x: Any, name: str | None = None) -> Tensor:
        return plain(getattr(_array_api(), test)(as_tensor(x)))

    classify.__name__ = classify.__qualname__ = f"is_{test[2:]}"
    classify.__doc__ = f"Whether each element is {test[2:]}: ``tf.math.is_{test[2:]}``."
    return classify


def logical_xor(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise exclusive or of two bool tensors: ``tf.math.logical_xor``."""
    return math_ops.logical_and(math_ops.logical_or(x, y), math_ops.logical_not(math_ops.logical_and(x, y)))


def _arg(op: Callable[..., Tensor], input: Any, axis: Any, output_type: Any) -> Tensor:  # noqa: A002
    # TensorFlow reduces axis 0 when none is given (NumPy flattens).
    return astype(op(input, 0 if axis is None else int(_number(axis))), output_type)


def argmax(input: Any, axis: Any = None, output_type: Any = int64, name: str | None = None) -> Tensor:  # noqa: A002
    """The index of the largest element along ``axis`` (0 when None; the first of equal
    ones), as ``output_type``: ``tf.math.argmax``."""
    return _arg(reduction.argmax, input, axis, output_type)


def argmin(input: Any, axis: Any = None, output_type: Any = int64, name: str | None = None) -> Tensor:  # noqa: A002
    """The index of the smallest element along ``axis`` (0 when None; the first of equal
    ones), as ``output_type``: ``tf.math.argmin``."""
    return _arg(reduction.argmin, input, axis, output_type)


def _scan(op: Callable[[Tensor, int], Tensor], x: Any, axis: int, exclusive: bool, reverse: bool, first: int) -> Tensor:
    """``op`` running along ``axis``: from the end when ``reverse``; when ``exclusive``, each
    element left out of its own result (``first``, the identity, leads)."""
    x = as_tensor(x)
    d = normalize_axis(op.__name__, int(axis), x.ndim)
    if reverse:
        x = shape_ops.flip(x, d)
    if exclusive:
        widths = [(1, 0) if k == d else (0, 0) for k in np.arange(x.ndim)]
        x = shape_ops.getitem(shape_ops.pad(x, widths, first), (slice(None),) * d + (slice(None, -1),))
    out = op(x, d)
    return shape_ops.flip(out, d) if reverse else out


def cumsum(x: Any, axis: int = 0, exclusive: bool = False, reverse: bool = False, name: str | None = None) -> Tensor:
    """Running sums along ``axis``: ``tf.math.cumsum``, with its ``exclusive`` and ``reverse``."""
    return _scan(sorting.cumsum, x, axis, exclusive, reverse, 0)


def cumprod(x: Any, axis: int = 0, exclusive: bool = False, reverse: bool = False, name: str | None = None) -> Tensor:
    """Running products along ``axis``: ``tf.math.cumprod``, with its ``exclusive`` and ``reverse``."""
    return _scan(sorting.cumprod, x, axis, exclusive, reverse, 1)


class TopKV2(NamedTuple):
    """``tf.math.top_k``'s result: the values and their indices."""

    values: Tensor
    indices: Tensor


def top_k(
    input: Any,  # noqa: A002 - TensorFlow's name
    k: int = 1,
    sorted: bool = True,  # noqa: A002 - TensorFlow's name; the values always come sorted
    index_type: Any = int32,
    name: str | None = None,
) -> TopKV2:
    """The ``k`` largest elements of the last axis, largest first (of equal ones, the first
    first), and their indices: ``tf.math.top_k``."""
    values, indices = selection.topk(input, int(_number(k)))
    return TopKV2(values, astype(indices, index_type))


def l2_normalize(x: Any, axis: Any = None, epsilon: float = 1e-12, name: str | None = None, dim: Any = None) -> Tensor:
    """``x / sqrt(max(sum(x * x, axis), epsilon))``: ``tf.math.l2_normalize`` (``dim`` is its old ``axis``)."""
    x = as_tensor(x)
    squares = reduction.sum(x * x, dim if axis is None else axis, True)
    return x * math_ops.rsqrt(math_ops.maximum(squares, epsilon))


def count_nonzero(
    input: Any,  # noqa: A002 - TensorFlow's name
    axis: Any = None,
    keepdims: bool | None = None,
    dtype: Any = int64,
    name: str | None = None,
) -> Tensor:
    """How many elements along ``axis`` are not zero (NaN counts), as ``dtype``: ``tf.math.count_nonzero``."""
    counts = _array_api().count_nonzero(as_tensor(input), axis=axis, keepdims=bool(keepdims))
    return astype(plain(counts), dtype)


def add_n(inputs: Sequence[Any], name: str | None = None) -> Tensor:
    """The elementwise sum of the tensors: ``tf.math.add_n``."""
    if not inputs:
        raise user_error(ValueError, "tf.math.add_n: needs at least one tensor")
    return functools.reduce(math_ops.add, [as_tensor(t) for t in inputs])


def unsorted_segment_sum(data: Any, segment_ids: Any, num_segments: int, name: str | None = None) -> Tensor:
    """``out[i] = sum(data[j] where segment_ids[j] == i)`` for the ``num_segments`` segments
    (``segment_ids`` index the leading axes of ``data``): ``tf.math.unsorted_segment_sum``. Rows
    whose id is outside ``[0, num_segments)`` are dropped, negative ones as TensorFlow drops
    them (its GPU kernel drops the others too; its CPU kernel raises)."""
    data = as_tensor(data)
    ids = indexing.index_tensor("unsorted_segment_sum", segment_ids, data.device)
    count = int(_number(num_segments))
    if data.shape[: ids.ndim] != ids.shape:
        raise user_error(
            ShapeError, f"unsorted_segment_sum: segment_ids {ids.shape} must lead the shape of data {data.shape}"
        )
    shape = (count, *data.shape[ids.ndim :])
    if count == 0 or data.size == 0:
        return creation.zeros(shape, data.dtype, data.device)
    kept = math_ops.logical_and(ids >= 0, ids < count)
    rows = math_ops.where(shape_ops.reshape(kept, ids.shape + (1,) * (data.ndim - ids.ndim)), data, 0)
    return index_prims.scatter_add.bind(
        rows,
        shape_ops.reshape(math_ops.clip(ids, 0, count - 1), (*ids.shape, 1)),
        shape=shape,
        update_window_dims=tuple(int(d) for d in np.arange(ids.ndim, data.ndim)),
        inserted_window_dims=(0,),
        scatter_dims_to_operand_dims=(0,),
    )


def _softmax(logits: Any, axis: int | None = None, name: str | None = None) -> Tensor:
    return reduction.softmax(logits, -1 if axis is None else axis)


def _log_softmax(logits: Any, axis: int | None = None, name: str | None = None) -> Tensor:
    return reduction.log_softmax(logits, -1 if axis is None else axis)


_MATH_NAMES = {
    "abs": math_ops.abs,
    "add": math_ops.add,
    "atan2": math_ops.atan2,
    "ceil": math_ops.ceil,
    "cos": math_ops.cos,
    "divide": truediv,
    "equal": math_ops.equal,
    "erf": math_ops.erf,
    "exp": math_ops.exp,
    "expm1": math_ops.expm1,
    "floor": math_ops.floor,
    "floordiv": math_ops.floor_divide,
    "floormod": math_ops.remainder,
    "greater": math_ops.greater,
    "greater_equal": math_ops.greater_equal,
    "less": math_ops.less,
    "less_equal": math_ops.less_equal,
    "log": math_ops.log,
    "log1p": math_ops.log1p,
    "log_softmax": _log_softmax,
    "logical_and": math_ops.logical_and,
    "logical_not": math_ops.logical_not,
    "logical_or": math_ops.logical_or,
    "maximum": math_ops.maximum,
    "minimum": math_ops.minimum,
    "mod": math_ops.remainder,
    "multiply": math_ops.multiply,
    "negative": math_ops.negative,
    "not_equal": math_ops.not_equal,
    "pow": math_ops.power,
    "round": math_ops.round,
    "rsqrt": math_ops.rsqrt,
    "sigmoid": math_ops.sigmoid,
    "sign": math_ops.sign,
    "sin": math_ops.sin,
    "softmax": _softmax,
    "sqrt": math_ops.sqrt,
    "subtract": math_ops.subtract,
    "tan": math_ops.tan,
    "tanh": math_ops.tanh,
}
_MATH_FUNCTIONS = (
    add_n,
    argmax,
    argmin,
    count_nonzero,
    cumprod,
    cumsum,
    divide_no_nan,
    l2_normalize,
    log_sigmoid,
    logical_xor,
    reciprocal,
    reduce_all,
    reduce_any,
    reduce_euclidean_norm,
    reduce_logsumexp,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_std,
    reduce_sum,
    reduce_variance,
    softplus,
    square,
    squared_difference,
    top_k,
    truediv,
    unsorted_segment_sum,
    *(_classified(test) for test in ("isnan", "isinf", "isfinite")),
)
math = SimpleNamespace(
    **{tf_name: _named(op, tf_name) for tf_name, op in _MATH_NAMES.items()},
    **{fn.__name__: fn for fn in _MATH_FUNCTIONS},
)
"""``tf.math``: TensorFlow's math under its names and arguments (``tf.math.reduce_std``,
``tf.math.top_k``, ``tf.math.cumsum(x, exclusive=True)``...). Integer ``pow``,
``reciprocal`` and ``divide_no_nan`` are not computed (braze's take floats)."""


def range(  # noqa: A001 - TensorFlow's name (this module counts with np.arange, never Python's range)
    start: Any, limit: Any = None, delta: Any = 1, dtype: Any = None, name: str | None = None
) -> Tensor:
    """``[start, limit)`` in steps of ``delta`` (``[0, start)`` when ``limit`` is None):
    ``tf.range``; int32 for integer bounds, float32 when one is a float."""
    bounds = [_number(v) for v in (start, limit, delta)]
    return creation.arange(bounds[0], bounds[1], bounds[2], dtype)


__all__ = [
    "Variable",
    "gather",
    "math",
    "one_hot",
    "range",
    "repeat",
    "split",
    "tile",
    "unstack",
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
