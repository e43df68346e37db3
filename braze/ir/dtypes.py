"""Element types and the promotion rules.

braze keeps promotion deliberately narrow, as X10 does: two tensors of different
dtypes never mix implicitly (``float32 + float64`` is an error that says so), because a
silent upcast doubles memory traffic and changes every compiled kernel. Python scalars are
"weak": they adopt the tensor's dtype, unless the scalar is of a higher kind (a float
scalar with an integer tensor), in which case the result takes the default dtype of that
kind (float32), as in JAX.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from braze.ir.errors import DTypeError


@dataclass(frozen=True, eq=False)
class DType:
    """One element type: its public name, short IR name and NumPy twin (backends spell it
    in their own languages).

    The six dtypes below are the only instances (a copy or an unpickled one is the same
    object, see ``__reduce__``), so equality and hashing are by identity: every shape rule,
    graph and trace key hashes dtypes, and identity hashing costs no Python call."""

    name: str
    short: str
    kind: str  # "b" bool, "i" signed integer, "f" float
    numpy: np.dtype

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def compute(self) -> DType:
        """The dtype arithmetic on this one is done in: float32 for bfloat16 (which is only
        stored, and rounded to after every operation), the dtype itself otherwise."""
        return float32 if self is bfloat16 else self

    def __eq__(self, other: object) -> bool:
        # ``x.dtype == "float32"`` holds, as TensorFlow's and Keras's dtypes equal their names;
        # hashing stays by identity (no dict mixes dtypes and names as keys).
        if isinstance(other, str):
            return other == self.name
        return self is other

    __hash__ = object.__hash__

    def __reduce__(self) -> tuple:
        return as_dtype, (self.name,)

    def __repr__(self) -> str:
        return f"braze.{self.name}"

    def __str__(self) -> str:
        return self.name


bool_ = DType("bool", "pred", "b", np.dtype(np.bool_))
"""Booleans (comparisons, masks)."""
int32 = DType("int32", "s32", "i", np.dtype(np.int32))
"""32-bit integers: Python lists of ints default to it."""
int64 = DType("int64", "s64", "i", np.dtype(np.int64))
"""64-bit integers: NumPy int64 arrays keep it."""
float32 = DType("float32", "f32", "f", np.dtype(np.float32))
"""32-bit floats: the default dtype."""
float64 = DType("float64", "f64", "f", np.dtype(np.float64))
"""64-bit floats: NumPy float64 arrays keep it; supported everywhere (gradient checks use it)."""

bfloat16 = DType("bfloat16", "bf16", "f", np.dtype(np.uint16))
"""16-bit brain floats (float32's exponent, 8 significant bits): stored as their bit
patterns in 16-bit integers (NumPy has no bfloat16), computed in float32 and rounded to
nearest even after every operation. Mixed precision (``braze.autocast``) runs matrix
products and convolutions on it."""

ALL_DTYPES: tuple[DType, ...] = (bool_, int32, int64, float32, float64, bfloat16)
DEFAULT_FLOAT = float32
DEFAULT_INT = int32

_BY_NAME = {d.name: d for d in ALL_DTYPES} | {d.short: d for d in ALL_DTYPES}
_BY_NUMPY = {d.numpy: d for d in ALL_DTYPES if d is not bfloat16}  # uint16 arrays are not bfloat16
_KIND_ORDER = {"b": 0, "i": 1, "f": 2}


def as_dtype(value: object, op: str = "dtype") -> DType:
    """Turn a DType, a name ("float32", "f32"), a NumPy dtype or a Python type into a DType;
    ``op`` names the operation in the error for an unsupported dtype."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    if value is float:
        return DEFAULT_FLOAT
    if value is int:
        return DEFAULT_INT
    if value is bool:
        return bool_
    try:
        found = _BY_NUMPY.get(np.dtype(value))  # type: ignore[call-overload]
    except TypeError:
        found = None
    if found is None:
        supported = ", ".join(d.name for d in ALL_DTYPES)
        try:
            shown = repr(np.dtype(value).name)  # type: ignore[call-overload]
        except TypeError:
            shown = repr(value)
        raise DTypeError(f"{op}: unsupported dtype {shown}; braze supports {supported}")
    return found


def scalar_kind(value: object) -> str:
    """The kind ("b", "i" or "f") of a Python or NumPy scalar."""
    if isinstance(value, (bool, np.bool_)):
        return "b"
    if isinstance(value, (int, np.integer)):
        return "i"
    if isinstance(value, (float, np.floating)):
        return "f"
    raise DTypeError(f"expected a number, got {type(value).__name__} {value!r}")


def weak_result_dtype(tensor_dtype: DType, scalar: object) -> DType:
    """The dtype of ``tensor op scalar``: the tensor's, unless the scalar is of a higher kind."""
    kind = scalar_kind(scalar)
    if _KIND_ORDER[kind] <= _KIND_ORDER[tensor_dtype.kind]:
        return tensor_dtype
    return DEFAULT_FLOAT if kind == "f" else DEFAULT_INT


def int_beyond(value: object, dtype: DType) -> int:
    """1 (or -1) where the integer ``value`` is above (below) every value of the integer
    ``dtype``; 0 where it is one of them, or either is no integer."""
    if dtype.kind != "i" or isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        return 0
    limits = np.iinfo(dtype.numpy)
    return 1 if value > limits.max else -1 if value < limits.min else 0


def require_in_range(value: object, dtype: DType) -> None:
    """An ``OverflowError`` where the integer ``value`` is no value of ``dtype`` (NumPy
    would raise its own for a Python int, and wrap a NumPy one around in silence)."""
    if int_beyond(value, dtype):
        limits = np.iinfo(dtype.numpy)
        raise OverflowError(
            f"the integer {value} is out of range for {dtype.name} ({limits.min} to {limits.max}); "
            "convert the tensor to a wider dtype (int64, or a float) first"
        )


def default_dtype_for(value: object) -> DType:
    """The dtype a Python scalar gets on its own (``braze.tensor(1.5)`` is float32)."""
    return {"b": bool_, "i": DEFAULT_INT, "f": DEFAULT_FLOAT}[scalar_kind(value)]


def to_bfloat16(array: np.ndarray) -> np.ndarray:
    """The bfloat16 bit patterns (uint16) of ``array``'s values rounded to nearest even, as
    ``vcvtneps2bf16`` rounds; a NaN stays a NaN (quiet, with its sign and top payload bits),
    infinities and values beyond bfloat16's range round to infinity."""
    bits = np.asarray(array, dtype=np.float32).view(np.uint32)
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    rounded = bits + (0x7FFF + ((bits >> 16) & 1))  # ties to the even upper half
    return np.asarray(np.where(nan, (bits >> 16) | 0x40, rounded >> 16).astype(np.uint16))


def from_bfloat16(bits: np.ndarray) -> np.ndarray:
    """The float32 values of bfloat16 bit patterns (exact: every bfloat16 is a float32)."""
    return np.asarray(np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def storage_dtype(numpy_dtype: np.dtype) -> DType:
    """The dtype of an array braze holds: its own uint16 arrays are bfloat16 bit patterns
    (braze has no uint16), any other as ``as_dtype``."""
    return bfloat16 if numpy_dtype == np.uint16 else as_dtype(numpy_dtype)


def storage_array(value: object, dtype: DType) -> np.ndarray:
    """``value`` (numbers, nested lists, an array) as a new array holding ``dtype``: for
    bfloat16, the bit patterns of its values rounded to nearest even."""
    if dtype is bfloat16:
        with np.errstate(over="ignore"):  # beyond float32's range is infinity, as beyond bfloat16's
            return to_bfloat16(np.array(value, dtype=np.float32))
    return np.array(value, dtype=dtype.numpy)


def largest_finite(dtype: DType) -> float:
    """The largest finite value of the float ``dtype``."""
    if dtype is bfloat16:
        return 3.3895313892515355e38  # (2 - 2^-7) 2^127
    return float(np.finfo(dtype.numpy).max)


def readable(array: np.ndarray, dtype: DType) -> np.ndarray:
    """An array braze holds as the user reads it: bfloat16 as its float32 values."""
    return from_bfloat16(array) if dtype is bfloat16 else array
