"""braze.lax where eager and compiled loops could part: draws and assignments in a traced
body (refused by name, where they repeated or escaped), carries JAX takes as pytrees
(namedtuples, dicts built in another key order), conditions that are no boolean scalar,
and fori_loop bounds of mixed integer types. References: NumPy loops and JAX's rules."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import braze
from braze import lax
from braze.lazy import LoopBodyLeak

MODES = ["eager", "lazy", "jit"]


def run(mode: str, fn, *arrays: np.ndarray):
    """``fn`` on tensors of ``arrays``: eagerly, on the lazy device, or jitted."""
    device = braze.LAZY_CPU if mode == "lazy" else braze.CPU
    tensors = [braze.tensor(a, device=device) for a in arrays]
    return (braze.jit(fn) if mode == "jit" else fn)(*tensors)


def test_a_compiled_loop_body_that_draws_random_numbers_is_refused():
    xs = np.ones((4, 8), np.float32)

    def dropped(xs):
        drop = braze.nn.Dropout(0.5)
        return lax.scan(lambda c, x: (c, drop(x)), braze.zeros((), device=xs.device), xs)[1]

    eager = run("eager", dropped, xs).numpy()
    assert len({row.tobytes() for row in eager}) > 1  # eagerly each step draws its own mask
    for mode in ("lazy", "jit"):
        with pytest.raises(braze.TraceError, match="draws random numbers"):
            run(mode, dropped, xs)


def test_a_compiled_loop_body_that_assigns_outside_state_is_refused_and_leaves_it_as_it_was():
    bn = braze.nn.BatchNormalization()
    xs = braze.tensor(np.random.default_rng(0).standard_normal((3, 4, 2)).astype(np.float32), device=braze.LAZY_CPU)
    bn(xs[0], training=False)  # builds its statistics
    before = bn.moving_mean.numpy().copy()
    with pytest.raises(braze.TraceError, match="assigned a value it computed"):
        lax.scan(lambda c, x: (c + x.sum(), bn(x, training=True)), braze.zeros((), device=xs.device), xs)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), before)
    np.testing.assert_allclose(bn(xs[0], training=False).numpy().shape, (4, 2))


def test_a_value_kept_from_a_compiled_loop_body_is_named_when_computed():
    seen = []
    xs = braze.ones((3, 2), device=braze.LAZY_CPU)
    carry, _ = lax.scan(lambda c, x: (seen.append(c * 2.0) or c + x.sum(), None), braze.zeros((), device=xs.device), xs)
    assert carry.numpy() == 6.0
    with pytest.raises(LoopBodyLeak, match="kept outside it"):
        seen[0].numpy()
    assert (carry + 1.0).numpy() == 7.0  # the device goes on working, barriers included
    braze.lazy.barrier(braze.LAZY_CPU)


State = collections.namedtuple("State", "total count")


@pytest.mark.parametrize("mode", MODES)
def test_a_namedtuple_carry_stays_a_namedtuple(mode):
    xs = np.array([1.0, 2.0, 4.0], np.float32)

    def body(state, x):
        return State(state.total + x, state.count + 1.0), None

    def loop(xs):
        zero = braze.zeros((), device=xs.device)
        return lax.scan(body, State(zero, zero), xs)[0]

    final = run(mode, loop, xs)
    assert isinstance(final, State)
    assert (final.total.numpy(), final.count.numpy()) == (7.0, 3.0)


def test_gradients_keep_a_namedtuples_type():
    point = State(braze.tensor(2.0), braze.tensor(3.0))
    grads = braze.grad(lambda s: s.total * s.count)(point)
    assert isinstance(grads, State)
    assert (grads.total.numpy(), grads.count.numpy()) == (3.0, 2.0)


@pytest.mark.parametrize("mode", MODES)
def test_a_dict_carry_may_come_back_in_another_key_order(mode):
    xs = np.array([1.0, 2.0, 3.0], np.float32)

    def loop(xs):
        one = braze.ones((), device=xs.device)
        return lax.scan(lambda c, x: ({"b": c["b"] * 2.0, "a": c["a"] + x}, None), {"a": one, "b": one}, xs)[0]

    final = run(mode, loop, xs)
    assert (final["a"].numpy(), final["b"].numpy()) == (7.0, 8.0)


@pytest.mark.parametrize("mode", MODES)
def test_a_while_condition_must_be_one_boolean_scalar(mode):
    def loop(x):
        return lax.while_loop(lambda v: 3.0 - v, lambda v: v + 1.0, x)

    with pytest.raises(braze.ShapeError, match="one boolean scalar"):
        run(mode, loop, np.float32(0.0))


@pytest.mark.parametrize("mode", MODES)
def test_fori_loop_bounds_of_two_integer_types(mode):
    def loop(x, n):
        start = braze.tensor(np.int32(1), device=x.device)
        return lax.fori_loop(start, n, lambda i, v: v * 2.0 + i.astype(braze.float32), x)

    got = run(mode, loop, np.float32(1.0), np.int64(4)).numpy()
    expected = np.float32(1.0)
    for i in range(1, 4):
        expected = expected * 2 + i
    assert got == expected


def test_fori_loop_bounds_must_be_integers():
    with pytest.raises(TypeError, match="fori_loop: lower must be an integer"):
        lax.fori_loop(0.0, 3, lambda i, v: v, braze.zeros(()))


def test_scan_takes_a_numpy_integer_length():
    carry, ys = lax.scan(lambda c, _: (c + 1.0, c), braze.zeros(()), None, length=np.int64(3))
    assert carry.numpy() == 3.0
    np.testing.assert_array_equal(ys.numpy(), [0.0, 1.0, 2.0])


@pytest.mark.parametrize("mode", MODES)
def test_loops_take_numpy_arrays_python_numbers_and_none_leaves_as_jax_does(mode):
    """JAX's loops make NumPy and Python leaves arrays and take None as an empty subtree;
    the reference is a NumPy loop."""
    xs = np.arange(1.0, 5.0, dtype=np.float32)

    def loops(scale):
        carry, (ys, nothing) = lax.scan(lambda c, x: (c + x * scale, (c * x, None)), 0.5, xs)
        doubled = lax.fori_loop(0, 3, lambda i, v: v * 2.0, np.float32(1.5))
        counted = lax.while_loop(lambda v: v < 10, lambda v: v + 3, 1)
        return carry, ys, nothing, doubled, counted

    before = braze.default_device()
    # leaves that are no tensors are made on the default device, as braze.tensor makes them
    braze.set_default_device(braze.LAZY_CPU if mode == "lazy" else braze.CPU)
    try:
        carry, ys, nothing, doubled, counted = run(mode, loops, np.float32(2.0))
    finally:
        braze.set_default_device(before)
    running, expected = 0.5, []
    for x in xs:
        expected.append(running * x)
        running += x * 2.0
    np.testing.assert_allclose(carry.numpy(), running, rtol=1e-6)
    np.testing.assert_allclose(ys.numpy(), expected, rtol=1e-6)
    assert nothing is None
    assert float(doubled.numpy()) == 12.0 and int(counted.numpy()) == 10
