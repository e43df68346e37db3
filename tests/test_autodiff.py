"""backward() and the functional grad API on small functions with known derivatives."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze import lazy
from braze.backends.reference import evaluate


def test_backward_accumulates_into_leaves():
    x = braze.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, 4, 6])
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5, 7, 9])


@pytest.mark.parametrize("batch", [(), (2,)])
def test_a_kernel_gradient_is_one_product_in_the_kernels_layout(batch):
    # x @ w with w stored (in, out): dw = x^T g comes out of the product as (in, out); the
    # other operand order (g^T x) would need a transpose copied after it.
    rng = np.random.default_rng(0)
    x, w, g = rng.normal(size=(*batch, 5, 3)), rng.normal(size=(*batch, 3, 4)), rng.normal(size=(*batch, 5, 4))
    graph = lazy.trace(
        lambda x, w, g: braze.grad(lambda w: (x @ w * g).sum())(w), *(braze.tensor(a) for a in (x, w, g))
    )
    assert [n.op.name for n in graph.nodes() if n.op.name in ("transpose", "dot_general")] == ["dot_general"]
    by_shape = {a.shape: a for a in (x, g)}  # linear in w: the gradient does not read it
    (dw,) = evaluate(graph, [by_shape[p.shape] for p in graph.params])
    np.testing.assert_allclose(dw, np.swapaxes(x, -1, -2) @ g, rtol=1e-12)


def test_shared_subexpression_gets_both_contributions():
    x = braze.tensor(2.0, requires_grad=True)
    y = x * x
    (y + y * x).backward()  # 2x^2... d/dx (x^2 + x^3) = 2x + 3x^2
    assert x.grad.item() == pytest.approx(4 + 12)


def test_a_root_that_another_root_reads_gets_that_roots_cotangent_too():
    x = braze.tensor(2.0, requires_grad=True)
    y = x * x
    (dx,) = braze.autograd.grad([y + 1.0, y], [x], [braze.tensor(3.0), braze.tensor(5.0)])
    assert dx.item() == pytest.approx((3 + 5) * 2 * 2)


def test_grad_of_nested_structure():
    params = {"w": braze.tensor([[1.0, 2.0]]), "b": [braze.tensor([0.5])]}

    def loss(p, x):
        return ((x @ p["w"]) + p["b"][0]).sum()

    grads = braze.grad(loss)(params, braze.tensor([[3.0], [4.0]]))
    np.testing.assert_allclose(grads["w"].numpy(), [[7.0, 7.0]])
    np.testing.assert_allclose(grads["b"][0].numpy(), [4.0])


def test_value_and_grad_argnums_and_aux():
    def f(a, b):
        return (a * b).sum(), "aux"

    (value, aux), (ga, gb) = braze.value_and_grad(f, argnums=(0, 1), has_aux=True)(
        braze.tensor([1.0, 2.0]), braze.tensor([3.0, 4.0])
    )
    assert value.item() == 11.0 and aux == "aux"
    np.testing.assert_allclose(ga.numpy(), [3, 4])
    np.testing.assert_allclose(gb.numpy(), [1, 2])


def test_unused_input_gets_zeros():
    g = braze.grad(lambda a, b: a.sum(), argnums=1)(braze.ones((2,)), braze.ones((3,)))
    np.testing.assert_array_equal(g.numpy(), np.zeros(3))


def test_no_grad_records_nothing():
    x = braze.tensor([1.0], requires_grad=True)
    with braze.no_grad():
        y = x * 2
    assert not y.requires_grad


def test_in_place_update_of_a_leaf_needs_no_grad():
    p = braze.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="in-place update of a tensor that requires grad"):
        p -= 1.0
    with braze.no_grad():
        p -= 1.0
    np.testing.assert_array_equal(p.numpy(), [0.0, 1.0])
    assert p.requires_grad and p.is_leaf


def test_update_after_recording_does_not_change_the_gradient():
    w = braze.tensor([2.0], requires_grad=True)
    x = braze.tensor([3.0])
    loss = (w * x).sum()
    x += 100.0
    loss.backward()
    assert w.grad.item() == 3.0


def test_backward_needs_a_scalar_or_a_gradient():
    x = braze.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="scalar output"):
        (x * 2).backward()
    (x * 2).backward(braze.tensor([1.0, 10.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 20.0])


def test_grad_requires_scalar_float_output():
    with pytest.raises(TypeError, match="float scalar"):
        braze.grad(lambda a: a * 2)(braze.ones((3,)))


def test_relu_gradient_reads_its_result_while_maximum_sends_ties_to_the_first_operand():
    x = braze.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    braze.relu(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 1.0])  # 0 at 0, as PyTorch and JAX
    y = braze.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    braze.maximum(y, 0.0).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [0.0, 1.0, 1.0])


def cube_sum(x):
    return (x * x * x).sum()


@pytest.mark.parametrize(
    "outer, expected",
    [
        (lambda x: braze.grad(cube_sum)(x).sum(), lambda x: 6 * x),  # d/dx sum(3 x^2), not zeros
        (lambda x: braze.grad(cube_sum)(x * 2.0).sum(), lambda x: 24 * x),  # an argument computed from the outer one
        (lambda x: braze.value_and_grad(lambda y: (y * x).sum())(braze.ones(3))[1].sum(), np.ones_like),  # closure
        (lambda x: braze.grad(lambda y: (y * x).sum())(x).sum(), np.ones_like),  # the outer argument as inner's
    ],
    ids=["grad-of-grad", "of-a-derived-argument", "closing-over-the-outer-argument", "the-outer-argument-itself"],
)
def test_a_gradient_of_a_gradient(outer, expected):
    x = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_allclose(braze.grad(outer)(braze.tensor(x)).numpy(), expected(x), rtol=1e-6)


def test_backward_inside_a_differentiated_function_is_a_constant_of_it():
    """``backward()`` (no ``create_graph``) records no graph: its ``.grad`` is a constant,
    as in PyTorch, so only the explicit term of ``outer`` is differentiated."""
    w = braze.ones(3).requires_grad_()

    def outer(x):
        (w * x).sum().backward()
        return (w.grad * x).sum()

    x = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_array_equal(braze.grad(outer)(braze.tensor(x)).numpy(), x)


def test_a_gradient_that_does_not_depend_on_the_outer_argument_is_a_constant_as_it_should_be():
    x = braze.tensor(np.array([1.0, 2.0, 3.0], np.float32))
    inner = braze.grad(cube_sum)(braze.ones(3))  # 3 everywhere, computed inside the outer function
    got = braze.grad(lambda x: (x * braze.grad(cube_sum)(braze.ones(3))).sum())(x)
    np.testing.assert_array_equal(got.numpy(), inner.numpy())
    np.testing.assert_array_equal(braze.grad(cube_sum)(x).numpy(), 3 * x.numpy() ** 2)  # nothing left behind
