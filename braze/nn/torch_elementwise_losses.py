"""PyTorch's elementwise losses as PyTorch programs call them: ``mse_loss``, ``l1_loss``,
``smooth_l1_loss``, ``huber_loss``, ``binary_cross_entropy``,
``binary_cross_entropy_with_logits`` and ``kl_div`` of ``torch.nn.functional``, and their
modules (``MSELoss``, ``L1Loss``, ``SmoothL1Loss``, ``HuberLoss``, ``BCELoss``,
``BCEWithLogitsLoss``, ``KLDivLoss``), with PyTorch's arguments, defaults and formulas;
``kl_div`` also takes the reduction ``"batchmean"``.

Each takes a target of the input's shape. PyTorch broadcasts a target of another shape for
the regression losses and ``kl_div``, with at most a warning (an ``(N, 1)`` prediction
against an ``(N,)`` target silently becomes an ``(N, N)`` loss); braze raises a
:class:`ShapeError` instead, as PyTorch does for the binary cross-entropies.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from braze import ops
from braze.ir.errors import DTypeError, ShapeError
from braze.nn.losses import binary_cross_entropy_elements
from braze.nn.torch_losses import REDUCTIONS, Loss, check_reduction, reduce_losses
from braze.ops.tensorflow import softplus
from braze.tensor import Tensor, user_error

KL_REDUCTIONS = (*REDUCTIONS, "batchmean")

# Elementwise losses ------------------------------------------------------------------------


def _matched(
    name: str, reduction: str, input: Any, target: Any, allowed: tuple[str, ...] = REDUCTIONS
) -> tuple[Tensor, Tensor]:
    """A floating input and a target of its shape, converted to its dtype and device."""
    check_reduction(name, reduction, allowed)
    x = ops.as_tensor(input)
    if x.dtype.kind != "f":
        raise user_error(DTypeError, f"{name}: input must be floating point, got {x.dtype}")
    y = ops.as_tensor(target, device=x.device)
    if y.shape != x.shape:
        raise user_error(
            ShapeError,
            f"{name}: target {y.shape} must have the input's shape {x.shape} (PyTorch would broadcast the two, "
            "which is seldom meant; braze does not: reshape one)",
        )
    return x, y.astype(x.dtype)


def _broadcast_weight(name: str, what: str, value: Any, x: Tensor) -> Tensor:
    """``weight`` or ``pos_weight`` as a tensor of the input's shape, from any shape that broadcasts to it."""
    w = ops.as_tensor(value, dtype=x.dtype, device=x.device)
    try:
        fits = np.broadcast_shapes(w.shape, x.shape) == x.shape
    except ValueError:
        fits = False
    if not fits:
        raise user_error(ShapeError, f"{name}: {what} {w.shape} must broadcast to the input's shape {x.shape}")
    return ops.broadcast_to(w, x.shape)


def _weighted(name: str, losses: Tensor, weight: Any, reduction: str, by_weight: bool = False) -> Tensor:
    """``losses`` times ``weight`` (one per element, or broadcast to them), reduced: the
    mean divides by the weights' sum when ``by_weight`` (PyTorch's mse_loss and l1_loss),
    else by the number of elements (the others)."""
    if weight is not None:
        w = _broadcast_weight(name, "weight", weight, losses)
        losses = losses * w
        if by_weight and reduction == "mean":
            return ops.sum(losses) / ops.sum(w)
    return reduce_losses(losses, reduction, losses.size)


def _huber(error: Tensor, delta: float) -> Tensor:
    """``e**2 / 2`` below ``delta``, ``delta * (e - delta / 2)`` above, for ``e >= 0``: by
    ``min(e, delta)``, so each piece has its own derivative and no where is needed."""
    quadratic = ops.minimum(error, delta)
    return 0.5 * quadratic * quadratic + delta * (error - quadratic)


def _clamped_log(p: Tensor) -> Tensor:
    """``log(p)``, but no less than -100, as PyTorch's binary_cross_entropy clamps it (a
    probability of 0 costs 100, not inf). Guarded by where so that p = 0 has gradient 0:
    the maximum's 0 times log's infinite slope there would be NaN."""
    positive = p > 0
    return ops.where(positive, ops.maximum(ops.log(ops.where(positive, p, 1.0)), -100.0), -100.0)


