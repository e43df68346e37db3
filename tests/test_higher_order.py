"""Forward mode and higher-order derivatives through the public API: jvp, vjp, the Jacobians,
hessian and hvp (JAX's spellings), autograd.grad and backward(create_graph=True) (PyTorch's),
nested to any order, lazily and jitted. References: closed forms, NumPy and float64 finite
differences."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze import backward_replay
from braze.ir.primitive import withdraw
from braze.ir.prims import elementwise as ew
from braze.runtime import metrics

RNG = np.random.default_rng(0)
X = RNG.uniform(-1.0, 1.0, 4)
V = RNG.uniform(-1.0, 1.0, 4)


def t(array, **kwargs) -> braze.Tensor:
    return braze.tensor(np.asarray(array, np.float64), **kwargs)


def f(x):
    """sum(tanh(x) * x^2): gradient and Hessian in closed form below."""
    return (braze.tanh(x) * x * x).sum()


def f_grad(x):
    th = np.tanh(x)
    return (1 - th**2) * x**2 + 2 * x * th


def f_hessian(x):
    th = np.tanh(x)
    sech2 = 1 - th**2
    return np.diag(-2 * th * sech2 * x**2 + 4 * x * sech2 + 2 * th)


def numeric_jacobian(fn, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d fn / d x by central differences: shape fn(x).shape + x.shape."""
    out = np.asarray(fn(x))
    jac = np.zeros(out.shape + x.shape)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = eps
        jac[(...,) + i] = (np.asarray(fn(x + step)) - np.asarray(fn(x - step))) / (2 * eps)
    return jac


# JAX's spellings --------------------------------------------------------------------


def test_jvp_is_the_directional_derivative():
    out, tangent = braze.jvp(f, (t(X),), (t(V),))
    assert out.item() == pytest.approx(float((np.tanh(X) * X**2).sum()))
    assert tangent.item() == pytest.approx(float(f_grad(X) @ V), rel=1e-12)


def test_jvp_takes_and_gives_nested_structures_and_aux():
    def fn(params, scale):
        return {"y": params["w"] * params["b"] * scale, "z": [params["w"].sum()]}, "aux"

    w, b, s = t([1.0, 2.0]), t([3.0, 4.0]), t(2.0)
    out, tangent, aux = braze.jvp(
        fn, ({"w": w, "b": b}, s), ({"w": t([1.0, 0.0]), "b": t([0.0, 1.0])}, t(0.0)), has_aux=True
    )
    assert aux == "aux"
    np.testing.assert_allclose(out["y"].numpy(), [6.0, 16.0])
    np.testing.assert_allclose(tangent["y"].numpy(), [6.0, 4.0])  # (dw b + w db) * s
    np.testing.assert_allclose(tangent["z"][0].numpy(), 1.0)


def test_an_output_that_does_not_depend_on_the_input_has_a_zero_tangent():
    _, tangent = braze.jvp(lambda x: braze.ones(3, dtype="float64") * 2.0, (t(X),), (t(V),))
    np.testing.assert_array_equal(tangent.numpy(), np.zeros(3))


@pytest.mark.parametrize(
    "primals, tangents, error, match",
    [
        ((t([1.0, 2.0]),), (t([1.0]),), ValueError, "shape and dtype"),
        ((t([1.0, 2.0]),), (braze.tensor([1.0, 2.0]),), ValueError, "shape and dtype"),  # float32 for float64
        ((braze.tensor([1, 2]),), (braze.tensor([1, 2]),), TypeError, "only float tensors have tangents"),
        ((t([1.0]),), (), ValueError, "1 primals but 0 tangents"),
        (t([1.0]), (t([1.0]),), TypeError, "must be tuples"),
    ],
    ids=["shape", "dtype", "integer primal", "count", "not a tuple"],
)
def test_jvp_refuses_tangents_that_do_not_fit(primals, tangents, error, match):
    with pytest.raises(error, match=match):
        braze.jvp(lambda x: x * 2.0, primals, tangents)


