"""CI-sized fuzzing: a few hundred random programs and their gradients (a fifth of them
second derivatives) agree between eager NumPy and every backend, fused and unfused. A fixed seed keeps the same programs
covered on every run; a seed derived from the date adds new ones each day while keeping a
failure reproducible (the seed is printed, and ``braze fuzz --seed K`` reruns it)."""

from __future__ import annotations

import datetime

import numpy as np
import pytest

import braze
from braze.backends import cpu
from braze.backends.reference import interpreter
from braze.cli import main
from braze.ir.prims.elementwise import tanh
from braze.testing import oracle
from braze.testing.fuzz import fuzz
from braze.testing.generate import draw_program
from braze.testing.oracle import mismatch


def date_seed() -> int:
    """Today's seed: runs of up to 1000 programs from it never overlap another day's."""
    return int(datetime.date.today().strftime("%Y%m%d")) * 1000


SEEDS = [0, date_seed()]


@pytest.mark.parametrize("seed", SEEDS, ids=["fixed", "today"])
def test_reference_backend_agrees_with_eager(seed, tmp_path, capsys):
    report = fuzz(programs=300, seed=seed, backends=["reference"], out=tmp_path, log=None)
    print(f"fuzz seed {seed}")
    assert report.programs == 300
    assert report.ok, report.summary()


@pytest.mark.skipif(not cpu.available(), reason="no C compiler")
@pytest.mark.parametrize(("seed", "programs"), [(SEEDS[0], 64), (SEEDS[1] + 500, 32)], ids=["fixed", "today"])
def test_native_backend_fused_and_unfused_agrees_with_eager(seed, programs, tmp_path):
    report = fuzz(programs=programs, seed=seed, backends=["cpu", "cpu-unfused"], out=tmp_path, log=None)
    print(f"fuzz seed {seed}")
    assert report.programs == programs
    assert report.ok, report.summary()


@pytest.mark.skipif(not cpu.available(), reason="no C compiler")
def test_braze_jit_itself_agrees_with_eager(tmp_path):
    """The user's path, one compile per program: arguments in, results and gradients out."""
    report = fuzz(programs=6, seed=SEEDS[1] + 800, backends=["jit"], out=tmp_path, log=None)
    assert report.ok, report.summary()


def test_a_seed_always_draws_the_same_program():
    assert draw_program(1234) == draw_program(1234)
    assert draw_program(1234).source() != draw_program(1235).source()
    first, second = draw_program(77).arrays(), draw_program(77).arrays()
    assert all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))


def test_tolerance_follows_dtype_magnitude_and_rounding():
    want = np.array([1000.0, 1e-3], np.float32)
    assert mismatch(want, want * np.float32(1 + 1e-6), slack=0.0, rtol=2e-5) is None
    assert "instead of" in mismatch(want, want + np.float32(0.1), slack=0.0, rtol=2e-5)
    # A program that loses 0.1 to rounding in the other precision may differ that much here.
    assert mismatch(want, want + np.float32(0.1), slack=0.1, rtol=2e-5) is None
    assert "NaN" in mismatch(want, np.array([np.nan, 1e-3], np.float32), slack=0.0, rtol=2e-5)
    assert "differ" in mismatch(np.array([1, 2]), np.array([1, 3]), slack=0.0, rtol=0.0)
    assert "got float64" in mismatch(want, want.astype(np.float64), slack=0.0, rtol=2e-5)


def test_nans_both_runs_agree_on_are_no_mismatch():
    # Fuzz program 1110 (a layer norm over one element, 0 / 0): a NaN in both runs, scalar
    # or beside finite values, has no tolerance of its own to exceed.
    assert mismatch(np.array(np.nan, np.float32), np.array(np.nan, np.float32), slack=0.0, rtol=2e-5) is None
    both = np.array([np.nan, 2.0], np.float32)
    assert mismatch(both, both.copy(), slack=0.0, rtol=2e-5) is None
    assert "instead of" in mismatch(both, np.array([np.nan, 2.5], np.float32), slack=0.0, rtol=2e-5)


