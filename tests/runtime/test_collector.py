"""The garbage collector pauses while programs are traced and compiled, and runs again after."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import braze
from braze.runtime import collector


def test_paused_blocks_nest_and_resume_the_collector_once():
    assert gc.isenabled()
    with collector.paused():
        assert not gc.isenabled()
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block is still in progress
    assert gc.isenabled()


def test_a_collector_the_user_turned_off_stays_off():
    gc.disable()
    try:
        with collector.paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_jit_runs_with_the_collector_paused_and_resumes_it_even_after_an_error():
    seen = []

    @braze.jit
    def step(x):
        seen.append(gc.isenabled())
        return x * 2

    np.testing.assert_allclose(step(braze.ones((3,))).numpy(), [2, 2, 2])
    assert seen == [False] and gc.isenabled()

    @braze.jit
    def broken(x):
        raise ValueError("traced code fails")

    with pytest.raises(ValueError, match="traced code fails"):
        broken(braze.ones((3,)))
    assert gc.isenabled()