def test_vjp_pulls_back_any_number_of_cotangents():
    out, pullback = braze.vjp(lambda a, b: (a * b, a.sum()), t([1.0, 2.0]), t([3.0, 4.0]))
    np.testing.assert_allclose(out[0].numpy(), [3.0, 8.0])
    for weight in (1.0, 2.0):
        ga, gb = pullback((t([weight, 0.0]), t(1.0)))
        np.testing.assert_allclose(ga.numpy(), [3.0 * weight + 1.0, 1.0])
        np.testing.assert_allclose(gb.numpy(), [weight, 0.0])
    with pytest.raises(ValueError, match="cotangent 0 is float64"):
        pullback((t([1.0, 2.0, 3.0]), t(1.0)))


def test_vjp_with_aux():
    out, pullback, aux = braze.vjp(lambda x: ((x * x).sum(), x.shape), t([1.0, 2.0]), has_aux=True)
    assert aux == (2,) and out.item() == 5.0
    np.testing.assert_allclose(pullback(t(1.0))[0].numpy(), [2.0, 4.0])


def two_inputs(a, b):
    return braze.tanh(a[:, None] * b[None, :]) + a.sum() * b[None, :] ** 2.0


@pytest.mark.parametrize("jacobian", [braze.jacfwd, braze.jacrev], ids=["jacfwd", "jacrev"])
def test_jacobians_match_finite_differences(jacobian):
    a, b = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 2)
    ja, jb = jacobian(two_inputs, argnums=(0, 1))(t(a), t(b))
    assert ja.shape == (3, 2, 3) and jb.shape == (3, 2, 2)

    def numpy_fn(a, b):
        return np.tanh(a[:, None] * b[None, :]) + a.sum() * b[None, :] ** 2

    np.testing.assert_allclose(ja.numpy(), numeric_jacobian(lambda x: numpy_fn(x, b), a), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jb.numpy(), numeric_jacobian(lambda x: numpy_fn(a, x), b), rtol=1e-6, atol=1e-8)
    single = jacobian(two_inputs)(t(a), t(b))
    np.testing.assert_allclose(single.numpy(), ja.numpy(), rtol=1e-12)


@pytest.mark.parametrize("jacobian", [braze.jacfwd, braze.jacrev], ids=["jacfwd", "jacrev"])
def test_jacobians_of_nested_structures(jacobian):
    def fn(params):
        return {"out": params["w"] * params["b"]}

    w, b = np.array([1.0, 2.0]), np.array([3.0, 5.0])
    jac = jacobian(fn)({"w": t(w), "b": t(b)})
    np.testing.assert_allclose(jac["out"]["w"].numpy(), np.diag(b))
    np.testing.assert_allclose(jac["out"]["b"].numpy(), np.diag(w))


def test_hessian_in_closed_form_and_hvp_its_product():
    np.testing.assert_allclose(braze.hessian(f)(t(X)).numpy(), f_hessian(X), rtol=1e-10, atol=1e-12)
    (product,) = braze.hvp(f, (t(X),), (t(V),))
    np.testing.assert_allclose(product.numpy(), f_hessian(X) @ V, rtol=1e-10, atol=1e-12)


def test_hessian_of_a_non_separable_function_matches_finite_differences_of_its_gradient():
    def g(x):
        return braze.logsumexp(x[None, :] * x[:, None], axis=1).sum()

    x = RNG.uniform(-1, 1, 3)
    gradient = braze.grad(g)
    expected = numeric_jacobian(lambda v: gradient(t(v)).numpy(), x)
    for hessian in (braze.hessian(g), braze.jacrev(braze.jacrev(g)), braze.jacfwd(braze.jacfwd(g))):
        np.testing.assert_allclose(hessian(t(x)).numpy(), expected, rtol=1e-6, atol=1e-8)


def test_grad_to_the_fourth_order():
    def power(x):
        return (x**5.0).sum()

    def d(fn):
        return braze.grad(lambda x: fn(x).sum())

    x = np.array([0.5, 1.5, -2.0])
    fourth = d(d(d(braze.grad(power))))
    np.testing.assert_allclose(fourth(t(x)).numpy(), 120 * x, rtol=1e-12)