def _xlogx(y: Tensor) -> Tensor:
    """``y * log(y)``, 0 at y = 0 (PyTorch's ``xlogy(y, y)``; NaN below 0, as there)."""
    nonzero = ops.not_equal(y, 0.0)
    return ops.where(nonzero, y * ops.log(ops.where(nonzero, y, 1.0)), 0.0)


def mse_loss(input: Any, target: Any, reduction: str = "mean", weight: Any = None) -> Tensor:
    """``torch.nn.functional.mse_loss``: ``weight * (input - target)**2``, whose weighted
    mean divides by the weights' sum (PyTorch's). A target of another shape than the
    input's is a ShapeError where PyTorch broadcasts it with a warning."""
    x, y = _matched("mse_loss", reduction, input, target)
    diff = x - y
    return _weighted("mse_loss", diff * diff, weight, reduction, by_weight=True)


def l1_loss(input: Any, target: Any, reduction: str = "mean", weight: Any = None) -> Tensor:
    """``torch.nn.functional.l1_loss``: ``weight * |input - target|``, whose weighted mean
    divides by the weights' sum; targets of another shape are a ShapeError, as in mse_loss."""
    x, y = _matched("l1_loss", reduction, input, target)
    return _weighted("l1_loss", ops.abs(x - y), weight, reduction, by_weight=True)


