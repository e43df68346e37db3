"""Derivatives composed with the rest of braze: of a jitted function, with respect to a
pullback's cotangent, through the Array API's functions and a device move, nested as JAX
nests them for several arguments, and at the points where a rule's formula is 0 * inf.
References: analytic derivatives and float64 finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze.runtime import metrics
from tests.gradcheck import check_grads


def t(values) -> braze.Tensor:
    return braze.tensor(np.asarray(values, np.float64))


def finite_difference_jacobian(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d f / d x in float64 by central differences, of shape f(x).shape + x.shape."""
    columns = []
    for i in range(x.size):
        step = np.zeros(x.size)
        step[i] = eps
        step = step.reshape(x.shape)
        columns.append((f(x + step) - f(x - step)) / (2 * eps))
    return np.stack(columns, axis=-1).reshape(np.shape(f(x)) + x.shape)


def cube_sum(x):
    return (x * x * x).sum()


def test_grad_of_a_jitted_function_is_its_gradient():
    x = np.array([0.3, -1.2, 2.0])
    metrics.reset()
    got = braze.grad(braze.jit(cube_sum))(t(x)).numpy()
    np.testing.assert_allclose(got, 3 * x**2, rtol=1e-12)
    assert metrics.counter("JitRunAsPlainCode") == 1
    jacobian = braze.jacrev(braze.jit(lambda v: v * v))(t(x)).numpy()
    np.testing.assert_allclose(jacobian, np.diag(2 * x), rtol=1e-12)


def test_a_jitted_call_on_a_tensor_with_a_gradient_graph_keeps_the_graph():
    x = braze.tensor(np.array([0.5, -2.0]), requires_grad=True)
    scaled = x * 3.0
    braze.jit(cube_sum)(scaled).backward()
    np.testing.assert_allclose(x.grad.numpy(), 81 * np.array([0.5, -2.0]) ** 2, rtol=1e-12)


def test_a_jitted_training_step_still_compiles():
    w = braze.tensor(np.array([1.0, 2.0]), requires_grad=True)

    @braze.jit
    def step(w):
        loss = cube_sum(w)
        loss.backward()
        return loss

    metrics.reset()
    for _ in range(2):
        w.grad = None
        step(w)
    assert step.compiles == 1 and metrics.counter("JitRunAsPlainCode") == 0
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 12.0], rtol=1e-12)


def test_reverse_mode_differentiates_a_pullback_by_its_cotangent():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    x = np.array([1.0, 2.0])
    y, pullback = braze.vjp(lambda v: t(a) @ v, t(x))
    np.testing.assert_allclose(braze.jacrev(lambda ct: pullback(ct)[0])(braze.ones_like(y)).numpy(), a.T)
    # Nonlinear in x, linear in the cotangent: d/dct <pullback(ct), v> = J v.
    v = np.array([0.5, -1.5])
    _, pullback = braze.vjp(lambda z: braze.sin(z) * z, t(x))
    got = braze.grad(lambda ct: (pullback(ct)[0] * t(v)).sum())(t([1.0, 1.0])).numpy()
    jacobian = finite_difference_jacobian(lambda z: np.sin(z) * z, x)
    np.testing.assert_allclose(got, jacobian @ v, rtol=1e-7)


def test_forward_mode_goes_through_functions_built_on_the_array_api():
    a = np.arange(9.0).reshape(3, 3)
    x = np.array([1.0, 2.0, 3.0])
    hessian = braze.hessian(lambda v: (braze.tensordot(t(a), v, axes=1) ** 2).sum())(t(x)).numpy()
    np.testing.assert_allclose(hessian, 2 * a.T @ a, rtol=1e-12)
    for f, reference in [
        (lambda v: braze.tile(v, [2]), lambda v: np.tile(v, 2)),
        (lambda v: braze.repeat(v, 2), lambda v: np.repeat(v, 2)),
        (lambda v: braze.stack(braze.unstack(v)) * v, lambda v: v * v),
    ]:
        direction = np.array([0.5, -1.0, 2.0])
        _, tangent = braze.jvp(f, (t(x),), (t(direction),))
        expected = finite_difference_jacobian(reference, x) @ direction
        np.testing.assert_allclose(tangent.numpy(), expected, rtol=1e-7, atol=1e-9)


def test_a_device_move_carries_tangents():
    x = np.array([1.0, 2.0])
    _, tangent = braze.jvp(lambda v: (v.to(braze.LAZY_CPU) * 2.0).to(braze.CPU), (t(x),), (t([1.0, -3.0]),))
    np.testing.assert_allclose(tangent.numpy(), [2.0, -6.0])


