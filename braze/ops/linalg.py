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
    return _product(x, y, transposed=False)


def matmul_transposed(x: Any, y: Any) -> Tensor:
    """``x @ swapaxes(y, -1, -2)`` for operands of rank 2 or more (attention's scores,
    ``q @ k^T``), as one product contracting both last axes: ``y`` is never copied
    transposed, and its gradient is computed in its own layout."""
    return _product(x, y, transposed=True)


def _product(x: Any, y: Any, transposed: bool) -> Tensor:
    a, b = _same_dtype(x, y)
    a, b = rounded(a), rounded(b)
    if a.ndim == 0 or b.ndim == 0 or (transposed and b.ndim < 2):
        raise user_error(
            ShapeError,
            f"matmul: operands must have rank >= {2 if transposed else 1}, got {fmt_shape(a.shape)} @ "
            f"{fmt_shape(b.shape)}{'^T' if transposed else ''}",
        )
    a2 = reshape(a, (1, a.shape[0])) if a.ndim == 1 else a
    b2 = reshape(b, (b.shape[0], 1)) if b.ndim == 1 else b
    depth = -1 if transposed else -2  # b's contracting axis
    if a2.shape[-1] != b2.shape[depth]:
        raise user_error(
            ShapeError,
            f"matmul: contracting dimensions differ: {fmt_shape(a.shape)} @ {fmt_shape(b.shape)}"
            f"{'^T' if transposed else ''} ({a2.shape[-1]} != {b2.shape[depth]})",
        )
    n = max(a2.ndim, b2.ndim) - 2 if b2.ndim > 2 else 0
    if n:
        batch = broadcast_shapes("matmul", a2.shape[:-2], b2.shape[:-2])
        a2 = broadcast_to(a2, (*batch, *a2.shape[-2:]), "matmul")
        b2 = broadcast_to(b2, (*batch, *b2.shape[-2:]), "matmul")
    out = linalg.dot_general.bind(
        a2,
        b2,
        lhs_contracting=(a2.ndim - 1,),
        rhs_contracting=(b2.ndim + depth,),
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