def smooth_l1_loss(input: Any, target: Any, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``torch.nn.functional.smooth_l1_loss``: ``0.5 d**2 / beta`` where ``|d| < beta``,
    else ``|d| - 0.5 beta``, for ``d = input - target`` (the L1 loss when beta is 0)."""
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must not be negative, got {beta}")
    x, y = _matched("smooth_l1_loss", reduction, input, target)
    error = ops.abs(x - y)
    losses = error if beta == 0 else _huber(error, beta) / beta
    return reduce_losses(losses, reduction, losses.size)


def huber_loss(input: Any, target: Any, reduction: str = "mean", delta: float = 1.0, weight: Any = None) -> Tensor:
    """``torch.nn.functional.huber_loss``: ``0.5 d**2`` where ``|d| < delta``, else
    ``delta (|d| - 0.5 delta)``, times ``weight``; its mean divides by the number of
    elements, weighted or not (PyTorch's)."""
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    x, y = _matched("huber_loss", reduction, input, target)
    return _weighted("huber_loss", _huber(ops.abs(x - y), delta), weight, reduction)


def binary_cross_entropy(input: Any, target: Any, weight: Any = None, reduction: str = "mean") -> Tensor:
    """``torch.nn.functional.binary_cross_entropy`` of probabilities ``input``:
    ``-weight (y log x + (1 - y) log(1 - x))``, each log no less than -100 (PyTorch's);
    ``weight`` broadcasts to the input's shape. PyTorch raises for an input outside [0, 1],
    which is NaN here (checking would read every eager batch back)."""
    x, y = _matched("binary_cross_entropy", reduction, input, target)
    losses = -(y * _clamped_log(x) + (1.0 - y) * _clamped_log(1.0 - x))
    return _weighted("binary_cross_entropy", losses, weight, reduction)


def binary_cross_entropy_with_logits(
    input: Any, target: Any, weight: Any = None, reduction: str = "mean", pos_weight: Any = None
) -> Tensor:
    """``torch.nn.functional.binary_cross_entropy_with_logits``: ``-weight (pos_weight y log
    sigmoid(x) + (1 - y) log(1 - sigmoid(x)))`` without overflow for any logit; ``weight``
    and ``pos_weight`` (one per class: the last axis) broadcast to the input's shape."""
    name = "binary_cross_entropy_with_logits"
    x, y = _matched(name, reduction, input, target)
    losses = binary_cross_entropy_elements(x, y, from_logits=True)
    if pos_weight is not None:
        # The positive term y * -log sigmoid(x) = y * softplus(-x) counted pos_weight times.
        losses = losses + (_broadcast_weight(name, "pos_weight", pos_weight, x) - 1.0) * y * softplus(-x)
    return _weighted(name, losses, weight, reduction)


def kl_div(input: Any, target: Any, reduction: str = "mean", log_target: bool = False) -> Tensor:
    """``torch.nn.functional.kl_div`` of log-probabilities ``input`` from ``target``
    (probabilities, or log-probabilities with ``log_target``): ``y (log y - x)``
    elementwise, 0 where y is 0. ``"batchmean"`` divides the sum by the batch (axis 0), the
    KL divergence per example; ``"mean"`` by every element, with PyTorch's warning."""
    x, y = _matched("kl_div", reduction, input, target, KL_REDUCTIONS)
    if reduction == "mean":
        warnings.warn(
            "kl_div: reduction='mean' divides the total loss by both the batch size and the support size; "
            "'batchmean' divides only by the batch size, and aligns with the KL divergence's definition "
            "(PyTorch's warning)",
            stacklevel=2,
        )
    losses = ops.exp(y) * (y - x) if log_target else _xlogx(y) - y * x
    if reduction == "batchmean":
        return ops.sum(losses) / x.shape[0] if x.ndim else ops.sum(losses)
    return reduce_losses(losses, reduction, losses.size)


class MSELoss(Loss):
    """``torch.nn.MSELoss``: :func:`mse_loss`."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__("mse_loss", reduction)

    def forward(self, input: Any, target: Any) -> Tensor:
        return mse_loss(input, target, self.reduction)


class L1Loss(Loss):
    """``torch.nn.L1Loss``: :func:`l1_loss`."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__("l1_loss", reduction)

    def forward(self, input: Any, target: Any) -> Tensor:
        return l1_loss(input, target, self.reduction)


class SmoothL1Loss(Loss):
    """``torch.nn.SmoothL1Loss``: :func:`smooth_l1_loss`."""

    def __init__(self, reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__("smooth_l1_loss", reduction)
        if beta < 0:
            raise ValueError(f"smooth_l1_loss: beta must not be negative, got {beta}")
        self.beta = beta

    def forward(self, input: Any, target: Any) -> Tensor:
        return smooth_l1_loss(input, target, self.reduction, self.beta)


class HuberLoss(Loss):
    """``torch.nn.HuberLoss``: :func:`huber_loss`."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__("huber_loss", reduction)
        if delta <= 0:
            raise ValueError(f"huber_loss: delta must be positive, got {delta}")
        self.delta = delta

    def forward(self, input: Any, target: Any) -> Tensor:
        return huber_loss(input, target, self.reduction, self.delta)


class BCELoss(Loss):
    """``torch.nn.BCELoss``: :func:`binary_cross_entropy`; ``weight`` is a buffer."""

    def __init__(self, weight: Any = None, reduction: str = "mean") -> None:
        super().__init__("binary_cross_entropy", reduction)
        self._hold("weight", weight)

    def forward(self, input: Any, target: Any) -> Tensor:
        return binary_cross_entropy(input, target, self.weight, self.reduction)


class BCEWithLogitsLoss(Loss):
    """``torch.nn.BCEWithLogitsLoss``: :func:`binary_cross_entropy_with_logits`; ``weight``
    and ``pos_weight`` are buffers."""

    def __init__(self, weight: Any = None, reduction: str = "mean", pos_weight: Any = None) -> None:
        super().__init__("binary_cross_entropy_with_logits", reduction)
        self._hold("weight", weight)
        self._hold("pos_weight", pos_weight)

    def forward(self, input: Any, target: Any) -> Tensor:
        return binary_cross_entropy_with_logits(input, target, self.weight, self.reduction, self.pos_weight)


class KLDivLoss(Loss):
    """``torch.nn.KLDivLoss``: :func:`kl_div` (``reduction="batchmean"`` for the KL divergence)."""

    def __init__(self, reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__("kl_div", reduction, KL_REDUCTIONS)
        self.log_target = log_target

    def forward(self, input: Any, target: Any) -> Tensor:
        return kl_div(input, target, self.reduction, self.log_target)
