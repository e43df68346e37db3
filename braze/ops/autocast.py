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
import threading
from typing import Any

from braze.ir.dtypes import as_dtype, bfloat16, float32
from braze.ir.errors import BrazeError, DTypeError
from braze.ir.prims import elementwise
from braze.runtime.device import as_device
from braze.tensor import Tensor


class _Blocks(threading.local):
    """The ``autocast`` blocks open in this thread, innermost last (as PyTorch's autocast
    state, each thread's own: a thread started inside a block is not in it)."""

    def __init__(self) -> None:
        self.open: list[bool] = []


_BLOCKS = _Blocks()
_POLICY = [False]  # set_autocast: the process's setting outside any block (Keras's global policy)


class autocast(contextlib.ContextDecorator):  # noqa: N801 - spelled as torch.autocast
    """Run matrix products and convolutions in bfloat16 with float32 accumulation inside
    the block (or the decorated function); ``enabled=False`` turns it off inside an outer
    one. Only bfloat16 is supported. Spelled ``autocast("bfloat16")`` or as PyTorch's
    ``autocast("cpu", dtype=braze.bfloat16)`` (any device type: the dtype is bfloat16 for
    all, where PyTorch's CUDA default is float16)."""

    def __init__(
        self,
        device_type: Any = None,
        dtype: Any = None,
        enabled: bool = True,
        cache_enabled: bool | None = None,  # PyTorch's signature; braze caches no casts
    ) -> None:
        if device_type is not None and not _names_device(device_type):
            if dtype is not None:
                raise DTypeError(f"autocast: {device_type!r} is neither a device type nor a dtype")
            device_type, dtype = None, device_type  # braze's own spelling: autocast("bfloat16")
        if dtype is not None and as_dtype(dtype, "autocast") is not bfloat16:
            raise DTypeError(f"autocast: only bfloat16 is supported, got {as_dtype(dtype).name}")
        self.enabled = bool(enabled)

    def __enter__(self) -> autocast:
        _BLOCKS.open.append(self.enabled)
        return self

    def __exit__(self, *exc: object) -> None:
        _BLOCKS.open.pop()


def _names_device(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        as_device(value)
    except BrazeError:
        return False
    return True


def set_autocast(enabled: bool) -> None:
    """Turn bfloat16 autocast on or off outside any ``autocast`` block, in every thread
    (what Keras's ``mixed_precision.set_global_policy("mixed_bfloat16")`` does)."""
    _POLICY[0] = bool(enabled)


def is_autocast_enabled() -> bool:
    """Whether matrix products and convolutions run in bfloat16 here (inside an enabled
    ``autocast`` of this thread, or after ``set_autocast(True)``)."""
    blocks = _BLOCKS.open
    return blocks[-1] if blocks else _POLICY[0]


def rounded(x: Tensor) -> Tensor:
    """``x`` rounded to bfloat16 and read back as float32, when autocast is on and ``x`` is
    float32; ``x`` itself otherwise."""
    if x.dtype is not float32 or not is_autocast_enabled():
        return x
    return elementwise.convert.bind(elementwise.convert.bind(x, dtype=bfloat16), dtype=float32)
