"""dot_general: batched contraction with explicit batch and contracting dimensions (XLA's).

The output's dimensions are the batch dimensions, then the lhs free dimensions, then the rhs
free dimensions, each in operand order. Its transposes are again dot_generals, with the
operands in whichever order gives the operand's layout, else followed by a transpose that
puts the contracted result back in it; being bilinear, its JVP is the product rule.

On bfloat16 operands it accumulates in float32 and returns float32 (``vdpbf16ps``'s
contract, and XLA's dot with a float32 ``preferred_element_type``): a bfloat16 product is
exact in float32, so only the accumulation rounds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from braze.ir.dtypes import bfloat16, float32
from braze.ir.errors import ShapeError
from braze.ir.primitive import Aval, Category, Primitive, register
from braze.ir.prims import checks, derived, elementwise, structural
from braze.ir.prims.checks import fmt_shape

ATTRS = ("lhs_contracting", "rhs_contracting", "lhs_batch", "rhs_batch")


def free_dims(ndim: int, contracting, batch) -> list[int]:
    return [d for d in range(ndim) if d not in contracting and d not in batch]


def _rule(x: Aval, y: Aval, *, lhs_contracting, rhs_contracting, lhs_batch, rhs_batch) -> Aval:
    op = "dot_general"
    checks.same_dtypes(op, x, y)
    checks.require_kinds(op, x, "if", "a numeric")
    checks.check_axes(op, (*lhs_contracting, *lhs_batch), x.ndim)
    checks.check_axes(op, (*rhs_contracting, *rhs_batch), y.ndim)
    for name, a, b in (("contracting", lhs_contracting, rhs_contracting), ("batch", lhs_batch, rhs_batch)):
        if len(a) != len(b) or any(x.shape[i] != y.shape[j] for i, j in zip(a, b, strict=False)):
            raise ShapeError(
                f"{op}: {name} dimensions {tuple(a)} of {fmt_shape(x.shape)} and {tuple(b)} of "
                f"{fmt_shape(y.shape)} do not match"
            )
    shape = (
        tuple(x.shape[d] for d in lhs_batch)
        + tuple(x.shape[d] for d in free_dims(x.ndim, lhs_contracting, lhs_batch))
        + tuple(y.shape[d] for d in free_dims(y.ndim, rhs_contracting, rhs_batch))
    )
    return Aval(shape, float32 if x.dtype is bfloat16 else x.dtype)


def _impl(x: np.ndarray, y: np.ndarray, *, lhs_contracting, rhs_contracting, lhs_batch, rhs_batch):
    x_free = free_dims(x.ndim, lhs_contracting, lhs_batch)
    y_free = free_dims(y.ndim, rhs_contracting, rhs_batch)
    batch_shape = [x.shape[d] for d in lhs_batch]
    b = int(np.prod(batch_shape, dtype=np.int64))
    k = int(np.prod([x.shape[d] for d in lhs_contracting], dtype=np.int64))
    # Sizes spelled out: a -1 cannot be inferred where a dimension is 0.
    m = int(np.prod([x.shape[d] for d in x_free], dtype=np.int64))
    n = int(np.prod([y.shape[d] for d in y_free], dtype=np.int64))
    a3 = np.transpose(x, [*lhs_batch, *x_free, *lhs_contracting]).reshape(b, m, k)
    b3 = np.transpose(y, [*rhs_batch, *rhs_contracting, *y_free]).reshape(b, k, n)
    out_shape = batch_shape + [x.shape[d] for d in x_free] + [y.shape[d] for d in y_free]
    return np.matmul(a3, b3).reshape(out_shape)


def _argsort(axes: Sequence[int]) -> tuple[int, ...]:
    """The positions of ``axes`` (distinct) in increasing order of their values."""
    return tuple(sorted(range(len(axes)), key=axes.__getitem__))


def _transpose_lhs(g, x, y, *, lhs_contracting, rhs_contracting, lhs_batch, rhs_batch, ans_lhs_first):
    """Cotangent of the lhs: contract g's rhs-free part with y's free dims, then reorder
    (on bfloat16 operands, with g rounded to bfloat16 and the cotangent too)."""
    x_free = free_dims(len(x.shape), lhs_contracting, lhs_batch)
    y_free = free_dims(len(y.shape), rhs_contracting, rhs_batch)
    nb = len(lhs_batch)
    if ans_lhs_first:
        g_y_free = tuple(range(nb + len(x_free), nb + len(x_free) + len(y_free)))
    else:
        g_y_free = tuple(range(nb, nb + len(y_free)))
    if y.dtype is bfloat16:
        g = elementwise.convert.bind(g, dtype=bfloat16)
    order = _argsort(rhs_contracting)
    contracted = [lhs_contracting[i] for i in order]
    layout = [*lhs_batch, *x_free, *contracted]
    swapped = [*lhs_batch, *contracted, *x_free]
    g_side = (g, g_y_free, tuple(range(nb)))
    y_side = (y, tuple(y_free), tuple(rhs_batch))
    if _argsort(swapped) == tuple(range(len(swapped))) != _argsort(layout):
        # y times g lands in x's layout where g times y would need a transpose: a weight
        # gradient x^T g of a kernel stored (in, out), which would otherwise be copied
        # column by column after its product.
        g_side, y_side, layout = y_side, g_side, swapped
    result = dot_general.bind(
        g_side[0],
        y_side[0],
        lhs_contracting=g_side[1],
        rhs_contracting=y_side[1],
        lhs_batch=g_side[2],
        rhs_batch=y_side[2],
    )
    permutation = _argsort(layout)
    if x.dtype is bfloat16:
        result = elementwise.convert.bind(result, dtype=bfloat16)
    if permutation == tuple(range(len(permutation))):
        return result
    return structural.transpose.bind(result, permutation=permutation)


def _vjp(g, x, y, out, *, lhs_contracting, rhs_contracting, lhs_batch, rhs_batch):
    # Thunks: a gradient with respect to one operand only (an input's, in a gradient
    # penalty) never computes the other's product.
    def gx():
        return _transpose_lhs(
            g,
            x,
            y,
            lhs_contracting=lhs_contracting,
            rhs_contracting=rhs_contracting,
            lhs_batch=lhs_batch,
            rhs_batch=rhs_batch,
            ans_lhs_first=True,
        )

    def gy():
        return _transpose_lhs(
            g,
            y,
            x,
            lhs_contracting=rhs_contracting,
            rhs_contracting=lhs_contracting,
            lhs_batch=rhs_batch,
            rhs_batch=lhs_batch,
            ans_lhs_first=False,
        )

    return gx, gy


dot_general = register(
    Primitive("dot_general", _rule, _impl, _vjp, ATTRS, category=Category.CONTRACTION, jvp=derived.BILINEAR)
)
