"""The autotuner: every option it may pick gives kernels that agree with the reference
interpreter (each target the host runs), its picks are remembered per kernel and target,
a broken record is timed again, small kernels offer nothing, and BRAZE_AUTOTUNE=0 times
nothing."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cpu_targets import runnable_targets

import braze
from braze.backends import cpu
from braze.backends.cpu import autotune
from braze.backends.cpu.compiler import find_compiler
from braze.backends.reference.interpreter import evaluate
from braze.ir.prims.linalg import dot_general
from braze.lazy import EXECUTOR, build_graph
from braze.runtime import metrics
from braze.runtime.diskcache import CacheWarning

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")


@pytest.fixture(autouse=True)
def autotuning_on(monkeypatch):
    """These tests are about autotuning: on, whatever BRAZE_AUTOTUNE the suite runs with."""
    monkeypatch.setenv("BRAZE_AUTOTUNE", "1")


def _training_graph(seed: int = 0):
    """A convolution with bias and ReLU, its filter and input gradients, and a dense layer
    with its gradients: each big enough (a few million multiply-adds) to offer choices, but
    the dense products, which take their predicted tile. Twelve input channels: too few for
    the Winograd kernels, whose choice (test_cpu_winograd.py) changes the rounding, where a
    register tile's does not."""
    rng = np.random.default_rng(seed)
    device = braze.LAZY_CPU
    x = braze.tensor(rng.standard_normal((8, 14, 14, 12)).astype(np.float32), device=device)
    w = braze.tensor(rng.standard_normal((3, 3, 12, 32)).astype(np.float32), device=device).requires_grad_()
    v = braze.tensor(rng.standard_normal((14 * 14 * 32, 64)).astype(np.float32) * 0.01, device=device)
    v.requires_grad_()

    def loss(w, v):
        h = braze.relu(braze.conv2d(x, w, padding="SAME"))
        return ((h.reshape((8, -1)) @ v) ** 2).sum()

    value, (gw, gv) = braze.value_and_grad(loss, (0, 1))(w, v)
    traced = build_graph([value._value, gw._value, gv._value])
    EXECUTOR._live.clear()
    return cpu.optimize(traced.graph), traced.args


@pytest.mark.parametrize("target", runnable_targets())
def test_every_option_agrees_with_the_reference(target, tmp_path, monkeypatch):
    monkeypatch.setenv("BRAZE_CPU_TARGET", target)
    graph, args = _training_graph()
    found = autotune.menus(graph, find_compiler(target))
    assert len(found) >= 2, "the convolution and its gradients should offer tilings"
    products = [k for _, k, _, _, _ in found if any(n.op is dot_general for n in k.attr("computation").nodes())]
    assert not products, "a matrix product takes its predicted tile, untimed"
    wants = evaluate(graph, args)
    sources, results = set(), []
    for option in range(autotune._MAX_VARIANTS):
        tunings = {
            t: autotune.options(menu)[min(option, len(autotune.options(menu)) - 1)] for t, _, _, menu, _ in found
        }
        monkeypatch.setattr(autotune, "tune", lambda *_, tunings=tunings: tunings)
        monkeypatch.setenv("BRAZE_DUMP", str(tmp_path / f"option{option}"))
        gots = cpu.compile_graph(graph, cpu.DiskCache(tmp_path / "cache"))(args)
        sources |= {p.read_text() for p in (tmp_path / f"option{option}" / "kernels").iterdir()}
        results.append(gots)
        for k, (want, got) in enumerate(zip(wants, gots, strict=True)):
            scale = float(np.abs(want).max())
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * scale, err_msg=f"output {k}, option {option}")
    assert len(sources) == autotune._MAX_VARIANTS, "each option should change the generated code"
    # A register tile splits the outputs, never a sum: every option adds in the same order,
    # so processes that picked differently (the ranks of a data-parallel job) agree bit for bit.
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            np.testing.assert_array_equal(a, b)


def test_picks_are_remembered_per_kernel_and_target(tmp_path, monkeypatch):
    graph, args = _training_graph()
    metrics.reset()
    cpu.compile_graph(graph, cpu.DiskCache(tmp_path))
    timed = metrics.counter("AutotuneMiss")
    assert timed >= 2 and metrics.counter("AutotuneHit") == 0
    record = json.loads(autotune.store_path(tmp_path).read_text())
    assert len(record) == timed + metrics.counter("AutotuneUntimed")
    assert all(set(pick) <= {"register tile 0"} for pick in record.values())
    metrics.reset()
    cpu.compile_graph(graph, cpu.DiskCache(tmp_path))
    assert metrics.counter("AutotuneHit") >= len(record) and metrics.counter("AutotuneMiss") == 0
    assert metrics.counter("DiskCacheHit") == 1, "the remembered picks build the same library"
    other = next((t for t in runnable_targets() if t != "native"), None)
    if other is not None:  # another CPU target: other kernels, other keys
        monkeypatch.setenv("BRAZE_CPU_TARGET", other)
        metrics.reset()
        cpu.compile_graph(graph, cpu.DiskCache(tmp_path))
        assert metrics.counter("AutotuneHit") == 0 and metrics.counter("AutotuneMiss") >= 2


def test_a_broken_record_is_timed_again(tmp_path):
    graph, _ = _training_graph()
    autotune.store_path(tmp_path).write_text("{not json")
    metrics.reset()
    with pytest.warns(CacheWarning, match="ignoring the cache record .*autotune.json"):
        cpu.compile_graph(graph, cpu.DiskCache(tmp_path))
    assert metrics.counter("AutotuneMiss") >= 2
    assert json.loads(autotune.store_path(tmp_path).read_text())


def test_turned_off_or_small_kernels_time_nothing(tmp_path, monkeypatch):
    graph, _ = _training_graph()
    monkeypatch.setenv("BRAZE_AUTOTUNE", "0")
    metrics.reset()
    cpu.compile_graph(graph, cpu.DiskCache(tmp_path))
    assert metrics.counter("AutotuneMiss") == metrics.counter("AutotuneHit") == 0
    assert not autotune.store_path(tmp_path).exists()
    monkeypatch.delenv("BRAZE_AUTOTUNE")
    x = braze.tensor(np.ones((2, 5, 5, 3), np.float32), device=braze.LAZY_CPU)
    w = braze.tensor(np.ones((3, 3, 3, 8), np.float32), device=braze.LAZY_CPU)
    small = build_graph([braze.conv2d(x, w)._value])
    EXECUTOR._live.clear()
    assert autotune.menus(cpu.optimize(small.graph), find_compiler("native")) == []
