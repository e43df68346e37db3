"""bench_step.py's rounds: each row is its fastest round, with the slowest beside it."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_step import fastest_rounds, table  # noqa: E402


def row(framework: str, mode: str, median_ms: float, first_step_s: float) -> dict:
    return {
        "workload": "gpt",
        "framework": framework,
        "mode": mode,
        "median_ms": median_ms,
        "first_step_s": first_step_s,
    }


def test_each_row_is_its_fastest_round_in_the_first_rounds_order():
    rounds = [
        [row("braze", "jit", 66.7, 4.9), row("torch", "compile", 42.5, 54.6)],
        [row("braze", "jit", 62.4, 4.6), row("torch", "compile", 61.7, 48.0)],
        [row("braze", "jit", 64.0, 5.0), row("torch", "compile", 50.0, 50.0)],
    ]
    jit, compiled = fastest_rounds(rounds)
    assert (jit["median_ms"], jit["first_step_s"], jit["rounds_ms"]) == (62.4, 4.6, [66.7, 62.4, 64.0])
    assert (compiled["median_ms"], compiled["first_step_s"], compiled["rounds_ms"]) == (42.5, 54.6, [42.5, 61.7, 50.0])
    lines = table([jit, compiled]).splitlines()
    assert "slowest round" in lines[0] and len(lines[1].split("|")) == len(lines[0].split("|"))
    assert lines[2] == "| gpt | torch compile | 42.5 ms | 61.7 ms | 54.60 s | - | 0.68x |"


def test_one_round_keeps_the_table_as_it_was():
    (only,) = fastest_rounds([[row("braze", "jit", 60.0, 4.0)]])
    assert table([only]).splitlines()[0] == (
        "| workload | framework / mode | median step | first step | peak RSS | vs braze jit |"
    )
