"""One primitive run by its NumPy twin: eager CPU execution is exactly this, and the graph
interpreter evaluates a whole graph node by node with it. Floating-point warnings are
silenced because IEEE results (inf, nan) are values here, as in every framework.

NumPy has no bfloat16 (and braze no uint16, so a uint16 array is a bfloat16 one): a
bfloat16 operand reaches the twin as its float32 values, and a
bfloat16 result is the twin's float32 result rounded to nearest even, so every primitive on
bfloat16 computes in float32 and rounds once, as the compiling backends do.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from braze.ir.dtypes import bfloat16, from_bfloat16, to_bfloat16
from braze.ir.primitive import Aval, Category, Primitive


def apply_primitive(primitive: Primitive, arrays: list[np.ndarray], attrs: dict[str, Any], aval: Aval) -> Any:
    """Evaluate one primitive with its NumPy twin, returning an array of exactly ``aval``
    (a tuple of arrays for a loop's tuple of avals)."""
    if primitive.category is not Category.LOOP:  # a loop's twin interprets its body on stored values
        arrays = [from_bfloat16(a) if getattr(a, "dtype", None) == np.uint16 else a for a in arrays]
    with np.errstate(all="ignore"):
        result = primitive.impl(*arrays, **attrs)
    if not isinstance(aval, Aval):  # a loop's results
        return tuple(np.asarray(r, a.dtype.numpy) for r, a in zip(result, aval, strict=True))
    out = np.asarray(result)
    if aval.dtype is bfloat16:
        return out if out.dtype == np.uint16 else to_bfloat16(out)
    if out.dtype != aval.dtype.numpy:
        out = out.astype(aval.dtype.numpy)
    return out
