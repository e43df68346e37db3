"""``einsum``: products and sums of tensors written as index subscripts
(``"bqd,bkd->bqk"``), as ``np.einsum``, ``tf.einsum`` and ``keras.ops.einsum`` take them.

Each operand first sums away the indices no other operand and not the output has; the
operands are then multiplied two at a time, left to right, each product a batched matrix
product: the indices both share and the result keeps are its batch, those only one has
its rows or columns, the shared ones it drops its depth. Transposes and reshapes put the
operands in that layout, so the compiler sees matrix products, whose gradients are its
own. An index repeated within one operand (a diagonal) is not supported, and the axes an
ellipsis stands for must have equal sizes in every operand (no broadcasting of size 1).
"""

from __future__ import annotations

import math
import string
from typing import Any

from braze.ir.errors import ShapeError
from braze.ops.core import as_tensor
from braze.ops.linalg import matmul
from braze.ops.reduction import sum as reduce_sum
from braze.ops.shape import reshape, transpose
from braze.tensor import Tensor, user_error

__all__ = ["einsum"]


def _parse(subscripts: str, ranks: list[int]) -> tuple[list[str], str]:
    """Each operand's indices and the output's, ``...`` spelled out as letters the
    subscripts do not use (as many as the operand's rank leaves)."""
    text = subscripts.replace(" ", "")
    inputs, arrow, output = text.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(ranks):
        raise ValueError(f"einsum: {subscripts!r} names {len(terms)} operands, got {len(ranks)}")
    free = [c for c in string.ascii_letters if c not in text]
    widest = max((rank - len(term.replace("...", "")) for term, rank in zip(terms, ranks, strict=True)), default=0)
    ellipsis = "".join(free[:widest])
    spelled = []
    for term, rank in zip(terms, ranks, strict=True):
        if "..." in term:
            term = term.replace("...", ellipsis[len(ellipsis) - (rank - len(term.replace("...", ""))) :])
        if len(term) != rank or not term.isalpha():
            raise ValueError(f"einsum: {subscripts!r}: {term!r} does not name the {rank} axes of its operand")
        if len(set(term)) != len(term):
            raise NotImplementedError(f"einsum: {term!r} repeats an index within one operand (a diagonal)")
        spelled.append(term)
    if arrow:
        output = output.replace("...", ellipsis)
    else:  # NumPy's implicit output: the ellipsis, then the indices used once, in order
        counts = "".join(spelled)
        output = ellipsis + "".join(sorted(c for c in set(counts) if counts.count(c) == 1 and c not in ellipsis))
    if len(set(output)) != len(output) or any(c not in "".join(spelled) for c in output):
        raise ValueError(f"einsum: {subscripts!r}: the output {output!r} names an index twice or one no operand has")
    return spelled, output


def _sizes(terms: list[str], tensors: list[Tensor], subscripts: str) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for term, t in zip(terms, tensors, strict=True):
        for index, size in zip(term, t.shape, strict=True):
            if sizes.setdefault(index, size) != size:
                raise user_error(
                    ShapeError,
                    f"einsum: {subscripts!r}: index {index!r} is {sizes[index]} in one operand, {size} in another",
                )
    return sizes


def _summed_away(t: Tensor, term: str, keep: set[str]) -> tuple[Tensor, str]:
    axes = tuple(i for i, c in enumerate(term) if c not in keep)
    if not axes:
        return t, term
    return reduce_sum(t, axis=axes), "".join(c for c in term if c in keep)


def _arranged(t: Tensor, term: str, order: str) -> Tensor:
    return t if term == order else transpose(t, [term.index(c) for c in order])


def _product(
    a: Tensor, a_term: str, b: Tensor, b_term: str, keep: set[str], sizes: dict[str, int]
) -> tuple[Tensor, str]:
    """``a`` times ``b`` summed over their shared indices that ``keep`` lacks, as a batched
    matrix product; the result's indices: batch, ``a``'s own, ``b``'s own."""
    batch = "".join(c for c in a_term if c in b_term and c in keep)
    depth = "".join(c for c in a_term if c in b_term and c not in keep)
    rows = "".join(c for c in a_term if c not in b_term)
    cols = "".join(c for c in b_term if c not in a_term)

    def size(indices: str) -> int:
        return math.prod(sizes[c] for c in indices)

    left = reshape(_arranged(a, a_term, batch + rows + depth), (size(batch), size(rows), size(depth)))
    right = reshape(_arranged(b, b_term, batch + depth + cols), (size(batch), size(depth), size(cols)))
    result = matmul(left, right)
    term = batch + rows + cols
    return reshape(result, tuple(sizes[c] for c in term)), term


def einsum(subscripts: str, *operands: Any) -> Tensor:
    """The sum of products ``subscripts`` describes, as ``np.einsum`` (without diagonals, and
    without broadcasting an ellipsis's axes of size 1; see the module's text)."""
    if not operands:
        raise ValueError("einsum: no operands")
    tensors = [as_tensor(x) for x in operands]
    terms, output = _parse(subscripts, [t.ndim for t in tensors])
    sizes = _sizes(terms, tensors, subscripts)
    tensors = list(tensors)
    for k, (t, term) in enumerate(zip(tensors, terms, strict=True)):
        others = set(output).union(*(terms[j] for j in range(len(terms)) if j != k))
        tensors[k], terms[k] = _summed_away(t, term, others)
    result, term = tensors[0], terms[0]
    for k in range(1, len(tensors)):
        keep = set(output).union(*terms[k + 1 :])
        result, term = _product(result, term, tensors[k], terms[k], keep, sizes)
        result, term = _summed_away(result, term, keep)
    return _arranged(result, term, output)
