"""Derivatives of order 2, forward and reverse (forward over forward, reverse over forward,
forward over reverse, reverse over reverse), of every differentiable entry of the op table,
against float64 finite differences (``gradcheck.check_grads``, JAX's ``check_grads``):
eagerly; lazily (traced, then run by the reference interpreter); and under ``braze.jit``,
the whole table with the reference interpreter running each executable and a subset, one
case per family of ops, compiled to C. A check compiles its nine to thirty-six functions
(each derivative map and its own derivatives), a few seconds per case in C, so the compiled
run takes the representatives; the reference-backed jit runs trace every case the same way."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import Runner, check_grads, checked
from op_cases import CASES, CASES_BY_NAME

from braze.backends import cpu

GRAD_CASES = [c for c in CASES if c.grad]
# One case per family: unary and binary elementwise with broadcasting, a reduction and its
# maximum, softmax, contraction, movement and indexing, convolution, both poolings, a collective.
COMPILED = [
    "tanh",
    "divide",
    "add_broadcast",
    "max",
    "log_softmax",
    "matmul_batched",
    "getitem_reversed",
    "concatenate",
    "conv2d_stride2_same",
    "max_pool2d_overlap",
    "avg_pool2d_same",
    "all_reduce_max",
]


def _check(case, mode: str) -> None:
    arrays = case.inputs(dtype_override="float64")
    fn, fixed, wrt = checked(case.fn, arrays)
    check_grads(fn, fixed, wrt, order=2, modes=("fwd", "rev"), run=Runner(mode))


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_second_order_eagerly(case):
    _check(case, "eager")


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_second_order_lazily(case, monkeypatch):
    monkeypatch.setenv("BRAZE_BACKEND", "reference")
    _check(case, "lazy")


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_second_order_jitted_on_the_reference_interpreter(case, monkeypatch):
    monkeypatch.setenv("BRAZE_BACKEND", "reference")
    _check(case, "jit")


@pytest.mark.skipif(not cpu.available(), reason="no C compiler")
@pytest.mark.parametrize("name", COMPILED)
def test_second_order_jitted_in_c(name, monkeypatch, tmp_path):
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path))
    monkeypatch.setenv("BRAZE_BACKEND", "cpu")
    _check(CASES_BY_NAME[name], "jit")


def test_the_compiled_subset_names_cases_of_the_table():
    assert set(COMPILED) <= {c.name for c in GRAD_CASES}


def test_a_wrong_second_derivative_is_caught():
    """The checker fails a function whose first derivative is right and whose second is
    not: a tanh whose slope is computed from a constant copy of its input."""
    import braze

    def frozen(x):
        slope = 1.0 - braze.tanh(x.detach()) ** 2.0
        return braze.tanh(x.detach()) + (x - x.detach()) * slope

    fn, fixed, wrt = checked(frozen, [np.random.default_rng(0).uniform(-1, 1, 5)])
    check_grads(fn, fixed, wrt, order=1)
    with pytest.raises(AssertionError):
        check_grads(fn, fixed, wrt, order=2, modes=("fwd",))
    with pytest.raises(AssertionError):
        check_grads(fn, fixed, wrt, order=2, modes=("rev",))
