"""The closed set of primitives. Importing this package declares every one of them."""

from braze.ir.prims import (
    bitwise,
    collectives,
    conv,
    elementwise,
    fusion,
    indexing,
    linalg,
    loops,
    math,
    reductions,
    scans,
    sources,
    structural,
    window,
)

__all__ = [
    "bitwise",
    "collectives",
    "conv",
    "elementwise",
    "fusion",
    "indexing",
    "linalg",
    "loops",
    "math",
    "reductions",
    "scans",
    "sources",
    "structural",
    "window",
]
