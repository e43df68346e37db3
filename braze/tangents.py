"""Forward mode's state: the open *levels*, and pushing tangents through one op.

``braze.jvp`` opens a level for the call of its function and gives the function's inputs a
tangent at that level. While levels are open, ``bind`` hands each result to :func:`push`,
which gives it a tangent at every level where an operand has one, from the primitive's JVP
rule. Tangents are ordinary tensors, so they are traced lazily, compiled by ``braze.jit``
and differentiated in reverse mode like any value (a gradient of a JVP).

Levels nest (a ``jvp`` of a ``jvp``, a Hessian by ``jacfwd`` of ``jacfwd``): a level's rule
runs with only the levels outside it open, so the tangent it computes carries the outer
levels' tangents (the outer derivative differentiates it) while nothing inside sees it,
as JAX orders its traces; an inner level's tangent can never be mistaken for an outer's
("perturbation confusion"). Level numbers are never reused, so a tangent left on a tensor
after its ``jvp`` returned is never read again.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from braze.ir.primitive import Primitive


class _Levels(threading.local):
    open: tuple[int, ...] = ()


LEVELS = _Levels()
_NUMBERS = itertools.count()


@contextlib.contextmanager
def new_level() -> Iterator[int]:
    """Open a level inside the open ones for the block; its number names its tangents."""
    number = next(_NUMBERS)
    outer = LEVELS.open
    LEVELS.open = (*outer, number)
    try:
        yield number
    finally:
        LEVELS.open = outer


def push(primitive: Primitive, args: Sequence[Any], attrs: dict, out: Any) -> None:
    """Give ``out`` its tangent at each open level where one of ``args`` has one: outer
    levels first, since an inner level's rule reads ``out`` and differentiates it by them."""
    if not any([t._tangents for t in args]):
        return
    levels = LEVELS.open
    for k, level in enumerate(levels):
        tangents = tuple([t._tangents.get(level) if t._tangents else None for t in args])
        if all(t is None for t in tangents):
            continue
        if primitive.jvp is None:
            raise NotImplementedError(
                f"forward-mode differentiation of {primitive.name}: the primitive has a VJP rule but no JVP "
                "rule; declare one beside its VJP (or a derivation: derived.Linear, Bilinear, Diagonal)"
            )
        LEVELS.open = levels[:k]
        try:
            tangent = primitive.jvp(tangents, *args, out=out, **attrs)
        finally:
            LEVELS.open = levels
        if tangent is not None:
            if out._tangents is None:
                out._tangents = {}
            out._tangents[level] = tangent
