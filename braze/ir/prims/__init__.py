"""The closed set of primitives. Importing this package declares every one of them."""

from braze.ir.prims import (
    collectives,
    conv,
    elementwise,
    fusion,
    indexing,
    linalg,
    reductions,
    sources,
    structural,
    window,
)

__all__ = [
    "collectives",
    "conv",
    "elementwise",
    "fusion",
    "indexing",
    "linalg",
    "reductions",
    "sources",
    "structural",
    "window",
]
