"""The closed set of primitives. Importing this package declares every one of them."""

from braze.ir.prims import conv, elementwise, fusion, linalg, reductions, sources, structural, window

__all__ = ["conv", "elementwise", "fusion", "linalg", "reductions", "sources", "structural", "window"]
