"""Mixed precision, as ``torch.autocast``: inside ``with braze.autocast("bfloat16"):``
matrix products and convolutions of float32 tensors multiply bfloat16 operands and
accumulate in float32, and their results are rounded to bfloat16 precision; everything
else (parameters, optimizer state, reductions, losses, softmaxes) stays float32.

The operands and the result are rounded in place, as float32 tensors holding bfloat16
values (a round trip through bfloat16), so the rest of a program keeps its float32 types
and its gradients: a round trip's derivative is the rounding of the cotangent, so the
backward products run on bfloat16 operands too. A compiling backend fuses each rounding
into the kernel that produces or reads the value, and the CPU backend computes a product
of rounded operands with ``vdpbf16ps`` where the target has AVX512-BF16.

``braze.jit`` guards on it: a compiled function called with autocast on and off is
compiled once for each.
"""

from __future__ import annotations

import contextlib
from typing import Any

from braze.ir.dtypes import as_dtype, bfloat16, float32
from braze.ir.errors import DTypeError
from braze.ir.prims import elementwise
from braze.tensor import Tensor

_ACTIVE: list[bool] = [False]  # a stack: the innermost ``autocast`` decides


class autocast(contextlib.ContextDecorator):  # noqa: N801 - spelled as torch.autocast
    """Run matrix products and convolutions in bfloat16 with float32 accumulation inside
    the block (or the decorated function); ``enabled=False`` turns it off inside an outer
    one. Only ``"bfloat16"`` is supported."""

    def __init__(self, dtype: Any = "bfloat16", enabled: bool = True) -> None:
        if as_dtype(dtype, "autocast") is not bfloat16:
            raise DTypeError(f"autocast: only bfloat16 is supported, got {as_dtype(dtype).name}")
        self.enabled = bool(enabled)

    def __enter__(self) -> autocast:
        _ACTIVE.append(self.enabled)
        return self

    def __exit__(self, *exc: object) -> None:
        _ACTIVE.pop()


def set_autocast(enabled: bool) -> None:
    """Turn bfloat16 autocast on or off outside any ``autocast`` block (what Keras's
    ``mixed_precision.set_global_policy("mixed_bfloat16")`` does)."""
    _ACTIVE[0] = bool(enabled)


def is_autocast_enabled() -> bool:
    """Whether matrix products and convolutions run in bfloat16 here (inside an enabled
    ``autocast``, or after ``set_autocast(True)``)."""
    return _ACTIVE[-1]


def rounded(x: Tensor) -> Tensor:
    """``x`` rounded to bfloat16 and read back as float32, when autocast is on and ``x`` is
    float32; ``x`` itself otherwise."""
    if not _ACTIVE[-1] or x.dtype is not float32:
        return x
    return elementwise.convert.bind(elementwise.convert.bind(x, dtype=bfloat16), dtype=float32)
