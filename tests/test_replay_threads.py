"""Recordings of op programs (braze.replay) in two threads at once: each notes its own
thread's binds, all of them, however the two overlap."""

from __future__ import annotations

import threading

import numpy as np

import braze
from braze.replay import record


def test_overlapping_recordings_in_two_threads_each_note_their_own_binds():
    x = braze.tensor(np.ones(3), device=braze.LAZY_CPU)
    y = braze.tensor(np.full(3, 2.0), device=braze.LAZY_CPU)
    first_bound, second_bound, first_done = threading.Event(), threading.Event(), threading.Event()
    found: dict[str, list] = {}

    def first() -> list:
        total = x + x
        first_bound.set()
        assert second_bound.wait(10)
        return [total]

    def second() -> list:
        assert first_bound.wait(10)
        product = y * y
        second_bound.set()
        assert first_done.wait(10)  # the first recording has ended: this one goes on
        return [braze.exp(product)]

    thread = threading.Thread(target=lambda: found.setdefault("second", record([y._value], second)[0]))
    thread.start()
    found["first"] = record([x._value], first)[0]
    first_done.set()
    thread.join(10)
    assert [op[0].name for op in found["first"]] == ["add"]
    assert [op[0].name for op in found["second"]] == ["mul", "exp"]
