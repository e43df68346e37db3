"""Bitwise ops of integer and bool tensors, with broadcasting and weak Python scalars.

On bool tensors and, or, xor and not are the logical ones. A shift by a count outside
[0, bits) gives what NumPy gives (0, or -1 for a negative value shifted right).
"""

from __future__ import annotations

from typing import Any

from braze.ir.errors import DTypeError
from braze.ir.prims import bitwise as bits
from braze.ops.core import as_tensor, operands
from braze.tensor import Tensor, user_error


def _require(name: str, x: Tensor, kinds: str) -> None:
    if x.dtype.kind not in kinds:
        what = "integer or bool" if "b" in kinds else "integer"
        raise user_error(DTypeError, f"{name}: expected {what} tensors, got {x.dtype.name}")


def _binary(primitive, name: str, kinds: str):
    def op(x: Any, y: Any) -> Tensor:
        a, b = operands(name, x, y)
        _require(name, a, kinds)
        return primitive.bind(a, b)

    op.__name__ = op.__qualname__ = name  # the name it is bound to in this module
    op.__doc__ = f"Elementwise {name.replace('_', ' ')} with broadcasting."
    return op


bitwise_and = _binary(bits.and_, "bitwise_and", "bi")
bitwise_or = _binary(bits.or_, "bitwise_or", "bi")
bitwise_xor = _binary(bits.xor, "bitwise_xor", "bi")
bitwise_left_shift = _binary(bits.shift_left, "bitwise_left_shift", "i")
bitwise_right_shift = _binary(bits.shift_right, "bitwise_right_shift", "i")


def bitwise_not(x: Any) -> Tensor:
    """Elementwise bitwise NOT (``~``): ``-x - 1`` for integers, logical NOT for bools."""
    x = as_tensor(x)
    _require("bitwise_not", x, "bi")
    return bits.not_.bind(x)
