"""braze.lax where a review found it parting from JAX's ``lax``: a carry that changes type
(a ``TypeError`` naming the carry, as JAX raises, also for an empty eager scan), ``scan``'s
``unroll``, a while condition that is a Python bool, NumPy arrays and Python numbers
returned by a body, Python-number carries that take the dtype the body gives them (JAX's
weakly typed carries), and fori_loop bounds that are not scalars. Each eagerly, on the lazy
device and under ``braze.jit``, against NumPy loops and float64 finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze import lax

MODES = ["eager", "lazy", "jit"]
EPS32 = float(np.finfo(np.float32).eps)


def run(mode: str, fn, *arrays: np.ndarray):
    """``fn`` on tensors of ``arrays``: eagerly, on the lazy device, or jitted. The default
    device is the mode's, where a loop makes its Python numbers when it has no tensor."""
    device = braze.LAZY_CPU if mode == "lazy" else braze.CPU
    before = braze.default_device()
    braze.set_default_device(device)
    try:
        tensors = [braze.tensor(a, device=device) for a in arrays]
        return (braze.jit(fn) if mode == "jit" else fn)(*tensors)
    finally:
        braze.set_default_device(before)


# A carry that changes shape or dtype: JAX raises TypeError naming it ---------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_carry_that_changes_type_is_a_type_error_naming_it(mode):
    xs = np.ones((3, 2), np.float32)

    def dict_carry(xs):
        init = {"h": braze.zeros((2,), device=xs.device), "n": braze.zeros((), braze.int32, xs.device)}
        return lax.scan(lambda c, x: ({"h": c["h"] + x, "n": braze.astype(c["n"], braze.float32)}, None), init, xs)

    with pytest.raises(TypeError, match=r"scan: the body turns carry 1 \(at \['n'\]\) from s32\[\] into f32\[\]"):
        run(mode, dict_carry, xs)
    with pytest.raises(TypeError, match=r"fori_loop: the body turns carry 0 from f32\[3,2\] into f32\[2\]"):
        run(mode, lambda xs: lax.fori_loop(0, 2, lambda i, v: v.sum(axis=0), xs), xs)
    with pytest.raises(TypeError, match=r"while_loop: the body turns carry 0 from f32\[3,2\] into f32\[\]"):
        run(mode, lambda xs: lax.while_loop(lambda v: v.sum() < 10.0, lambda v: v.sum(), xs), xs)
    with pytest.raises(TypeError, match="while_loop: the condition must return one boolean scalar"):
        run(mode, lambda xs: lax.while_loop(lambda v: v.sum(), lambda v: v, xs), xs)
    with pytest.raises(braze.ShapeError, match="turns carry 0"):  # still braze's ShapeError too
        run(mode, lambda xs: lax.scan(lambda c, x: (c.sum(), None), xs[0], xs), xs)


@pytest.mark.parametrize("mode", MODES)
def test_an_empty_scan_checks_its_carry_as_a_longer_one_does(mode):
    """JAX checks the body's types whatever the length; an eager empty scan did not."""
    xs = np.ones((0, 2), np.float32)
    with pytest.raises(TypeError, match=r"scan: the body turns carry 0 from f32\[2\] into f32\[\]"):
        run(mode, lambda xs: lax.scan(lambda c, x: (c.sum(), x), braze.zeros((2,), device=xs.device), xs), xs)
    carry, ys = run(mode, lambda xs: lax.scan(lambda c, x: (c + x, c * x), braze.ones((2,), device=xs.device), xs), xs)
    np.testing.assert_array_equal(carry.numpy(), [1.0, 1.0])
    assert ys.shape == (0, 2)


# scan's unroll: accepted as JAX accepts it, the results unchanged ------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("unroll", [1, 2, 4, True, False])
def test_scan_takes_unroll_and_gives_the_numpy_loops_results(mode, unroll):
    xs = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)

    def loop(xs):
        return lax.scan(lambda c, x: (c * 0.5 + x, c * x), braze.zeros((3,), device=xs.device), xs, unroll=unroll)

    carry, ys = run(mode, loop, xs)
    expected_carry, expected_ys = np.zeros(3, np.float32), []
    for x in xs:
        expected_ys.append(expected_carry * x)
        expected_carry = expected_carry * np.float32(0.5) + x
    # each value is a float32 result of at most 2 roundings per step, as in the NumPy loop
    np.testing.assert_allclose(carry.numpy(), expected_carry, rtol=4 * EPS32, atol=4 * EPS32)
    np.testing.assert_allclose(ys.numpy(), np.stack(expected_ys), rtol=4 * EPS32, atol=4 * EPS32)


@pytest.mark.parametrize("unroll", [0, -1])
def test_scan_refuses_an_unroll_jax_refuses(unroll):
    with pytest.raises(ValueError, match="unroll must be a bool or a positive int"):
        lax.scan(lambda c, x: (c, x), braze.zeros(()), braze.zeros((3,)), unroll=unroll)


