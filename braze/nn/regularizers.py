"""Weight penalties as Keras spells them: ``kernel_regularizer=regularizers.l2(1e-4)``.

A layer's ``add_weight(regularizer=...)`` keeps the regularizer beside the weight (Dense's
``kernel_regularizer`` and ``bias_regularizer`` go there); :func:`penalty` sums every
layer's terms into one tensor that training adds to the loss inside the step, so eager,
lazy and ``jit_compile`` training all minimise (and report) the same regularized loss, as
Keras does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from braze import ops
from braze.tensor import Tensor


class Regularizer:
    """A function of one weight tensor giving a scalar penalty."""

    def __call__(self, weight: Tensor) -> Tensor:
        raise NotImplementedError


class L1L2(Regularizer):
    """``l1 * sum(|w|) + l2 * sum(w**2)``, Keras's definition (no factor 1/2 on the L2 term)."""

    def __init__(self, l1: float = 0.0, l2: float = 0.0) -> None:
        if l1 < 0 or l2 < 0:
            raise ValueError(f"regularization factors must be >= 0, got l1={l1}, l2={l2}")
        self.l1, self.l2 = float(l1), float(l2)

    def __call__(self, weight: Tensor) -> Tensor:
        total = ops.zeros((), weight.dtype, device=weight.device)
        if self.l1:
            total = total + self.l1 * ops.sum(ops.abs(weight))
        if self.l2:
            total = total + self.l2 * ops.sum(weight * weight)
        return total

    def __repr__(self) -> str:
        return f"L1L2(l1={self.l1}, l2={self.l2})"

    def get_config(self) -> dict[str, float]:
        return {"l1": self.l1, "l2": self.l2}

    @classmethod
    def from_config(cls, config: dict[str, float]) -> L1L2:
        return cls(**config)


def l1(l1: float = 0.01) -> L1L2:
    return L1L2(l1=l1)


def l2(l2: float = 0.01) -> L1L2:
    return L1L2(l2=l2)


def l1_l2(l1: float = 0.01, l2: float = 0.01) -> L1L2:
    return L1L2(l1=l1, l2=l2)


L1, L2 = l1, l2
_BY_NAME = {"l1": l1, "l2": l2, "l1_l2": l1_l2}


def get(regularizer: str | Callable[[Tensor], Tensor] | None) -> Callable[[Tensor], Tensor] | None:
    """A regularizer from Keras's names ('l1', 'l2', 'l1_l2' with their default factors), a
    function of the weight, or None."""
    if regularizer is None or callable(regularizer):
        return regularizer
    if regularizer not in _BY_NAME:
        raise ValueError(f"unknown regularizer {regularizer!r}: expected one of {sorted(_BY_NAME)} or a function")
    return _BY_NAME[regularizer]()


def penalty(model: Any) -> Tensor | None:
    """The sum of every layer's weight penalties (part of ``model.losses`` in Keras), or None."""
    terms = []
    for _, module in model.named_modules():
        for weight, regularizer in module.__dict__.get("_weight_regularizers", ()):
            terms.append(regularizer(weight))
    if not terms:
        return None
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total
