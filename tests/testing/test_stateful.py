"""The fuzzer's stateful programs: several jitted calls with Python state changed between
them agree with the same calls made eagerly and compile once per guarded state; and the
check fails when a jitted call freezes what it read."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from braze import jit_state
from braze.backends import cpu
from braze.cli import main
from braze.ir.dtypes import int64
from braze.ops import as_tensor, random
from braze.testing.fuzz import fuzz
from braze.testing.stateful import HOLDERS, check_stateful, draw_stateful, expected_compiles

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")


def test_stateful_programs_agree_with_eager_and_compile_once_per_guarded_state(tmp_path):
    report = fuzz(programs=8, seed=500, backends=["jit-state"], out=tmp_path, log=None)
    assert report.programs == 8 and report.ok, report.summary()


def test_the_programs_change_what_a_training_script_changes():
    programs = [draw_stateful(seed) for seed in range(40)]
    calls = [call for p in programs for call in p.calls]
    assert {p.optimizer for p in programs} == {"sgd", "momentum", "nesterov", "adam", "adamw"}
    assert any(p.dropout and p.dropout_seed is None for p in programs)  # the default generator's draws
    assert any(dict(call.hyper).get("weight_decay") == 0.0 for call in calls)
    assert any(not call.train for call in calls) and any(call.reseed is not None for call in calls)
    assert any(expected_compiles(p)["train"] > 1 for p in programs)  # some guarded state changes
    assert {p.holder for p in programs} == set(HOLDERS)


def first_seed(wanted) -> int:
    return next(seed for seed in range(200) if wanted(draw_stateful(seed)))


def test_the_check_fails_when_random_keys_are_frozen(monkeypatch):
    def drawn_once(generator, seed, device):  # not recorded: the same mask on every call
        key = (generator or random.default_generator)._advance()
        return as_tensor(np.int64(key), dtype=int64, device=device)

    monkeypatch.setattr(random, "_key", drawn_once)
    seed = first_seed(lambda p: p.dropout and sum(call.train for call in p.calls) > 2)
    assert "differs" in check_stateful(draw_stateful(seed))


def test_the_check_fails_when_a_hyperparameter_is_a_guard(monkeypatch):
    monkeypatch.setattr(jit_state, "_lift", lambda *args: False)
    seed = first_seed(lambda p: any("lr" in dict(call.hyper) for call in p.calls if call.train))
    assert "traced" in check_stateful(draw_stateful(seed))


def changes_its_scale(holder: str):
    """A program whose scale, in ``holder``, changes between two calls of one function in one mode."""

    def changes(p) -> bool:
        pairs = zip(p.calls, p.calls[1:], strict=False)
        return p.holder == holder and any(
            (a.train, a.training) == (b.train, b.training) and a.scale != b.scale for a, b in pairs
        )

    return changes


def test_the_check_fails_when_a_slot_is_not_read(monkeypatch):
    monkeypatch.setattr(jit_state, "_public_slots", lambda kind: ())
    assert "differs" in check_stateful(draw_stateful(first_seed(changes_its_scale("slot"))))


def test_the_check_fails_when_an_array_is_guarded_by_its_identity(monkeypatch):
    monkeypatch.setattr(jit_state, "_contents", id)
    assert "differs" in check_stateful(draw_stateful(first_seed(changes_its_scale("array"))))


def test_the_check_fails_when_default_values_are_not_read(monkeypatch):
    roots = jit_state.function_roots
    monkeypatch.setattr(jit_state, "function_roots", lambda fn: [r for r in roots(fn) if "defaults" not in r[0]])
    assert "differs" in check_stateful(draw_stateful(first_seed(changes_its_scale("default"))))


def test_a_failure_is_written_with_a_script_that_checks_it_again(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(jit_state, "_lift", lambda *args: False)
    seed = first_seed(lambda p: any("lr" in dict(call.hyper) for call in p.calls if call.train))
    code = main(["fuzz", "--programs", "1", "--seed", str(seed), "--backends", "jit-state", "--out", str(tmp_path)])
    assert code == 1 and "mismatch on jit-state" in capsys.readouterr().err
    folder = tmp_path / f"program-{seed}-jit-state"
    assert "traced" in (folder / "program.txt").read_text()
    monkeypatch.undo()
    done = subprocess.run([sys.executable, str(folder / "program.py")], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "agree" in done.stdout  # the bug is gone in a fresh process
