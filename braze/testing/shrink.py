"""Shrinking a failing program to a minimal one that fails the same way, and writing it
out as IR text and as a standalone Python script.

Delta debugging, one element at a time until nothing more can go: returned values and
loss terms, then steps (a step's readers read one of its operands, or another value of
its shape, instead), then inputs nothing reads, then input dimensions (to 1, halved, or gone when 1).
Every candidate must still run eagerly and fail on the same backend in the same way (the
same kind, and for a crash the same exception type).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

from braze.backends import cpu
from braze.ir.text import print_graph
from braze.testing.oracle import RTOL, Failure, check_batch, optimize_for, trace
from braze.testing.programs import Program, valid


def shrink(program: Program, fails: Callable[[Program], bool], seconds: float = 120.0) -> Program:
    """The smallest program reached from ``program`` for which ``fails`` stays true."""
    deadline = time.perf_counter() + seconds
    changed = True
    while changed and time.perf_counter() < deadline:
        changed = False
        for candidate in _candidates(program):
            if time.perf_counter() >= deadline:
                break
            if valid(candidate) is not None and fails(candidate):
                program, changed = candidate, True
                break
    return program


def _candidates(program: Program) -> Iterator[Program]:
    """Smaller programs, the biggest cuts first."""
    count = len(program.inputs)
    for r in program.returned:
        yield replace(program, returned=tuple(x for x in program.returned if x != r))
    for k in reversed(range(len(program.steps))):
        if not program.readers(count + k):
            yield program.without_step(k, 0)
    for k, weight in enumerate(program.weights):
        if weight and sum(1 for w in program.weights if w) > 1:
            yield replace(program, weights=tuple(0.0 if i == k else w for i, w in enumerate(program.weights)))
    values = valid(program) or []
    for k in reversed(range(len(program.steps))):
        here = count + k
        if not program.readers(here) or here >= len(values):
            continue
        options = list(dict.fromkeys(program.steps[k].args))
        options += [i for i in range(here) if i not in options and _same(values[i], values[here])]
        for option in options:
            yield program.without_step(k, option)
    for i in reversed(range(count)):
        if count > 1 and not program.readers(i) and (i or program.inputs[1].dtype != "int32"):
            yield program.without_input(i)
    for i, x in enumerate(program.inputs):
        for axis, size in enumerate(x.shape):
            shorter = [x.shape[:axis] + x.shape[axis + 1 :]] if size == 1 else []
            smaller = [x.shape[:axis] + (s,) + x.shape[axis + 1 :] for s in (1, size // 2, size - 1) if 0 < s < size]
            for shape in dict.fromkeys(shorter + smaller):
                inputs = program.inputs[:i] + (replace(x, shape=shape),) + program.inputs[i + 1 :]
                yield replace(program, inputs=inputs)


def _same(a, b) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


def shrink_failure(failure: Failure, cache: cpu.DiskCache | None = None, seconds: float = 120.0) -> Failure:
    """``failure`` with its program shrunk; the message is the shrunk program's."""
    last: list[Failure] = [failure]

    def fails(program: Program) -> bool:
        for found in check_batch([program], [failure.backend], cache):
            if found.signature == failure.signature:
                last[0] = found
                return True
        return False

    small = shrink(failure.program, fails, seconds)
    return last[0] if last[0].program == small else replace(failure, program=small)


def write_failure(failure: Failure, out: Path) -> Path:
    """Write ``failure``'s program to ``out/program-SEED-BACKEND/`` as ``program.py`` (a
    script reproducing it), ``graph.txt`` (what ``@braze.jit`` traces) and, when the pass
    pipeline gets that far, ``optimized.txt``."""
    folder = out / f"program-{failure.program.seed}-{failure.backend}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "program.py").write_text(script(failure))
    try:
        graph, _ = trace(failure.program)
    except Exception as error:  # noqa: BLE001 - the failure may be in tracing itself
        (folder / "graph.txt").write_text(f"# tracing failed: {error}\n")
        return folder
    (folder / "graph.txt").write_text(print_graph(graph) + "\n")
    try:
        optimized = optimize_for(failure.backend, graph)
        (folder / "optimized.txt").write_text(print_graph(optimized) + "\n")
    except Exception as error:  # noqa: BLE001
        (folder / "optimized.txt").write_text(f"# the pass pipeline failed: {type(error).__name__}: {error}\n")
    return folder


def write_stateful_failure(failure: Failure, out: Path) -> Path:
    """Write a stateful program's failure to ``out/program-SEED-jit-state/``: ``program.txt``
    (the program and what went wrong) and ``program.py``, which checks it again."""
    program = failure.program
    folder = out / f"program-{program.seed}-{failure.backend}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "program.txt").write_text(f"{failure.kind}: {failure.message}\n{program.describe()}\n")
    (folder / "program.py").write_text(
        f'''"""Found by braze fuzz: {failure.kind} on {failure.backend} (stateful program {program.seed}).

{failure.message}
"""

import sys

from braze.testing.stateful import check_stateful, draw_stateful

if __name__ == "__main__":
    why = check_stateful(draw_stateful({program.seed}))
    print(why or "eager and @braze.jit agree")
    sys.exit(1 if why else 0)
'''
    )
    return folder


def script(failure: Failure) -> str:
    """A standalone Python script that runs the program eagerly and under ``@braze.jit`` on
    the failure's backend and compares; it exits non-zero while the bug is there."""
    program = failure.program
    environment = {
        "reference": {"BRAZE_BACKEND": "reference"},
        "cpu": {"BRAZE_BACKEND": "cpu", "BRAZE_FUSION": "1"},
        "cpu-unfused": {"BRAZE_BACKEND": "cpu", "BRAZE_FUSION": "0"},
        "jit": {"BRAZE_BACKEND": "cpu", "BRAZE_FUSION": "1"},
    }.get(failure.backend, {})
    settings = "".join(f"os.environ[{k!r}] = {v!r}\n" for k, v in environment.items())
    inputs = ", ".join(f"({x.shape!r}, {x.dtype!r}, {x.key})" for x in program.inputs)
    return f'''"""Found by braze fuzz: {failure.kind} on {failure.backend} (program {program.seed}, shrunk).

{failure.message}

Runs the program's step (its value, gradients and any in-place update) eagerly and under
@braze.jit, and compares them.
"""

import os

{settings}
import numpy as np

import braze as B

{program.source()}

INPUTS = [{inputs}]
NAMES = {program.output_names()!r}


def arrays():
    made = []
    for shape, dtype, key in INPUTS:
        rng = np.random.default_rng([{program.seed}, key])
        if dtype == "int32":
            made.append(rng.integers(-5, 6, shape).astype(np.int32))
        else:
            made.append(rng.standard_normal(shape).astype(dtype))
    return made


def run(fn):
    return [t.numpy() for t in fn(*[B.tensor(a) for a in arrays()])]


if __name__ == "__main__":
    expected = run(step)
    got = run(B.jit(step, donate_argnums={program.differentiated if program.update else ()!r}))
    for name, want, have in zip(NAMES, expected, got):
        scale = float(np.abs(want).max(initial=0.0)) if want.dtype.kind == "f" else 0.0
        rtol = {RTOL[program.dtype]!r} if want.dtype.kind == "f" else 0.0
        np.testing.assert_allclose(have, want, rtol=rtol, atol=rtol * scale, equal_nan=True, err_msg=name)
    print("eager and @braze.jit agree")
'''
