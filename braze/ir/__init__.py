"""braze's intermediate representation: dtypes, avals and the closed primitive set."""

from braze.ir import prims
from braze.ir.dtypes import DType, as_dtype
from braze.ir.primitive import PRIMITIVES, Aval, Literal, Primitive, set_binder

__all__ = ["PRIMITIVES", "Aval", "DType", "Literal", "Primitive", "as_dtype", "prims", "set_binder"]