def two_arguments(x, y):
    return x[0] * (y * y).sum() + x[1] * y[0] * x[0]


@pytest.mark.parametrize("transform", ["hessian", "jacfwd", "jacrev"])
def test_jacobians_of_several_arguments_nest_as_jax_nests_them(transform):
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0])
    if transform == "hessian":
        got = braze.hessian(two_arguments, argnums=(0, 1))(t(x), t(y))

        def gradient(z):  # of the function of both arguments joined (quadratic along each
            # coordinate, so central differences are exact but for rounding, at any step)
            return finite_difference_jacobian(lambda w: two_arguments(w[:2], w[2:]), z, eps=1e-3)

        full = finite_difference_jacobian(gradient, np.concatenate([x, y]), eps=1e-3)
        parts = [slice(0, 2), slice(2, 5)]
        for i in range(2):
            for j in range(2):  # got[i][j] = d^2 f / d arg_i d arg_j, of shape arg_i.shape + arg_j.shape
                np.testing.assert_allclose(got[i][j].numpy(), full[parts[i], parts[j]], rtol=1e-5, atol=1e-6)
        return

    def outputs(x, y):
        return x.sum() * y, x * 2.0

    jacobian = getattr(braze, transform)(outputs, argnums=(0, 1))(t(x), t(y))
    references = [
        (lambda a: a.sum() * y, lambda b: x.sum() * b),
        (lambda a: a * 2.0, lambda b: x * 2.0),
    ]
    for k, per_argument in enumerate(references):  # the outputs outside, the arguments inside
        for p, (reference, point) in enumerate(zip(per_argument, (x, y), strict=True)):
            expected = finite_difference_jacobian(reference, point)
            np.testing.assert_allclose(jacobian[k][p].numpy(), expected, rtol=1e-7, atol=1e-9)


def nth_derivative(f, n: int):
    for _ in range(n):
        f = (lambda g: lambda x: braze.grad(lambda z: g(z).sum())(x))(f)
    return f


@pytest.mark.parametrize(
    ("exponent", "order", "expected"),
    [(0.0, 1, 0.0), (1.0, 2, 0.0), (2.0, 3, 0.0), (2.0, 1, 0.0), (3.0, 2, 0.0), (1.0, 1, 1.0)],
)
def test_derivatives_of_a_power_at_zero_are_finite(exponent, order, expected):
    x = t([0.0, 1.5])
    got = nth_derivative(lambda v: v**exponent, order)(x).numpy()
    at_one_and_a_half = np.polyder(np.poly1d([1.0] + [0.0] * int(exponent)), order)(1.5)
    np.testing.assert_allclose(got, [expected, at_one_and_a_half], rtol=1e-12)
    _, tangent = braze.jvp(nth_derivative(lambda v: v**exponent, order - 1), (x,), (braze.ones_like(x),))
    np.testing.assert_allclose(tangent.numpy(), [expected, at_one_and_a_half], rtol=1e-12)


def test_derivative_of_a_power_by_its_exponent():
    exponent = t([2.0, 3.0])
    negative = braze.grad(lambda y: (braze.tensor(-2.0, braze.float64) ** y).sum())(exponent).numpy()
    assert np.isnan(negative).all()  # (-2)^y has no real logarithm: NaN, as JAX and PyTorch give
    zero = braze.grad(lambda y: (braze.tensor(0.0, braze.float64) ** y).sum())(exponent).numpy()
    np.testing.assert_array_equal(zero, [0.0, 0.0])
    base = np.array([0.5, 2.0])
    got = braze.grad(lambda y: (t(base) ** y).sum())(exponent).numpy()
    np.testing.assert_allclose(got, base ** np.array([2.0, 3.0]) * np.log(base), rtol=1e-12)
    check_grads(lambda fixed, ops: (ops[0] ** ops[1],), [], [np.array([0.7, 1.3]), np.array([1.5, -0.5])])


def test_a_backward_seed_takes_the_outputs_dtype():
    x = braze.tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    braze.exp(x).backward(braze.tensor(np.array([1.0, 0.5])))  # a float64 seed
    assert x.grad.dtype == braze.float32
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]) * [1.0, 0.5], rtol=1e-6)
    x.grad = None
    (x * 2.0).backward(np.array([1.0, 3.0]))  # one seed as a NumPy array
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 6.0])
