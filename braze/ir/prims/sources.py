"""Primitives without array operands: parameters, constants, iota and counter-based random
numbers. Random numbers are a pure function of (key, element index), so eager NumPy, the
reference interpreter and generated C produce the same bits for the same seed."""

from __future__ import annotations

import numpy as np

from braze.ir.dtypes import DType, int64
from braze.ir.errors import DTypeError, ShapeError
from braze.ir.primitive import Aval, Category, Literal, Primitive, register
from braze.ir.prims import checks

GOLDEN = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB


def _check_shape(op: str, shape) -> None:
    if any(not isinstance(s, (int, np.integer)) or s < 0 for s in shape):
        raise ShapeError(f"{op}: shape must be non-negative integers, got {tuple(shape)}")


def _parameter_rule(*, index: int, shape, dtype: DType) -> Aval:
    _check_shape("parameter", shape)
    return Aval(tuple(shape), dtype)


def _parameter_impl(*, index, shape, dtype):
    raise RuntimeError(f"parameter {index} has no value outside a graph evaluation")


parameter = register(
    Primitive(
        "parameter", _parameter_rule, _parameter_impl, None, ("index", "shape", "dtype"), category=Category.PARAMETER
    )
)

constant = register(
    Primitive(
        "constant",
        lambda *, value: value.aval,
        lambda *, value: value.array,
        None,
        ("value",),
        category=Category.SOURCE,
    )
)


def _iota_rule(*, shape, dimension: int, dtype: DType) -> Aval:
    _check_shape("iota", shape)
    checks.check_axes("iota", (dimension,), len(shape))
    return Aval(tuple(shape), dtype)


def _iota_impl(*, shape, dimension, dtype):
    line = np.arange(shape[dimension], dtype=dtype.compute.numpy)
    view = [1] * len(shape)
    view[dimension] = shape[dimension]
    return np.broadcast_to(line.reshape(view), shape)


iota = register(
    Primitive("iota", _iota_rule, _iota_impl, None, ("shape", "dimension", "dtype"), category=Category.SOURCE)
)


def splitmix64(z: np.ndarray) -> np.ndarray:
    """The SplitMix64 finaliser on uint64 arrays (wrapping arithmetic)."""
    z = z + np.uint64(GOLDEN)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(MIX1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(MIX2)
    return z ^ (z >> np.uint64(31))


def uniform_bits_to_float(bits: np.ndarray, dtype: DType) -> np.ndarray:
    if dtype.itemsize == 4:
        return ((bits >> np.uint64(40)).astype(np.float32) * np.float32(2.0**-24)).astype(np.float32)
    return (bits >> np.uint64(11)).astype(np.float64) * 2.0**-53


def _rng_rule(key: Aval, *, shape, dtype: DType) -> Aval:
    _check_shape("rng_uniform", shape)
    if key.shape != () or key.dtype != int64:
        raise DTypeError(f"rng_uniform: the key must be an int64 scalar, got {key}")
    if not dtype.is_float:
        raise DTypeError(f"rng_uniform: samples must be float32 or float64, got {dtype.name}")
    return Aval(tuple(shape), dtype)


def _rng_impl(key, *, shape, dtype):
    seed = splitmix64(np.asarray(key, dtype=np.int64).astype(np.uint64).reshape(1))
    index = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.uint64)
    return uniform_bits_to_float(splitmix64(seed + index), dtype).reshape(shape)


rng_uniform = register(
    Primitive("rng_uniform", _rng_rule, _rng_impl, None, ("shape", "dtype"), category=Category.SOURCE)
)

__all__ = ["Literal", "constant", "iota", "parameter", "rng_uniform", "splitmix64"]
