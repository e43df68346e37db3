"""The standard's creation functions. Defaults: float32 for floats, int32 for integers
(braze's own, which ``__array_namespace_info__().default_dtypes()`` reports), the default
device (``braze.set_default_device``) unless one is given."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import braze.ops as ops
from braze.array_api.array_object import Array, copied, wrap
from braze.array_api.dtypes import as_array_dtype, result_type
from braze.array_api.elementwise import as_array
from braze.interop import from_dlpack as _from_dlpack
from braze.ir.dtypes import (
    DEFAULT_FLOAT,
    DEFAULT_INT,
    DType,
    as_dtype,
    bfloat16,
    bool_,
    float64,
    int64,
    storage_array,
)
from braze.ir.prims import sources
from braze.ops.core import full as _full
from braze.runtime.device import Device, as_device, default_device
from braze.tensor import Tensor


def _device(device: Any, like: Tensor | None = None) -> Device:
    if device is not None:
        return as_device(device)
    return like.device if like is not None else default_device()


def _dtype(dtype: Any) -> DType | None:
    return None if dtype is None else as_array_dtype(dtype)


def _shape(shape: int | Sequence[int]) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)


def _python_dtype(value: Any) -> DType:
    """The default dtype of nested Python data: bool, int32 (int64 for an int past int32's
    range) or float32. Arrays among the data bring their dtypes, promoted as the standard
    does (``asarray([asarray(x, dtype=int64)])`` is int64, as in NumPy), and the Python
    scalars beside them take theirs."""
    arrays, scalars = _arrays_and_scalars(value)
    if arrays:
        return result_type(*arrays, *scalars)
    flat = np.asarray(value, dtype=object).ravel()
    if flat.size and all(isinstance(v, (bool, np.bool_)) for v in flat):
        return bool_
    if all(isinstance(v, (bool, int, np.bool_, np.integer)) for v in flat):
        if flat.size and not all(-(2**31) <= int(v) < 2**31 for v in flat):
            return int64
        return DEFAULT_INT
    return DEFAULT_FLOAT


def _arrays_and_scalars(value: Any) -> tuple[list[Tensor], list[Any]]:
    """The arrays and the scalars of nested sequences."""
    if isinstance(value, Tensor):
        return [value], []
    if not isinstance(value, (list, tuple)):
        return [], [value]
    arrays: list[Tensor] = []
    scalars: list[Any] = []
    for item in value:
        more_arrays, more_scalars = _arrays_and_scalars(item)
        arrays += more_arrays
        scalars += more_scalars
    return arrays, scalars


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: bool | None = None) -> Array:
    """An array from an array, a NumPy array or buffer, nested sequences or a scalar. With
    ``copy=None`` an array (or a NumPy array of a braze dtype) is shared when no conversion
    is needed; ``copy=False`` raises where one is."""
    wanted = _dtype(dtype)
    if isinstance(obj, Tensor):
        out = obj if wanted is None else ops.astype(obj, wanted)
        out = out.to(_device(device, obj))
        if copy is False and out is not obj:
            raise ValueError("asarray: copy=False, but the array needs a conversion (another dtype or device)")
        return copied(out) if copy and out is obj else wrap(out)  # a conversion made a new buffer already
    target = _device(device)
    if isinstance(obj, (np.ndarray, np.generic)) or hasattr(obj, "__array_interface__") or _is_buffer(obj):
        array = np.asarray(obj)
        kind = as_dtype(array.dtype, "asarray") if wanted is None else wanted
        # bfloat16's NumPy twin is its uint16 storage: values are rounded into bit patterns, not cast
        converted = storage_array(array, kind) if kind is bfloat16 else array.astype(kind.numpy, copy=bool(copy))
        if copy is False and converted is not array and not np.shares_memory(converted, array):
            raise ValueError(f"asarray: copy=False, but a {array.dtype} array needs a copy to become {kind.name}")
        return wrap(Tensor.from_numpy(converted, target))
    if copy is False:
        raise ValueError("asarray: copy=False needs an array or a buffer to share; Python data is always copied")
    if isinstance(obj, complex):
        raise TypeError("asarray: braze has no complex dtypes")
    kind = wanted or _python_dtype(obj)
    data = storage_array(obj, kind) if kind is bfloat16 else np.array(obj, dtype=kind.numpy)
    return wrap(Tensor.from_numpy(data, target))


def _is_buffer(obj: Any) -> bool:
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


def arange(
    start: int | float,
    /,
    stop: int | float | None = None,
    step: int | float = 1,
    *,
    dtype: Any = None,
    device: Any = None,
) -> Array:
    """Evenly spaced values in ``[start, stop)``, each ``start + i * step``."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    count = max(0, math.ceil((stop - start) / step))
    floats = any(isinstance(v, float) for v in (start, stop, step))
    # An int past int32's range makes the values int64, as asarray and full choose.
    kind = _dtype(dtype) or (DEFAULT_FLOAT if floats else _python_dtype([int(start), int(stop)]))
    where = _device(device)
    index = sources.iota.bind(shape=(count,), dimension=0, dtype=float64 if kind.is_float else kind, like=where)
    return wrap(ops.astype(index * step + start, kind))


def empty(shape: int | Sequence[int], *, dtype: Any = None, device: Any = None) -> Array:
    """An array of ``shape`` (of zeros: braze never hands out uninitialized memory)."""
    return zeros(shape, dtype=dtype, device=device)