def test_nested_jvps_do_not_confuse_their_perturbations():
    """JAX's test: f(x) = d/dy (x * y) at y = x is x, so f'(x) = 1; a tangent read by the
    wrong level would give 2."""

    def inner(x):
        return braze.jvp(lambda y: x * y, (x,), (braze.ones_like(x),))[1]

    _, tangent = braze.jvp(inner, (t(3.0),), (t(1.0),))
    assert tangent.item() == 1.0
    # and forward over forward gives the second derivative
    _, second = braze.jvp(lambda x: braze.jvp(lambda y: y**3.0, (x,), (braze.ones_like(x),))[1], (t(2.0),), (t(1.0),))
    assert second.item() == pytest.approx(12.0)


def test_every_composition_of_the_modes_gives_the_hessian_vector_product():
    x, v = t(X), t(V)
    expected = f_hessian(X) @ V
    forward_over_reverse = braze.jvp(braze.grad(f), (x,), (v,))[1]
    reverse_over_forward = braze.grad(lambda y: braze.jvp(f, (y,), (v,))[1])(x)
    reverse_over_reverse = braze.grad(lambda y: (braze.grad(f)(y) * v).sum())(x)
    _, pullback = braze.vjp(braze.grad(f), x)
    for got in (forward_over_reverse, reverse_over_forward, reverse_over_reverse, pullback(v)[0]):
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-12)


def test_value_and_grad_nested_gives_a_differentiable_value():
    # d/dx [f(x) + sum(grad f(x))]: the value part must not be cut from x.
    def outer(x):
        value, gradient = braze.value_and_grad(f)(x)
        return value + gradient.sum()

    got = braze.grad(outer)(t(X)).numpy()
    np.testing.assert_allclose(got, f_grad(X) + f_hessian(X).sum(axis=0), rtol=1e-10)


def test_a_first_order_value_is_cut_from_the_graph_as_before():
    value, _ = braze.value_and_grad(f)(t(X))
    assert not value.requires_grad and value.is_leaf


def test_a_differentiable_primitive_without_a_jvp_rule_is_named_in_forward_mode():
    square = ew.unary("square_without_jvp", np.square, lambda g, x, out: (g * x * 2.0,), jvp=None)
    try:
        np.testing.assert_allclose(braze.grad(lambda x: square.bind(x).sum())(t([3.0])).numpy(), [6.0])
        with pytest.raises(NotImplementedError, match="square_without_jvp"):
            braze.jvp(square.bind, (t([3.0]),), (t([1.0]),))
    finally:
        withdraw(square)


# PyTorch's spellings ------------------------------------------------------------------


def test_autograd_grad_with_create_graph_differentiates_again():
    x = t(X, requires_grad=True)
    (gradient,) = braze.autograd.grad(f(x), x, create_graph=True)
    assert gradient.requires_grad and x.grad is None  # .grad is left alone
    np.testing.assert_allclose(gradient.numpy(), f_grad(X), rtol=1e-12)
    (product,) = braze.autograd.grad(gradient, x, grad_outputs=t(V))
    np.testing.assert_allclose(product.numpy(), f_hessian(X) @ V, rtol=1e-10, atol=1e-12)


def test_autograd_grad_of_computed_inputs_and_several_outputs():
    x = t([1.0, 2.0], requires_grad=True)
    y = x * 3.0  # a computed input: its gradient, not x's
    a, b = (y * y).sum(), y.sum()
    gy, gx = braze.autograd.grad([a, b], [y, x], retain_graph=True)
    np.testing.assert_allclose(gy.numpy(), 2 * 3.0 * np.array([1.0, 2.0]) + 1.0)
    np.testing.assert_allclose(gx.numpy(), 3.0 * gy.numpy())  # through y, as PyTorch
    (only_b,) = braze.autograd.grad([a, b], [y], grad_outputs=[None, t(2.0)])
    np.testing.assert_allclose(only_b.numpy(), 2 * y.numpy() + 2.0)  # a's weight is one, b's two