def test_command_line_runs_and_reports(tmp_path, capsys):
    assert main(["fuzz", "--programs", "5", "--seed", "3", "--backends", "reference", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert "seed 3" in out.out
    assert "braze fuzz: 5 programs (seeds 3..7) on reference: 0 crashes, 0 mismatches" in out.err


def test_command_line_exits_non_zero_on_a_failure(tmp_path, capsys, monkeypatch):
    apply = interpreter.apply_primitive

    def wrong_tanh(primitive, arrays, attrs, aval):  # a bug in the interpreter, not in eager NumPy
        result = apply(primitive, arrays, attrs, aval)
        return result * 2 if primitive is tanh else result

    monkeypatch.setattr(interpreter, "apply_primitive", wrong_tanh)
    assert main(["fuzz", "--programs", "40", "--seed", "0", "--backends", "reference", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "mismatch on reference" in err
    assert f"minimal program: {tmp_path}" in err


def test_command_line_refuses_unknown_backends(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["fuzz", "--backends", "cpu,gpu"])
    assert exit_.value.code == 2
    assert "expected some of reference,cpu,cpu-unfused" in capsys.readouterr().err


def test_a_fifth_of_the_programs_are_second_order():
    orders = [draw_program(seed).order for seed in range(500)]
    assert set(orders) == {1, 2} and 0.1 < orders.count(2) / len(orders) < 0.3


def test_a_second_order_program_differentiates_the_sum_of_its_gradients():
    """Its gradients are those of the sum of the loss's gradients, by float64 finite
    differences of that sum (the fuzzer then compares every backend with them)."""
    program = next(
        p
        for p in map(draw_program, range(1000))
        if p.order == 2 and p.dtype == "float64" and not p.update and len(p.steps) >= 4
    )
    namespace: dict = {"B": braze}
    exec(compile(program.source(), "<program>", "exec"), namespace)  # noqa: S102 - the fuzzer's own text
    arrays = program.arrays()
    outputs = program.function()(*[braze.tensor(a) for a in arrays])
    grads = outputs[len(outputs) - len(program.differentiated) :]
    rng = np.random.default_rng(0)
    eps = 1e-6
    for position, grad in zip(program.differentiated, grads, strict=True):
        for flat in rng.choice(arrays[position].size, size=min(3, arrays[position].size), replace=False):
            values = []
            for sign in (1.0, -1.0):
                moved = [a.copy() for a in arrays]
                moved[position].reshape(-1)[flat] += sign * eps
                values.append(namespace["gradient_sum"](*[braze.tensor(a) for a in moved])[0].item())
            numeric = (values[0] - values[1]) / (2 * eps)
            np.testing.assert_allclose(grad.numpy().reshape(-1)[flat], numeric, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not cpu.available(), reason="no C compiler")
def test_rounding_a_program_amplifies_past_eager_cancellation_is_told_from_a_wrong_result(tmp_path, monkeypatch):
    """Fuzz program 920493: atan2(x, x) differentiated twice is 0 in eager's order, exactly
    in both precisions; compiled, its terms of 1/x^3 cancelled to 0.19 at x = 2e-4 in
    float32 and to 3e-10 in float64. The jit computes the same function in float64, so the
    float32 difference is rounding; a wrong value, or a float64 run of another function,
    is not."""
    cache = cpu.DiskCache(tmp_path)
    program = draw_program(920493)
    base = oracle.baseline(program)
    got = oracle._run_jit(program, cache)
    assert oracle.amplified_rounding(program, base, got, "jit", cache)

    ordinary = draw_program(3)
    ordinary_base = oracle.baseline(ordinary)
    wrong = oracle._run_jit(ordinary, cache)
    k = next(k for k, a in enumerate(wrong) if a.dtype.kind == "f" and a.size)
    wrong[k] = wrong[k] + np.float32(1.0) + np.abs(wrong[k])
    assert oracle.compare(ordinary, ordinary_base, wrong) is not None
    assert not oracle.amplified_rounding(ordinary, ordinary_base, wrong, "jit", cache)

    def another_function(backend, program, cache, dtype):
        return [a * 1.01 + 1.0 if a.dtype.kind == "f" else a for a in oracle._run_jit(program, cache, dtype)]

    monkeypatch.setattr(oracle, "_run_on", another_function)
    assert not oracle.amplified_rounding(program, base, got, "jit", cache)
