"""braze bench's memory figures and its summary of runs of unequal length."""

from __future__ import annotations

import json
import mmap

import pytest

import braze
from braze import cli
from braze.bench import memory
from braze.bench.compare import MIB, Comparison, ModeResult
from braze.bench.steps import lenet_workload
from braze.runtime.device import LAZY_CPU


def _parameter_bytes() -> int:
    return sum(p.size * 4 for p in braze.models.LeNet(seed=0).parameters())


def test_eager_step_holds_at_least_its_activations():
    # LeNet on 128 images: the first conv's output, 128x28x28x6 floats, and the first pool's,
    # 128x14x14x6, are both alive until the backward pass reads them.
    activations = 4 * 128 * (28 * 28 * 6 + 14 * 14 * 6)
    measured = memory.eager_step_bytes(lenet_workload)
    assert measured >= _parameter_bytes() + activations
    assert measured < 100 * MIB


def test_compiled_step_is_its_arena_plus_state():
    workload = lenet_workload(LAZY_CPU)
    arena = braze.explain(workload.step, *workload.batch(LAZY_CPU)).peak_bytes
    measured = memory.compiled_step_bytes(lenet_workload)
    assert measured >= _parameter_bytes() + arena


def test_peak_rss_is_reset_per_mode():
    if not memory.reset_peak_rss():
        pytest.skip("this system cannot reset the resident high-water mark")
    low = memory.peak_rss_bytes()
    # Fresh pages of its own: a bytearray could reuse heap memory the process freed but
    # still holds resident, which raises no high-water mark.
    block = mmap.mmap(-1, 64 * MIB)
    for page in range(0, 64 * MIB, mmap.PAGESIZE):
        block[page] = 1  # touch every page
    assert memory.peak_rss_bytes() >= low + 60 * MIB
    block.close()
    memory.reset_peak_rss()
    assert memory.peak_rss_bytes() < low + 60 * MIB


def test_eager_wall_time_extrapolated_from_fewer_epochs_says_so():
    eager = ModeResult("eager", [10.0, 12.0], [50.0, 60.0], step_bytes=8 * MIB, peak_rss_bytes=300 * MIB)
    compiled = ModeResult("compiled", [5.0, 1.0, 1.0, 1.0], [50.0, 60.0, 70.0, 80.0], step_bytes=2 * MIB)
    summary = Comparison("cnn", {}, 4, [eager, compiled]).summary()
    assert "wall time: eager 44.0 s (extrapolated to 4 epochs from the 2 run), compiled 8.0 s (82% less)" in summary
    assert "final accuracy 80.0% after 4 epochs" in summary and "accuracy per epoch (%) 50.0, 60.0, 70.0" in summary
    assert "step memory: eager 8.0 MiB (live arrays + parameters), compiled 2.0 MiB" in summary


def test_braze_bench_cnn_with_fewer_eager_epochs(tmp_path, capsys):
    out = tmp_path / "cnn.json"
    args = ["bench", "cnn", "--epochs", "2", "--eager-epochs", "1", "--steps-per-epoch", "1", "--image-size", "48"]
    assert cli.main([*args, "--out", str(out)]) == 0
    assert "extrapolated to 2 epochs from the 1 run" in capsys.readouterr().out
    eager, compiled = json.loads(out.read_text())["modes"]
    assert len(eager["accuracy_per_epoch"]) == 1 and len(compiled["accuracy_per_epoch"]) == 2
    assert eager["step_bytes"] > 0 and compiled["step_bytes"] > 0 and compiled["peak_rss_bytes"] > 0
