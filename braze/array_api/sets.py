"""The standard's set functions. Their results' lengths depend on the values, which are
read (see :mod:`braze.ops.values`) and counted with NumPy; every NaN is distinct, and
-0.0 equals 0.0."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from braze.array_api.array_object import Array, wrap
from braze.array_api.elementwise import as_array
from braze.ops import values
from braze.tensor import Tensor


class UniqueAllResult(NamedTuple):
    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class UniqueCountsResult(NamedTuple):
    values: Array
    counts: Array


class UniqueInverseResult(NamedTuple):
    values: Array
    inverse_indices: Array


def _unique(op: str, x: Any) -> tuple[Tensor, list[Array]]:
    """``x`` and its unique values, first positions, inverse (in ``x``'s shape) and counts."""
    x = as_array(x, op)
    flat = values.read(op, x).reshape(-1)
    found, first, inverse, counts = np.unique(
        flat, return_index=True, return_inverse=True, return_counts=True, equal_nan=False
    )
    index = np.int32 if x.size < 2**31 else np.int64
    parts = [found, first.astype(index), inverse.reshape(x.shape).astype(index), counts.astype(index)]
    return x, [wrap(values.constant_like(p, x)) for p in parts]


def unique_all(x: Any, /) -> UniqueAllResult:
    """The unique values, where each first occurs, each element's unique value and the counts."""
    return UniqueAllResult(*_unique("unique_all", x)[1])


def unique_counts(x: Any, /) -> UniqueCountsResult:
    found, _, _, counts = _unique("unique_counts", x)[1]
    return UniqueCountsResult(found, counts)


def unique_inverse(x: Any, /) -> UniqueInverseResult:
    found, _, inverse, _ = _unique("unique_inverse", x)[1]
    return UniqueInverseResult(found, inverse)


def unique_values(x: Any, /) -> Array:
    return _unique("unique_values", x)[1][0]
