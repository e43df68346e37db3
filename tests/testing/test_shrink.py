"""The shrinker, on a planted bug: the reference interpreter's tanh made wrong (only inside
this test) must be found and shrunk to one tanh of one single-element input."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from braze.backends.reference import interpreter
from braze.ir.prims.elementwise import tanh
from braze.testing.fuzz import fuzz
from braze.testing.programs import Input, Program, Step


def test_planted_bug_shrinks_to_one_tanh(tmp_path, monkeypatch):
    apply = interpreter.apply_primitive

    def wrong_tanh(primitive, arrays, attrs, aval):  # the interpreter's rule; eager ops keep the right one
        result = apply(primitive, arrays, attrs, aval)
        return (result + np.asarray(0.125, result.dtype)).astype(result.dtype) if primitive is tanh else result

    monkeypatch.setattr(interpreter, "apply_primitive", wrong_tanh)
    report = fuzz(programs=40, seed=0, backends=["reference"], out=tmp_path, log=None)
    assert not report.ok
    failure = report.failures[0]
    assert failure.backend == "reference" and failure.kind == "mismatch"
    program = (failure.folder / "program.py").read_text()
    body = program[program.index("def program") : program.index("INPUTS")].strip()
    steps = [line.strip() for line in body.splitlines() if line.strip().startswith("t")]
    # One step whose op is tanh: B.tanh, or the GELU's tanh approximation.
    assert len(steps) == 1 and steps[0] in ("t1 = B.tanh(t0)", "t1 = B.nn.functional.gelu(t0, approximate='tanh')")
    assert "INPUTS = [((), 'float" in program
    assert "tanh" in (failure.folder / "graph.txt").read_text()
    # The script stands alone; without the planted bug, eager and @braze.jit agree.
    monkeypatch.undo()
    run = subprocess.run(
        [sys.executable, str(failure.folder / "program.py")],
        capture_output=True,
        text=True,
        env={**os.environ, "BRAZE_CACHE": str(tmp_path / "cache")},
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "agree" in run.stdout


def test_removing_a_step_rewires_its_readers():
    program = Program(
        seed=0,
        inputs=(Input((2,), "float32"),),
        steps=(Step("B.exp({0})", (0,)), Step("{0} * 2.0", (1,)), Step("{0} + {1}", (2, 1))),
        weights=(1.0, 0.0, 1.0),
        returned=(2,),
    )
    smaller = program.without_step(0, 0)
    assert smaller.steps == (Step("{0} * 2.0", (0,)), Step("{0} + {1}", (1, 0)))
    assert smaller.weights == (0.0, 1.0)
    assert smaller.returned == (1,)
    assert "t2 = t1 + t0" in smaller.source()