def test_autograd_grad_errors_name_the_problem():
    x, unused = t([1.0], requires_grad=True), t([1.0], requires_grad=True)
    loss = (x * x).sum()
    with pytest.raises(RuntimeError, match="input 1 was not used"):
        braze.autograd.grad(loss, [x, unused], retain_graph=True)
    gx, nothing = braze.autograd.grad(loss, [x, unused], allow_unused=True, retain_graph=True)
    assert nothing is None and gx.tolist() == [2.0]
    with pytest.raises(RuntimeError, match="input 0 does not require grad"):
        braze.autograd.grad(loss, [t([1.0])])
    with pytest.raises(RuntimeError, match="output 0 does not require grad"):
        braze.autograd.grad(t(1.0), [x])
    with pytest.raises(ValueError, match="2 outputs but 1 gradients"):
        braze.autograd.grad([loss, loss], [x], grad_outputs=[t(1.0)])


def test_backward_with_create_graph_makes_grad_differentiable():
    x = t(X, requires_grad=True)
    f(x).backward(create_graph=True)
    first = x.grad
    assert first.requires_grad
    x.grad = None
    (first * t(V)).sum().backward()  # the graph was retained
    np.testing.assert_allclose(x.grad.numpy(), f_hessian(X) @ V, rtol=1e-10, atol=1e-12)


def test_backward_to_chosen_inputs_and_several_roots():
    x, w = t([1.0, 2.0], requires_grad=True), t([3.0, 4.0], requires_grad=True)
    y = x * w
    y.sum().backward(inputs=[w, y], retain_graph=True)
    assert x.grad is None
    np.testing.assert_allclose(w.grad.numpy(), [1.0, 2.0])
    np.testing.assert_allclose(y.grad.numpy(), [1.0, 1.0])
    braze.autograd.backward([y.sum(), (x * x).sum()], inputs=[x])
    np.testing.assert_allclose(x.grad.numpy(), [3.0 + 2.0, 4.0 + 4.0])


def test_a_recorded_backward_through_a_leaf_updated_in_place_is_an_error():
    w = t([1.0, 2.0], requires_grad=True)
    loss = (w * w * w).sum()
    with braze.no_grad():
        w -= 1.0
    with pytest.raises(RuntimeError, match="updated in place"):
        braze.autograd.grad(loss, w, create_graph=True)
    (first_order,) = braze.autograd.grad(loss, w)  # first order reads the recorded values
    np.testing.assert_allclose(first_order.numpy(), [3.0, 12.0])


# Lazily and jitted ----------------------------------------------------------------------


def test_lazy_higher_order_equals_eager_and_first_order_still_replays(monkeypatch):
    monkeypatch.setenv("BRAZE_BACKEND", "reference")
    backward_replay._PROGRAMS.clear()
    metrics.reset()
    lazy = braze.LAZY_CPU
    for step in range(3):
        x = t(X * (step + 1), device=lazy)
        (product,) = braze.hvp(f, (x,), (t(V, device=lazy),))
        np.testing.assert_allclose(product.numpy(), f_hessian(X * (step + 1)) @ V, rtol=1e-10, atol=1e-12)
        gradient = braze.grad(f)(x)  # first order: recorded once, then replayed
        np.testing.assert_allclose(gradient.numpy(), f_grad(X * (step + 1)), rtol=1e-12)
        second = braze.grad(lambda y: braze.grad(f)(y).sum())(x)
        np.testing.assert_allclose(second.numpy(), f_hessian(X * (step + 1)).sum(axis=0), rtol=1e-10)
    assert metrics.counter("BackwardReplay") >= 2


def test_a_jitted_hvp_is_one_executable_equal_to_eager(monkeypatch, tmp_path):
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path))

    @braze.jit
    def product(x, v):
        return braze.hvp(f, (x,), (v,))[0]

    for scale in (1.0, 2.0, 3.0):
        got = product(t(X * scale), t(V))
        np.testing.assert_allclose(got.numpy(), f_hessian(X * scale) @ V, rtol=1e-10, atol=1e-12)
    assert product.compiles == 1


def test_jvp_of_a_jitted_function_carries_its_tangents(monkeypatch, tmp_path):
    """A jitted function called inside a forward-mode derivative runs as plain code there
    (its executable cannot carry tangents), rather than dropping them."""
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path))
    jitted = braze.jit(f)
    _, tangent = braze.jvp(jitted, (t(X),), (t(V),))
    assert tangent.item() == pytest.approx(float(f_grad(X) @ V), rel=1e-12)
    assert jitted(t(X)).item() == pytest.approx(f(t(X)).item())
