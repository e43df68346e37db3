"""Finite-difference gradient checks in float64, the independent reference for autodiff:
first-order gradients at coordinates, and derivatives of any order in both modes
(``check_grads``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

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


# Derivatives of any order in both modes, as JAX's jax.test_util.check_grads ----------------

# A function under check takes the fixed operands (a select's predicate, integer indices) and
# the differentiated ones, as tensors, and returns a tuple of tensors.
Checked = Callable[[Sequence[braze.Tensor], Sequence[braze.Tensor]], tuple]


class Runner:
    """How a checked function runs on arrays: ``eager`` on the CPU, ``lazy`` on the lazy
    CPU (traced, then run as one graph at each read), or ``jit`` (each function compiled by
    ``braze.jit`` once, then called for every evaluation)."""

    def __init__(self, mode: str) -> None:
        if mode not in ("eager", "lazy", "jit"):
            raise ValueError(f"unknown mode {mode!r}")
        self.mode = mode
        self._jitted: dict[int, tuple[Checked, Callable]] = {}

    def __call__(self, fn: Checked, fixed: Sequence[np.ndarray], arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        device = braze.LAZY_CPU if self.mode == "lazy" else braze.CPU
        tensors = [braze.tensor(a, device=device) for a in (*fixed, *arrays)]
        k = len(fixed)
        if self.mode == "jit":
            found = self._jitted.get(id(fn))
            if found is None:  # the function is kept beside its jitted form, so its id stays its own
                found = self._jitted[id(fn)] = (fn, braze.jit(lambda *ts: fn(ts[:k], ts[k:])))
            outputs = found[1](*tensors)
        else:
            outputs = fn(tensors[:k], tensors[k:])
        return [np.array(o.numpy()) for o in outputs]


def _as_tuple(value: Any) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _jvp_map(fn: Checked, n: int) -> Checked:
    """(fixed, primals + tangents) -> the tangents of fn's outputs."""

    def jvp_of(fixed, operands):
        primals, tangents = tuple(operands[:n]), tuple(operands[n:])
        return braze.jvp(lambda *xs: fn(fixed, xs), primals, tangents)[1]

    return jvp_of


def _vjp_map(fn: Checked, n: int) -> Checked:
    """(fixed, primals + output cotangents) -> the cotangents of the primals."""

    def vjp_of(fixed, operands):
        _, pullback = braze.vjp(lambda *xs: fn(fixed, xs), *operands[:n])
        return pullback(tuple(operands[n:]))

    return vjp_of


def _directions(rng: np.random.Generator, like: Sequence[np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(rng.standard_normal(a.shape), dtype=a.dtype) for a in like]


def _numerical_jvp(run, fn, fixed, arrays, tangents, eps) -> list[np.ndarray]:
    """Central differences of fn along ``tangents``, in float64."""
    plus = run(fn, fixed, [np.asarray(a + eps * t) for a, t in zip(arrays, tangents, strict=True)])
    minus = run(fn, fixed, [np.asarray(a - eps * t) for a, t in zip(arrays, tangents, strict=True)])
    return [(p.astype(np.float64) - m) / (2 * eps) for p, m in zip(plus, minus, strict=True)]


def _dot(xs: Sequence[np.ndarray], ys: Sequence[np.ndarray]) -> tuple[float, float]:
    """The inner product of two lists of arrays, and the sum of its terms' magnitudes."""
    value = sum(float(np.sum(np.asarray(x, np.float64) * y)) for x, y in zip(xs, ys, strict=True))
    scale = sum(float(np.sum(np.abs(np.asarray(x, np.float64) * y))) for x, y in zip(xs, ys, strict=True))
    return value, scale


def check_grads(
    fn: Checked,
    fixed: Sequence[np.ndarray],
    arrays: Sequence[np.ndarray],
    order: int = 2,
    modes: Sequence[str] = ("fwd", "rev"),
    run: Runner | None = None,
    eps: float = 1e-6,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    seed: int = 0,
) -> None:
    """Check fn's derivatives up to ``order`` against central differences, as JAX's
    ``check_grads``: "fwd" compares its JVP along a random tangent with the difference
    quotient along it; "rev" compares its VJP with a random cotangent, through the identity
    <vjp(ct), t> = <ct, jvp(t)>, with the difference quotient along a random tangent. Each
    higher order checks, in both modes, the JVP map (primals, tangents) -> output tangents
    and the VJP map (primals, cotangents) -> primal cotangents: forward over forward,
    reverse over forward, forward over reverse and reverse over reverse."""
    run = run or Runner("eager")
    rng = np.random.default_rng(seed)
    fixed = [np.asarray(a) for a in fixed]

    def check(fn: Checked, arrays: list[np.ndarray], order: int) -> None:
        n = len(arrays)
        if "fwd" in modes:
            tangents = _directions(rng, arrays)
            analytic = run(_jvp_map(fn, n), fixed, [*arrays, *tangents])
            numeric = _numerical_jvp(run, fn, fixed, arrays, tangents, eps)
            for got, expected in zip(analytic, numeric, strict=True):
                np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=f"JVP, order {order}")
            if order > 1:
                check(_jvp_map(fn, n), [*arrays, *tangents], order - 1)
        if "rev" in modes:
            cotangents = _directions(rng, run(fn, fixed, arrays))
            pulled = run(_vjp_map(fn, n), fixed, [*arrays, *cotangents])
            tangents = _directions(rng, arrays)
            got, scale = _dot(tangents, pulled)
            expected, expected_scale = _dot(_numerical_jvp(run, fn, fixed, arrays, tangents, eps), cotangents)
            tolerance = atol + rtol * max(scale, expected_scale)
            assert abs(got - expected) <= tolerance, f"VJP, order {order}: {got} != {expected} (within {tolerance})"
            if order > 1:
                check(_vjp_map(fn, n), [*arrays, *cotangents], order - 1)

    check(fn, [np.asarray(a) for a in arrays], order)


def checked(fn: Callable[..., Any], arrays: Sequence[np.ndarray]) -> tuple[Checked, list, list]:
    """``fn`` of all of ``arrays`` as a checked function of its float operands (the others
    fixed), with the fixed and the differentiated arrays."""
    wrt = [i for i, a in enumerate(arrays) if a.dtype.kind == "f"]
    others = [i for i in range(len(arrays)) if i not in wrt]

    def of_operands(fixed, operands):
        tensors = [None] * len(arrays)
        for i, t in zip(others, fixed, strict=True):
            tensors[i] = t
        for i, t in zip(wrt, operands, strict=True):
            tensors[i] = t
        return _as_tuple(fn(*tensors))

    return of_operands, [arrays[i] for i in others], [arrays[i] for i in wrt]