def empty_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Array:
    return zeros_like(x, dtype=dtype, device=device)


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None, device: Any = None) -> Array:
    """Ones on the ``k``-th diagonal, zeros elsewhere."""
    shape = (int(n_rows), int(n_rows if n_cols is None else n_cols))
    where = _device(device)
    rows = sources.iota.bind(shape=shape, dimension=0, dtype=int64, like=where)
    columns = sources.iota.bind(shape=shape, dimension=1, dtype=int64, like=where)
    return wrap(ops.astype(columns - rows == k, _dtype(dtype) or DEFAULT_FLOAT))


def full(shape: int | Sequence[int], fill_value: bool | int | float, *, dtype: Any = None, device: Any = None) -> Array:
    """An array of ``shape`` filled with ``fill_value`` (its dtype from the value unless given)."""
    if isinstance(fill_value, complex):
        raise TypeError("full: braze has no complex dtypes")
    kind = _dtype(dtype) or _python_dtype(fill_value)
    return wrap(_full(_shape(shape), fill_value, kind, _device(device)))


def full_like(x: Any, /, fill_value: bool | int | float, *, dtype: Any = None, device: Any = None) -> Array:
    x = as_array(x, "full_like")
    return full(x.shape, fill_value, dtype=_dtype(dtype) or x.dtype, device=_device(device, x))


def zeros(shape: int | Sequence[int], *, dtype: Any = None, device: Any = None) -> Array:
    return full(shape, 0, dtype=_dtype(dtype) or DEFAULT_FLOAT, device=device)


def zeros_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Array:
    return full_like(x, 0, dtype=dtype, device=device)


def ones(shape: int | Sequence[int], *, dtype: Any = None, device: Any = None) -> Array:
    return full(shape, 1, dtype=_dtype(dtype) or DEFAULT_FLOAT, device=device)


def ones_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Array:
    return full_like(x, 1, dtype=dtype, device=device)


def linspace(
    start: int | float,
    stop: int | float,
    /,
    num: int,
    *,
    dtype: Any = None,
    device: Any = None,
    endpoint: bool = True,
) -> Array:
    """``num`` evenly spaced values from ``start`` to ``stop`` (computed in float64; the
    last is ``stop`` itself with ``endpoint``)."""
    if isinstance(start, complex) or isinstance(stop, complex):
        raise TypeError("linspace: braze has no complex dtypes")
    kind = _dtype(dtype) or DEFAULT_FLOAT
    where = _device(device)
    intervals = num - 1 if endpoint else num
    step = (stop - start) / intervals if intervals > 0 else 0.0
    index = sources.iota.bind(shape=(int(num),), dimension=0, dtype=float64, like=where)
    values = index * float(step) + float(start)
    if endpoint and num > 1:
        values = ops.where(index == num - 1, float(stop), values)
    return wrap(ops.astype(values, kind))


def meshgrid(*arrays: Any, indexing: str = "xy") -> list[Array]:
    """Coordinate grids of 1-D arrays (``xy``: the first two axes swapped, as NumPy)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    vectors = [as_array(a, "meshgrid") for a in arrays]
    shape = [v.size for v in vectors]
    if indexing == "xy" and len(shape) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    grids = []
    for k, v in enumerate(vectors):
        axis = (1 - k if k < 2 else k) if indexing == "xy" and len(vectors) >= 2 else k
        view = [1] * len(shape)
        view[axis] = v.size
        grids.append(wrap(ops.broadcast_to(ops.reshape(v, view), tuple(shape))))
    return grids


def _triangle(x: Any, k: int, lower: bool, op: str) -> Array:
    x = as_array(x, op)
    if x.ndim < 2:
        raise ValueError(f"{op}: needs an array of rank 2 or more, got shape {x.shape}")
    shape = x.shape[-2:]
    rows = sources.iota.bind(shape=shape, dimension=0, dtype=int64, like=x.device)
    columns = sources.iota.bind(shape=shape, dimension=1, dtype=int64, like=x.device)
    keep = columns - rows <= k if lower else columns - rows >= k
    return wrap(ops.where(keep, x, ops.zeros_like(x)))


def tril(x: Any, /, *, k: int = 0) -> Array:
    """``x`` with the elements above the ``k``-th diagonal zeroed (of the last two axes)."""
    return _triangle(x, k, True, "tril")


def triu(x: Any, /, *, k: int = 0) -> Array:
    """``x`` with the elements below the ``k``-th diagonal zeroed (of the last two axes)."""
    return _triangle(x, k, False, "triu")


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Array:
    """An array over another library's DLPack capsule (a copy when ``copy`` or another
    device; ``copy=False`` with another device raises, as the standard says)."""
    out = _from_dlpack(x)
    target = out.device if device is None else as_device(device)
    if target != out.device:
        if copy is False:
            raise ValueError(f"from_dlpack: copy=False, but moving the array to {target!r} copies it")
        return wrap(out.to(target))
    return copied(out) if copy else wrap(out)


def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Array:
    """``x`` converted to ``dtype`` (and moved to ``device``); floats become integers by
    truncation, saturating, NaN to 0, as braze's conversions do."""
    x = as_array(x, "astype")
    out = ops.astype(x, as_array_dtype(dtype))
    out = out.to(device) if device is not None else out
    return copied(out) if copy and out is x else wrap(out)  # a conversion made a new buffer already
