"""Finite-difference gradient checks in float64, the independent reference for autodiff."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

import braze


def numeric_vs_analytic(
    fn: Callable[..., braze.Tensor],
    arrays: Sequence[np.ndarray],
    wrt: Sequence[int],
    *,
    eps: float = 1e-6,
    max_points: int = 16,
    seed: int = 0,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each argument in ``wrt``: (analytic, numeric) gradients of sum(fn(*args) * c) at up
    to ``max_points`` coordinates, for a random cotangent c."""
    rng = np.random.default_rng(seed)
    arrays = [np.array(a) for a in arrays]
    out = fn(*[braze.tensor(a) for a in arrays]).numpy()
    cotangent = rng.standard_normal(out.shape)

    def loss(values: list[np.ndarray]) -> float:
        result = fn(*[braze.tensor(v) for v in values]).numpy().astype(np.float64)
        return float((result * cotangent).sum())

    def objective(*tensors):
        return (fn(*tensors) * braze.tensor(cotangent)).sum()

    grads = braze.grad(objective, argnums=tuple(wrt))(*[braze.tensor(a) for a in arrays])
    pairs = []
    for position, grad in zip(wrt, grads, strict=True):
        base = arrays[position]
        flat_points = rng.choice(base.size, size=min(base.size, max_points), replace=False)
        analytic = grad.numpy().reshape(-1)[flat_points]
        numeric = np.empty(len(flat_points))
        for k, flat in enumerate(flat_points):
            plus, minus = [a.copy() for a in arrays], [a.copy() for a in arrays]
            plus[position].reshape(-1)[flat] += eps
            minus[position].reshape(-1)[flat] -= eps
            numeric[k] = (loss(plus) - loss(minus)) / (2 * eps)
        pairs.append((analytic, numeric))
    return pairs


def assert_gradients_match(fn, arrays, wrt, rtol: float = 1e-5, atol: float = 1e-6, **kwargs) -> None:
    for analytic, numeric in numeric_vs_analytic(fn, arrays, wrt, **kwargs):
        np.testing.assert_allclose(analytic, numeric, rtol=rtol, atol=atol)