# Python and NumPy values where JAX takes them -------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_while_condition_may_return_a_python_or_numpy_bool(mode):
    """Made a tensor on the loop's device, not the default one (the eager CPU here)."""
    device = braze.LAZY_CPU if mode == "lazy" else braze.CPU
    before = braze.default_device()
    braze.set_default_device(braze.CPU)
    try:
        for condition in (lambda v: False, lambda v: np.bool_(False)):
            loop = lambda x, c=condition: lax.while_loop(c, lambda v: v + 1.0, x)  # noqa: E731
            got = (braze.jit(loop) if mode == "jit" else loop)(braze.tensor(np.float32(2.0), device=device))
            assert got.numpy() == 2.0  # the loop runs no step
    finally:
        braze.set_default_device(before)


@pytest.mark.parametrize("mode", MODES)
def test_a_body_may_return_numpy_arrays_and_python_numbers(mode):
    xs = np.arange(1.0, 4.0, dtype=np.float32)

    def loop(xs):
        def step(c, x):
            return (c[0] + x, 0.25), (1.5, np.full(2, 3.0, np.float32), c[0] * x)

        (total, quarter), ys = lax.scan(step, (braze.zeros((), device=xs.device), 0.0), xs)
        counted = lax.while_loop(lambda v: v < 3, lambda v: v + 1, braze.zeros((), braze.int32, xs.device))
        return total, quarter, ys, counted

    total, quarter, (ones, threes, products), counted = run(mode, loop, xs)
    running, expected = np.float32(0.0), []
    for x in xs:
        expected.append(running * x)
        running = running + x
    assert (total.numpy(), quarter.numpy(), counted.numpy()) == (running, 0.25, 3)
    np.testing.assert_array_equal(ones.numpy(), [1.5] * 3)
    np.testing.assert_array_equal(threes.numpy(), np.full((3, 2), 3.0, np.float32))
    np.testing.assert_array_equal(products.numpy(), expected)  # exact: small integers


# Python-number carries are weakly typed in JAX: they take the body's dtype -----------------


@pytest.mark.parametrize("mode", MODES)
def test_a_python_number_carry_takes_the_dtype_the_body_gives_it(mode):
    def loops(x):
        halves = lax.fori_loop(0, 3, lambda i, v: v + 0.5, 0)
        counted = lax.while_loop(lambda v: v < 2.0, lambda v: v + 0.5, 0)
        mixed = lax.scan(lambda c, _: ((c[0] + 0.25, c[1] + 1), None), (0, 0), None, length=4)[0]
        return halves, counted, mixed[0], mixed[1]

    halves, counted, quarters, steps = run(mode, loops, np.float32(0.0))
    assert (halves.dtype, halves.numpy()) == (braze.float32, 1.5)
    assert (counted.dtype, counted.numpy()) == (braze.float32, 2.0)
    assert (quarters.dtype, quarters.numpy()) == (braze.float32, 1.0)
    assert (steps.dtype, steps.numpy()) == (braze.int32, 4)  # a carry the body keeps is left as it is


@pytest.mark.parametrize("mode", MODES)
def test_a_typed_carry_is_not_promoted(mode):
    """Only Python ints and floats are weakly typed: a NumPy scalar keeps its dtype, and a
    float carry the body makes an integer stays an error."""
    with pytest.raises(TypeError, match=r"carry 0 from s32\[\] into f32\[\]"):
        run(mode, lambda x: lax.fori_loop(0, 3, lambda i, v: v + 0.5, np.int32(0)), np.float32(0.0))
    with pytest.raises(TypeError, match=r"carry 0 from f32\[\] into s32\[\]"):
        run(mode, lambda x: lax.fori_loop(0, 3, lambda i, v: i, 0.0), np.float32(0.0))


@pytest.mark.parametrize("mode", MODES)
def test_a_promoted_carry_is_differentiated_as_a_float_one(mode):
    """v = (v + 0.5) * w three times from v = 0: the value and the gradient in w against
    the NumPy loop and its float64 central difference."""

    def reference(w: float) -> float:
        v = 0.0
        for _ in range(3):
            v = (v + 0.5) * w
        return v

    w = 1.5
    h = 1e-6
    expected_grad = (reference(w + h) - reference(w - h)) / (2 * h)
    value, grad = run(
        mode, braze.value_and_grad(lambda w: lax.fori_loop(0, 3, lambda i, v: (v + 0.5) * w, 0)), np.float32(w)
    )
    # three steps of two float32 roundings each, on values and derivatives of order 1 to 5
    np.testing.assert_allclose(value.numpy(), reference(w), rtol=16 * EPS32)
    np.testing.assert_allclose(grad.numpy(), expected_grad, rtol=16 * EPS32)


# fori_loop bounds -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_fori_loop_bounds_must_be_integer_scalars(mode):
    """Named by type: a traced bound's value is unknown (printing it raised a TraceError)."""
    loop = lambda x, n: lax.fori_loop(0, n, lambda i, v: v, x)  # noqa: E731
    with pytest.raises(
        TypeError, match=r"fori_loop: upper must be an integer or an integer scalar tensor, got s32\[2\]"
    ):
        run(mode, loop, np.float32(0.0), np.array([2, 3], np.int32))
    with pytest.raises(
        TypeError, match=r"fori_loop: upper must be an integer or an integer scalar tensor, got f32\[\]"
    ):
        run(mode, loop, np.float32(0.0), np.float32(2.0))
