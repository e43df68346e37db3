"""The standard's data types and type promotion, over the dtypes braze has.

The Array API promotes within a kind: ``int32`` with ``int64`` gives ``int64``, ``float32``
with ``float64`` gives ``float64``; booleans, integers and floats do not mix (a
``TypeError``). braze's own operators keep its narrower rule (tensors of two dtypes never
mix), so the functions here convert their operands first. A Python scalar takes the
array's dtype: a bool with a bool array, an int with an integer or float array, a float
with a float array; a float with an integer array gives float32, as braze's own ops do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from braze.ir.dtypes import (
    ALL_DTYPES,
    DEFAULT_FLOAT,
    DType,
    as_dtype,
    bool_,
    float32,
    float64,
    int32,
    int64,
    require_in_range,
)
from braze.ops.core import as_tensor, astype, is_number
from braze.tensor import Tensor

_WIDER = {(int32, int64): int64, (float32, float64): float64}
_KINDS = {
    "bool": (bool_,),
    "signed integer": (int32, int64),
    "unsigned integer": (),
    "integral": (int32, int64),
    "real floating": (float32, float64),
    "complex floating": (),
    "numeric": (int32, int64, float32, float64),
}


def promote_types(a: DType, b: DType) -> DType:
    """The standard's promotion of two dtypes; a ``TypeError`` across kinds."""
    if a is b:
        return a
    found = _WIDER.get((a, b)) or _WIDER.get((b, a))
    if found is None:
        raise TypeError(f"{a.name} and {b.name} do not promote: the Array API standard mixes no kinds")
    return found


def as_array_dtype(dtype: Any) -> DType:
    """A dtype argument as a braze DType; a ``TypeError`` for what is not one."""
    try:
        return as_dtype(dtype)
    except Exception:
        raise TypeError(f"{dtype!r} is not a dtype of braze.array_api") from None


def result_type(*arrays_and_dtypes: Any) -> DType:
    """The dtype that promoting the arguments (arrays, dtypes and Python scalars) gives."""
    dtypes = [a.dtype if isinstance(a, Tensor) else as_array_dtype(a) for a in arrays_and_dtypes if not is_number(a)]
    scalars = [a for a in arrays_and_dtypes if is_number(a)]
    if not dtypes:
        raise TypeError("result_type needs at least one array or dtype")
    result = dtypes[0]
    for dtype in dtypes[1:]:
        result = promote_types(result, dtype)
    for value in scalars:
        result = scalar_dtype(result, value)
    return result


def scalar_dtype(dtype: DType, value: Any) -> DType:
    """The dtype of an array of ``dtype`` combined with the Python scalar ``value``."""
    if isinstance(value, (bool, np.bool_)):
        if dtype is not bool_:
            raise TypeError(f"a Python bool does not combine with a {dtype.name} array")
        return dtype
    if isinstance(value, (int, np.integer)):
        if dtype is bool_:
            raise TypeError("a Python int does not combine with a bool array")
        require_in_range(value, dtype)  # the standard leaves it undefined: braze says so
        return dtype
    if dtype.kind != "f":
        if dtype is bool_:
            raise TypeError("a Python float does not combine with a bool array")
        return DEFAULT_FLOAT
    return dtype


def promoted(*values: Any) -> list[Tensor]:
    """The tensors and Python scalars among ``values`` as tensors of their promoted dtype
    (scalars on the tensors' device), for an op of one dtype; not yet broadcast."""
    anchor = next((v for v in values if isinstance(v, Tensor)), None)
    if anchor is None:
        values = (as_tensor(values[0]), *values[1:])
        anchor = values[0]
    dtype = result_type(*values)
    return [astype(v, dtype) if isinstance(v, Tensor) else as_tensor(v, dtype=dtype, like=anchor) for v in values]


def isdtype(dtype: DType, kind: Any) -> bool:
    """Whether ``dtype`` is of ``kind``: a dtype, a kind's name, or a tuple of either."""
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}; the kinds are {', '.join(_KINDS)}")
        return dtype in _KINDS[kind]
    if not isinstance(dtype, DType) or not isinstance(kind, DType):
        raise TypeError(f"isdtype takes a dtype and a kind, got {dtype!r} and {kind!r}")
    return dtype is kind


def can_cast(from_: DType | Tensor, to: DType) -> bool:
    """Whether the standard's promotion turns ``from_`` into ``to`` without changing kind."""
    source = from_.dtype if isinstance(from_, Tensor) else as_array_dtype(from_)
    target = as_array_dtype(to)
    try:
        return promote_types(source, target) is target
    except TypeError:
        return False


@dataclass(frozen=True)
class finfo_object:  # noqa: N801 - the standard's name
    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: DType


@dataclass(frozen=True)
class iinfo_object:  # noqa: N801 - the standard's name
    bits: int
    max: int
    min: int
    dtype: DType


def _of(type_: DType | Tensor) -> DType:
    return type_.dtype if isinstance(type_, Tensor) else as_array_dtype(type_)


def finfo(type_: DType | Tensor, /) -> finfo_object:
    """The limits of a float dtype (of an array's dtype)."""
    dtype = _of(type_)
    if not dtype.is_float:
        raise TypeError(f"finfo: {dtype.name} is not a floating dtype")
    info = np.finfo(dtype.numpy)
    return finfo_object(
        info.bits, float(info.eps), float(info.max), float(info.min), float(info.smallest_normal), dtype
    )


def iinfo(type_: DType | Tensor, /) -> iinfo_object:
    """The limits of an integer dtype (of an array's dtype)."""
    dtype = _of(type_)
    if dtype.kind != "i":
        raise TypeError(f"iinfo: {dtype.name} is not an integer dtype")
    info = np.iinfo(dtype.numpy)
    return iinfo_object(info.bits, int(info.max), int(info.min), dtype)


def kinds() -> dict[str, tuple[DType, ...]]:
    """The standard's dtype kinds and braze's dtypes of each."""
    return dict(_KINDS)


DTYPES = {d.name: d for d in ALL_DTYPES if d.name != "bfloat16"}  # the standard has no bfloat16
