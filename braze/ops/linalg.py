"""Matrix products with NumPy's ``matmul`` semantics."""

from __future__ import annotations

from typing import Any

from braze.ir.errors import ShapeError
from braze.ir.prims import linalg
from braze.ir.prims.checks import fmt_shape
from braze.ops.autocast import rounded
from braze.ops.core import as_tensor, astype, broadcast_shapes, broadcast_to, check_compatible
from braze.ops.shape import reshape
from braze.tensor import Tensor, user_error


def matmul(x: Any, y: Any) -> Tensor:
    """``x @ y``: 1-D operands are promoted and squeezed, leading dimensions broadcast; in
    bfloat16 under ``braze.autocast``."""
    a, b = _same_dtype(x, y)
    a, b = rounded(a), rounded(b)
    if a.ndim == 0 or b.ndim == 0:
        raise user_error(
            ShapeError, f"matmul: operands must have rank >= 1, got {fmt_shape(a.shape)} @ {fmt_shape(b.shape)}"
        )
    a2 = reshape(a, (1, a.shape[0])) if a.ndim == 1 else a
    b2 = reshape(b, (b.shape[0], 1)) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise user_error(
            ShapeError,
            f"matmul: contracting dimensions differ: {fmt_shape(a.shape)} @ {fmt_shape(b.shape)} "
            f"({a2.shape[-1]} != {b2.shape[-2]})",
        )
    if b2.ndim == 2:
        out = linalg.dot_general.bind(
            a2, b2, lhs_contracting=(a2.ndim - 1,), rhs_contracting=(0,), lhs_batch=(), rhs_batch=()
        )
    else:
        batch = broadcast_shapes("matmul", a2.shape[:-2], b2.shape[:-2])
        a3 = broadcast_to(a2, (*batch, *a2.shape[-2:]), "matmul")
        b3 = broadcast_to(b2, (*batch, *b2.shape[-2:]), "matmul")
        n = len(batch)
        out = linalg.dot_general.bind(
            a3,
            b3,
            lhs_contracting=(n + 1,),
            rhs_contracting=(n,),
            lhs_batch=tuple(range(n)),
            rhs_batch=tuple(range(n)),
        )
    if a.ndim == 1:
        out = reshape(out, out.shape[:-2] + out.shape[-1:])
    if b.ndim == 1:
        out = reshape(out, out.shape[:-1])
    return rounded(astype(out, a.dtype))  # bfloat16 operands accumulate in float32, then round once


def _same_dtype(x: Any, y: Any) -> tuple[Tensor, Tensor]:
    a = as_tensor(x)
    b = as_tensor(y, like=a)
    check_compatible("matmul", [a, b])
    return a, b
