"""One primitive run by its NumPy twin: eager CPU execution is exactly this, and the graph
interpreter evaluates a whole graph node by node with it. Floating-point warnings are
silenced because IEEE results (inf, nan) are values here, as in every framework.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from braze.ir.primitive import Aval, Primitive


def apply_primitive(primitive: Primitive, arrays: list[np.ndarray], attrs: dict[str, Any], aval: Aval) -> Any:
    """Evaluate one primitive with its NumPy twin, returning an array of exactly ``aval``
    (a tuple of arrays for a loop's tuple of avals)."""
    with np.errstate(all="ignore"):
        result = primitive.impl(*arrays, **attrs)
    if not isinstance(aval, Aval):  # a loop's results
        return tuple(np.asarray(r, a.dtype.numpy) for r, a in zip(result, aval, strict=True))
    out = np.asarray(result)
    if out.dtype != aval.dtype.numpy:
        out = out.astype(aval.dtype.numpy)
    return out
