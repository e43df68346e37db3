"""``torch.nn.utils``' gradient clipping: ``clip_grad_norm_`` and ``clip_grad_value_``.

Both are tensor ops on the gradients, so a training step that clips, traced on a lazy
device or under ``braze.jit``, clips in the same compiled step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from braze import ops
from braze.autodiff import no_grad
from braze.ir.errors import TraceError
from braze.replay import replayable, replayed
from braze.runtime.cache import BoundedCache
from braze.tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]

Parameters = Tensor | Iterable[Tensor]
# The recorded clipping of each list of gradient types, norm and order (braze.replay).
_PROGRAMS: BoundedCache[tuple, tuple | None] = BoundedCache(64)


def _with_grads(parameters: Parameters) -> list[Tensor]:
    found = parameters.parameters() if hasattr(parameters, "parameters") else parameters
    found = [found] if isinstance(found, Tensor) else list(found)
    return [p for p in found if p.grad is not None]


def clip_grad_norm_(
    parameters: Parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False
) -> Tensor:
    """Scale the gradients of ``parameters`` in place so that their total ``norm_type``-norm
    (the norm of the per-gradient norms) is at most ``max_norm``, and return that total norm
    before clipping, as ``torch.nn.utils.clip_grad_norm_``: every gradient is multiplied by
    ``min(1, max_norm / (total + 1e-6))`` (0 for a ``max_norm`` of 0, as PyTorch's: the
    gradients are zeroed). ``error_if_nonfinite`` raises a RuntimeError for a NaN or
    infinite total; it reads the value, so only eager tensors can ask for it."""
    if not max_norm >= 0:  # PyTorch would flip the gradients' signs: surely a mistake
        raise ValueError(f"clip_grad_norm_: max_norm must be 0 or more, got {max_norm}")
    params = _with_grads(parameters)
    if not params:
        return ops.zeros(())
    norm_type = float(norm_type)
    grads = [p.grad for p in params]
    with no_grad():
        if error_if_nonfinite:
            results = _clipped(grads, max_norm, norm_type, _check_finite)
        elif isinstance(max_norm, (int, float)) and replayable(grads[0].device):  # a lazy step: the same ops each time
            key = (tuple([g._aval for g in grads]), float(max_norm), norm_type, grads[0].device)
            results = replayed(_PROGRAMS, key, grads, lambda: _clipped(grads, max_norm, norm_type), "ClipReplay")
        else:
            results = _clipped(grads, max_norm, norm_type)
    for p, grad in zip(params, results, strict=False):
        p.grad = grad
    return results[-1]


def _clipped(
    grads: list[Tensor], max_norm: float, norm_type: float, check: Callable[[Tensor, float], None] | None = None
) -> list[Tensor]:
    """The gradients scaled to a total norm of at most ``max_norm``, then their total norm
    before (which ``check`` is shown first)."""
    norms = ops.stack([ops.astype(_norm(g, norm_type), grads[0].dtype) for g in grads])
    total = _norm(norms, norm_type)
    if check is not None:
        check(total, norm_type)
    scale = ops.minimum(max_norm / (total + 1e-6), 1.0)
    return [*(g * ops.astype(scale, g.dtype) for g in grads), total]


def _check_finite(total: Tensor, norm_type: float) -> None:
    if total.device.is_lazy:
        raise TraceError(
            "clip_grad_norm_(error_if_nonfinite=True) reads the norm's value, which a lazy or compiled step "
            "cannot do before it runs: check the returned norm after the step instead"
        )
    if not math.isfinite(total.item()):
        raise RuntimeError(f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is {total.item()}")


def _norm(x: Tensor, order: float) -> Tensor:
    if order == math.inf:
        return ops.max(ops.abs(x))
    if order == 2.0:
        return ops.sqrt(ops.sum(x * x))
    if order == 1.0:
        return ops.sum(ops.abs(x))
    if order <= 0:
        raise ValueError(f"clip_grad_norm_: norm_type must be more than 0 (or inf), got {order}")
    return ops.power(ops.sum(ops.power(ops.abs(x), order)), 1.0 / order)


def clip_grad_value_(parameters: Parameters, clip_value: float) -> None:
    """Clip every gradient of ``parameters`` to ``[-clip_value, clip_value]`` in place, as
    ``torch.nn.utils.clip_grad_value_`` (0 zeroes them, as PyTorch's)."""
    if not clip_value >= 0:
        raise ValueError(f"clip_grad_value_: clip_value must be 0 or more, got {clip_value}")
    with no_grad():
        for p in _with_grads(parameters):
            p.grad = ops.clip(p.grad, -clip_value, clip_value)
