"""What every op needs: turning inputs into tensors, scalar promotion, broadcasting, axes."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from braze.ir.dtypes import (
    DType,
    as_dtype,
    default_dtype_for,
    int_beyond,
    require_in_range,
    storage_array,
    weak_result_dtype,
)
from braze.ir.errors import DeviceError, DTypeError, ShapeError
from braze.ir.primitive import InputLiteral, Literal
from braze.ir.prims import elementwise, sources, structural
from braze.ir.prims.checks import fmt_shape
from braze.runtime.device import Device, as_device, default_device
from braze.tangents import LEVELS
from braze.tensor import Tensor, executor_for, unheard, user_error

Number = bool | int | float


def is_number(value: Any) -> bool:
    return isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)) and not isinstance(
        value, np.ndarray
    )


def as_tensor(value: Any, dtype: Any = None, like: Tensor | None = None, device: Device | str | None = None) -> Tensor:
    """A tensor from a tensor, NumPy array, nested list or number (copying host data)."""
    if isinstance(value, Tensor):
        return value if dtype is None else astype(value, dtype)
    target = as_device(device) if device is not None else (like.device if like is not None else default_device())
    if dtype is not None:
        dt = as_dtype(dtype, "tensor")
    elif is_number(value):
        dt = like.dtype if like is not None else default_dtype_for(value)
        if int_beyond(value, dt):  # NumPy would wrap a NumPy integer around in silence
            _out_of_range(value, dt)
    else:
        dt = _default_array_dtype(value)
    return Tensor.from_numpy(storage_array(value, dt), target)


def _default_array_dtype(value: Any) -> DType:
    """Python lists take the defaults (float32, int32) as in JAX; NumPy arrays keep float32,
    float64, int32 and int64, and narrower or unsigned integers widen (uint32 to int64). An
    integer the dtype cannot hold (a uint64 past int64's range) is an ``OverflowError``,
    where NumPy's conversion would wrap it around."""
    array = np.asarray(value)
    kind, size = array.dtype.kind, array.dtype.itemsize
    from_numpy = isinstance(value, (np.ndarray, np.generic))
    if kind == "f":
        return as_dtype(np.float64 if from_numpy and array.dtype == np.float64 else np.float32)
    if kind in "iu":
        wide = from_numpy and (size >= 8 or (kind == "u" and size >= 4))
        dt = as_dtype(np.int64 if wide else np.int32)
        if array.size and not np.can_cast(array.dtype, dt.numpy):  # only a uint64 array, or a list past int64
            for extreme in (array.max(), array.min()):
                if int_beyond(extreme, dt):
                    _out_of_range(extreme, dt)
        return dt
    return as_dtype(array.dtype, "tensor")


def _out_of_range(value: Any, dtype: DType) -> None:
    """The ``OverflowError`` of an integer that the dtype a new tensor gets cannot hold."""
    limits = np.iinfo(dtype.numpy)
    wider = "int64" if dtype.itemsize < 8 and -(2**63) <= int(value) < 2**63 else "float64"
    raise OverflowError(
        f"tensor: the integer {int(value)} is out of range for {dtype.name} ({limits.min} to {limits.max}), "
        f"the dtype braze gives it (braze has no unsigned dtypes); pass dtype={wider!r} or convert the values first"
    )


def scalar(value: Number, dtype: DType, device: Device) -> Tensor:
    """A 0-d constant. On a lazy device it is traced as a constant node."""
    return sources.constant.bind(value=_literal(value, dtype), like=device)


def scalar_input(value: Number, dtype: DType, device: Device) -> Tensor:
    """A 0-d constant standing for a number that changes between steps (a hyperparameter):
    a lazy trace makes it a graph input whatever its value (see ``InputLiteral``)."""
    return sources.constant.bind(value=InputLiteral(value, dtype), like=device)


_LITERALS: dict[tuple, Literal] = {}


def _literal(value: Number, dtype: DType) -> Literal:
    """The literal of a scalar, shared by every op that uses the same number (a training
    step makes the same few every time). -0.0 is told from 0.0; a NaN, equal to nothing,
    always gets a new one."""
    if value != value:
        return Literal(value, dtype)
    sign = math.copysign(1.0, value) if isinstance(value, (float, np.floating)) else 0.0
    key = (type(value), value, sign, dtype)
    found = _LITERALS.get(key)
    if found is None:
        require_in_range(value, dtype)  # braze's message, where NumPy's would not name the dtype
        if len(_LITERALS) >= 1024:
            _LITERALS.clear()
        found = _LITERALS[key] = Literal(value, dtype)
    return found


def full(shape: Sequence[int], value: Number, dtype: DType, device: Device) -> Tensor:
    return broadcast_to(scalar(value, dtype, device), tuple(shape))


# What a lazy device records for a number broadcast to a shape, by (the literal's id, shape,
# device): the constant's and the broadcast's attributes, types and signatures.
_SCALAR_BROADCASTS: dict[tuple, tuple] = {}


def scalar_operand(value: Number, dtype: DType, device: Device, shape: tuple[int, ...], op: str) -> Tensor:
    """``value`` as a tensor of ``shape`` (a binary op's other operand). On a lazy device
    (outside a replay recording and forward-mode derivatives) it records the same two
    expressions the binds would, with the same signatures, so the same trace key, from
    what the first such call noted: a GPT forward pass makes ~50 of them every step."""
    if not device.is_lazy or not unheard() or LEVELS.open:
        return broadcast_to(scalar(value, dtype, device), shape, op)
    literal = _literal(value, dtype)
    key = (id(literal), shape, device)
    found = _SCALAR_BROADCASTS.get(key)
    if found is None or found[0] is not literal:  # the id of a literal no longer interned
        if len(_SCALAR_BROADCASTS) >= 1024:
            _SCALAR_BROADCASTS.clear()
        result = broadcast_to(scalar(value, dtype, device), shape, op)
        noted = [result._value] if result._value.inputs == () else [result._value.inputs[0], result._value]
        _SCALAR_BROADCASTS[key] = (literal, [(e.primitive, e.attrs, e.aval, e.signature) for e in noted])
        return result
    executor = executor_for(device)
    values: list = []
    for primitive, attrs, aval, signature in found[1]:
        values = [executor.apply(primitive, values, attrs, aval, device, signature)]
    return Tensor._make(values[0], aval, device)


def astype(x: Tensor, dtype: Any) -> Tensor:
    """``x`` converted to ``dtype`` (``x`` itself when it already has it)."""
    dt = as_dtype(dtype)
    if x._aval.dtype is dt or x.dtype == dt:
        return x
    return elementwise.convert.bind(x, dtype=dt)


def rounded_once(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """``fn`` (a composite of several ops) computed in float32 when its first argument is
    bfloat16, its result rounded to bfloat16 once, as a primitive's is: each bfloat16 step of
    a softmax or a mean would round again (``x - max`` rounded before ``exp`` is off by 7%).
    Every bfloat16 tensor among the positional arguments (a norm's weight) is widened too."""

    @functools.wraps(fn)
    def wrapped(x: Any, *args: Any, **kwargs: Any) -> Tensor:
        x = as_tensor(x)
        stored, wide = x.dtype, x.dtype.compute
        if wide is stored:
            return fn(x, *args, **kwargs)
        widened = [astype(a, wide) if isinstance(a, Tensor) and a.dtype is stored else a for a in args]
        return astype(fn(astype(x, wide), *widened, **kwargs), stored)

    return wrapped


def broadcast_to(x: Tensor, shape: Sequence[int], op: str = "broadcast_to") -> Tensor:
    """Broadcast with NumPy's rules (align trailing dimensions)."""
    if type(shape) is tuple:
        own = x._aval.shape
        if shape == own:
            return x
        offset = len(shape) - len(own)
        # New leading axes only (a scalar, a bias), given as ints (any other size is normalized below).
        if offset > 0 and shape[offset:] == own and all([type(s) is int and s >= 0 for s in shape[:offset]]):
            return structural.broadcast_in_dim.bind(
                x, shape=shape, broadcast_dimensions=tuple(range(offset, len(shape)))
            )
    shape = tuple(int(s) for s in shape)
    if x.shape == shape:
        return x
    offset = len(shape) - x.ndim
    if offset < 0 or any(s not in (1, shape[offset + i]) for i, s in enumerate(x.shape)):
        raise user_error(ShapeError, f"{op}: cannot broadcast shape {fmt_shape(x.shape)} to {fmt_shape(shape)}")
    return structural.broadcast_in_dim.bind(x, shape=shape, broadcast_dimensions=tuple(range(offset, len(shape))))


def broadcast_shapes(op: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's broadcast of shapes: trailing dimensions align, a 1 stretches to any size."""
    ndim = max(len(s) for s in shapes)
    result = [1] * ndim
    for shape in shapes:
        offset = ndim - len(shape)
        for i, size in enumerate(shape):
            current = result[offset + i]
            if size != current:
                if current == 1:
                    result[offset + i] = int(size)
                elif size != 1:
                    listed = " and ".join(fmt_shape(s) for s in shapes)
                    raise user_error(ShapeError, f"{op}: shapes {listed} cannot be broadcast together")
    return tuple(result)


def check_compatible(op: str, tensors: Sequence[Tensor]) -> None:
    """Tensors combined by one op must share a dtype and a device; the error names both."""
    first = tensors[0]
    for other in tensors[1:]:
        if other.dtype is not first.dtype and other.dtype != first.dtype:
            described = " and ".join(f"{t.dtype.name}{fmt_shape(t.shape)}" for t in tensors)
            raise user_error(
                DTypeError,
                f"{op}: dtypes differ: {described}; braze never mixes dtypes implicitly, "
                "convert one operand with .astype()",
            )
        if other.device is not first.device and other.device != first.device:
            raise user_error(
                DeviceError, f"{op}: operands are on different devices: {first.device!r} and {other.device!r}"
            )


def operands(op: str, *values: Any) -> list[Tensor]:
    """Tensors of one dtype and one shape from tensors, arrays and (weakly typed) numbers."""
    if len(values) == 2:  # the common cases, on the path of every binary op
        x, y = values
        if isinstance(x, Tensor):
            if isinstance(y, Tensor):
                if x.device is y.device and x._aval.dtype is y._aval.dtype:
                    xs, ys = x._aval.shape, y._aval.shape
                    if xs == ys:
                        return [x, y]
                    if xs[len(xs) - len(ys) :] == ys:  # y only gains leading axes (a bias, a 0-d factor)
                        return [x, broadcast_to(y, xs, op)]
                    if ys[len(ys) - len(xs) :] == xs:
                        return [broadcast_to(x, ys, op), y]
                check_compatible(op, values)
                return _broadcast_all(op, [x, y])
            if is_number(y) and weak_result_dtype(x.dtype, y) is x.dtype:
                return [x, scalar_operand(y, x.dtype, x.device, x._aval.shape, op)]
        elif isinstance(y, Tensor) and is_number(x) and weak_result_dtype(y.dtype, x) is y.dtype:
            return [scalar_operand(x, y.dtype, y.device, y._aval.shape, op), y]
    anchor = next((v for v in values if isinstance(v, Tensor)), None)
    items = [v if isinstance(v, Tensor) or is_number(v) else _host_operand(v, anchor) for v in values]
    if not any(isinstance(v, Tensor) for v in items):
        items[0] = as_tensor(items[0])
    tensors = [v for v in items if isinstance(v, Tensor)]
    check_compatible(op, tensors)
    dtype, target = tensors[0].dtype, tensors[0].device
    for v in items:
        if not isinstance(v, Tensor):
            dtype = weak_result_dtype(dtype, v)
    converted = [astype(v, dtype) if isinstance(v, Tensor) else scalar(v, dtype, target) for v in items]
    return _broadcast_all(op, converted)


def _host_operand(value: Any, anchor: Tensor | None) -> Tensor:
    """A list, tuple or NumPy array of numbers beside a float tensor takes the tensor's
    dtype, as a Python number does: host data is weakly typed (``np.zeros``'s float64 mask
    times a float32 kernel, TensorFlow's list times a variable); two tensors of different
    dtypes still never mix."""
    device = anchor.device if anchor is not None else None
    if anchor is not None and anchor.dtype.is_float:
        array = np.asarray(value)
        if array.dtype.kind in "biuf":
            return as_tensor(array, dtype=anchor.dtype, device=device)
    return as_tensor(value, device=device)


def _broadcast_all(op: str, tensors: list[Tensor]) -> list[Tensor]:
    shape = broadcast_shapes(op, *(t.shape for t in tensors))
    return [broadcast_to(t, shape, op) for t in tensors]


def normalize_axis(op: str, axis: int, ndim: int) -> int:
    if not isinstance(axis, (int, np.integer)) or not -ndim <= axis < ndim:
        raise user_error(ShapeError, f"{op}: axis {axis} is out of range for a tensor of rank {ndim}")
    return int(axis) % ndim


def normalize_axes(op: str, axis: int | Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """None means every axis; negative axes count from the end."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    normalized = tuple(normalize_axis(op, a, ndim) for a in axes)
    if len(set(normalized)) != len(normalized):
        raise user_error(ShapeError, f"{op}: repeated axis in {axes}")
    return tuple(sorted(normalized))
