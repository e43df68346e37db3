"""The standard's sort and argsort: stable in both directions, NaN last (first,
descending); ``stable=False`` is accepted and sorts stably too."""

from __future__ import annotations

from typing import Any

import braze.ops as ops
from braze.array_api.array_object import Array, wrap
from braze.array_api.elementwise import as_array


def sort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    """``x`` sorted along ``axis``."""
    return wrap(ops.sort(as_array(x, "sort"), axis, descending))


def argsort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    """The positions along ``axis`` that sort ``x``."""
    return wrap(ops.argsort(as_array(x, "argsort"), axis, descending))
