"""The fuzzer's oracle: a program run eagerly (NumPy, the baseline) and on a backend, and
the comparison of the two, with tolerances suited to the dtype and to how much the program
amplifies rounding; the fuzzer (``fuzz.py``) draws programs and the shrinker
(``shrink.py``) minimises failures with it.

Backends: ``reference`` (the optimized, fused graph on the reference interpreter: the
passes alone), ``cpu`` (native code, fused) and ``cpu-unfused`` (one kernel per op, as
``BRAZE_FUSION=0``). Programs are traced as ``@braze.jit`` traces them and go through each
backend's pass pipeline; the native ones are compiled a batch at a time into one library.
The ``jit`` backend calls ``braze.jit`` itself, one compile per program: slower, and it
also covers how jit passes arguments and results in and out. The ``jit-state`` backend
runs, for each seed, a stateful program instead (:mod:`braze.testing.stateful`): a model
trained and evaluated over several jitted calls while hyperparameters, the mode, the random
seed and a closed-over number change between them, against the same calls made eagerly.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

import braze as B
from braze import lazy
from braze.backends import cpu
from braze.backends.reference import REFERENCE, evaluate
from braze.ir.graph import Graph
from braze.testing.programs import Program, step_function, valid
from braze.testing.stateful import StatefulProgram, check_stateful, draw_stateful

BACKENDS = ("reference", "cpu", "cpu-unfused", "jit", "jit-state")
RTOL = {"float32": 2e-5, "float64": 1e-11}
EPS = {"float32": float(np.finfo(np.float32).eps), "float64": float(np.finfo(np.float64).eps)}
OTHER = {"float32": "float64", "float64": "float32"}


@dataclass
class Failure:
    program: Program | StatefulProgram
    backend: str
    kind: str  # "crash" or "mismatch"
    message: str
    folder: Path | None = None  # where the shrunk program was written

    @property
    def signature(self) -> tuple[str, str, str]:
        """What a shrunk program must keep failing with: backend, kind and, for a crash, the error type."""
        return self.backend, self.kind, self.message.split(":", 1)[0] if self.kind == "crash" else ""

    def describe(self) -> str:
        where = f"\n  minimal program: {self.folder}" if self.folder else ""
        rerun = f"braze fuzz --seed {self.program.seed} --programs 1 --backends {self.backend}"
        return f"program {self.program.seed}: {self.kind} on {self.backend}: {self.message}\n  rerun: {rerun}{where}"


@dataclass
class Baseline:
    names: list[str]
    arrays: list[np.ndarray]
    slack: list[float]  # how far rounding alone may move each output


def _in_dtype(program: Program, dtype: str | None) -> tuple[Callable, list[np.ndarray]]:
    """The program's ``step`` and its inputs, in float ``dtype`` (default: the program's)."""
    arrays = program.arrays()
    fn = program.function()
    if dtype is not None and dtype != program.dtype:
        arrays = [a.astype(dtype) if a.dtype.kind == "f" else a for a in arrays]
        fn = step_function(program.source().replace(f"B.{program.dtype}", f"B.{dtype}"))
    return fn, arrays


def outputs(program: Program, device: B.Device | None = None, dtype: str | None = None) -> list[B.Tensor]:
    """What the program's ``step`` returns (``Program.output_names``), run eagerly or on ``device``."""
    fn, arrays = _in_dtype(program, dtype)
    tensors = [B.tensor(a, device=device) if device else B.tensor(a) for a in arrays]
    with np.errstate(all="ignore"):
        return fn(*tensors)


def baseline(program: Program) -> Baseline:
    with np.errstate(all="ignore"):
        arrays = [t.numpy() for t in outputs(program)]
        try:
            other = [t.numpy() for t in outputs(program, dtype=OTHER[program.dtype])]
        except (B.BrazeError, ValueError, TypeError):
            other = arrays
        # Rounding error grows with the precision's epsilon: scale the other run's distance to ours.
        ratio = min(1.0, EPS[program.dtype] / EPS[OTHER[program.dtype]])
        slack = []
        for a, b in zip(arrays, other, strict=True):
            finite = np.isfinite(a) & np.isfinite(b)
            distance = np.abs(a.astype(np.float64) - b.astype(np.float64))[finite]
            slack.append(8 * float(distance.max(initial=0.0)) * ratio)
        # A result computed in another order is off by a part of the size of what it was
        # computed from, not of its own: values that cancel to 0 in both precisions (the
        # loss's terms, logsumexp of a log_softmax) still differ by that much.
        terms, largest = _magnitudes(program)
        rtol = RTOL[program.dtype]
        slack = [max(s, rtol * largest) for s in slack]
        slack[0] = max(slack[0], rtol * terms)
    return Baseline(program.output_names(), arrays, slack)


def _magnitudes(program: Program) -> tuple[float, float]:
    """The sum of the absolute values of the loss's terms, and the largest value of all."""
    values = [np.abs(v.numpy().astype(np.float64)) for v in valid(program) or []]
    count = len(program.inputs)
    weighted = [(w, values[count + k]) for k, w in enumerate(program.weights) if count + k < len(values)]
    terms = sum(abs(w) * float(v.sum()) for w, v in weighted)
    largest = max((float(v.max(initial=0.0)) for v in values), default=0.0)
    return terms, largest


def mismatch(want: np.ndarray, got: np.ndarray, slack: float, rtol: float) -> str | None:
    """Why ``got`` is not ``want`` within tolerance, or None."""
    got = np.asarray(got)
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"got {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}"
    if want.dtype.kind != "f":
        wrong = int(np.sum(got != want))
        return f"{wrong} of {want.size} elements differ" if wrong else None
    nan = np.isnan(want) != np.isnan(got)
    if nan.any():
        at = tuple(int(i) for i in np.argwhere(nan)[0])
        return f"NaN where the other has {float(got[at]) if np.isnan(want[at]) else float(want[at])} at {at}"
    finite = np.isfinite(want) & np.isfinite(got)
    if np.any((want != got) & ~finite & ~np.isnan(want)):
        return "infinities differ"
    scale = float(np.abs(want[finite]).max(initial=0.0))
    error = np.where(finite, np.abs(got.astype(np.float64) - want), 0.0)
    allowed = rtol * scale + slack + rtol * np.abs(want.astype(np.float64))
    # Only finite values have a tolerance: where both are NaN (checked above), the relative
    # part of ``allowed`` is NaN itself, and a NaN excess would read as a mismatch.
    excess = np.where(finite, error - allowed, 0.0)
    if excess.max(initial=0.0) <= 0:
        return None
    at = np.unravel_index(int(np.argmax(excess)), want.shape)
    where = tuple(int(i) for i in at)
    return f"{float(got[at])!r} instead of {float(want[at])!r} at {where} (allowed {allowed[at]:.3g})"


def compare(program: Program, base: Baseline, got: Sequence[np.ndarray]) -> str | None:
    if len(got) != len(base.arrays):
        return f"{len(got)} outputs instead of {len(base.arrays)}"
    rtol = RTOL[program.dtype]
    for name, want, g, slack in zip(base.names, base.arrays, got, base.slack, strict=True):
        why = mismatch(want, g, slack, rtol)
        if why:
            return f"{name}: {why}"
    return None


def trace(program: Program) -> tuple[Graph, list[np.ndarray]]:
    """The graph ``@braze.jit`` would compile for the program's value and gradients, and its arguments."""
    roots = [t._value for t in outputs(program, device=B.LAZY_CPU)]
    traced = lazy.build_graph(roots)
    return traced.graph, traced.args


def _crash(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]


def check_batch(programs: Sequence[Program], backends: Sequence[str], cache: cpu.DiskCache | None) -> list[Failure]:
    """Run every program on every backend; the failures (at most one per program and backend)."""
    failures: list[Failure] = []
    if "jit-state" in backends:
        failures += _check_stateful([program.seed for program in programs], cache)
        backends = [b for b in backends if b != "jit-state"]
        if not backends:
            return failures
    ready: list[tuple[Program, Baseline, Graph, list[np.ndarray]]] = []
    for program in programs:
        try:
            base = baseline(program)
        except Exception as error:  # noqa: BLE001 - any error of braze's is a finding
            failures.append(Failure(program, "eager", "crash", _crash(error)))
            continue
        try:
            graph, args = trace(program)
        except Exception as error:  # noqa: BLE001
            failures.append(Failure(program, "trace", "crash", _crash(error)))
            continue
        ready.append((program, base, graph, args))
    if "jit" in backends:
        for program, base, _, _ in ready:
            try:
                got = _run_jit(program, cache)
                why = compare(program, base, got)
                if why and amplified_rounding(program, base, got, "jit", cache):
                    why = None
            except Exception as error:  # noqa: BLE001
                failures.append(Failure(program, "jit", "crash", _crash(error)))
                continue
            if why:
                failures.append(Failure(program, "jit", "mismatch", why))
        backends = [b for b in backends if b != "jit"]
    optimized: dict[str, list[tuple[Program, Baseline, Graph, list[np.ndarray]]]] = {}
    for backend in backends:
        optimized[backend] = []
        for program, base, graph, args in ready:
            try:
                optimized[backend].append((program, base, optimize_for(backend, graph, verify=True), args))
            except Exception as error:  # noqa: BLE001
                failures.append(Failure(program, backend, "crash", _crash(error)))
    # The C compiler runs dominate: the fused and unfused libraries are built side by side.
    with ThreadPoolExecutor(max_workers=max(1, len(backends))) as pool:
        builds = {b: pool.submit(_runners, b, [g for _, _, g, _ in optimized[b]], cache) for b in backends}
    for backend in backends:
        for (program, base, _, args), runner in zip(optimized[backend], builds[backend].result(), strict=True):
            try:
                with np.errstate(all="ignore"):
                    got = runner([a.copy() for a in args])
            except Exception as error:  # noqa: BLE001
                failures.append(Failure(program, backend, "crash", _crash(error)))
                continue
            why = compare(program, base, got)
            if why and not amplified_rounding(program, base, got, backend, cache):
                failures.append(Failure(program, backend, "mismatch", why))
    return failures


def optimize_for(backend: str, graph: Graph, verify: bool = False) -> Graph:
    """``graph`` through the pass pipeline as ``backend`` compiles it: the reference
    interpreter's (the target-independent policy), the CPU's fused or unfused."""
    if backend == "reference":
        return REFERENCE.optimize(graph, verify, fusion=True)
    return cpu.optimize(graph, verify, fusion=backend != "cpu-unfused")


@contextlib.contextmanager
def _jit_settings(cache: cpu.DiskCache | None) -> Iterator[None]:
    """Native fused code for ``braze.jit``, compiled into the run's own cache."""
    settings = {"BRAZE_BACKEND": "cpu", "BRAZE_FUSION": "1"}
    if cache is not None:
        settings["BRAZE_CACHE"] = str(cache.base)
    saved = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _run_jit(program: Program, cache: cpu.DiskCache | None, dtype: str | None = None) -> list[np.ndarray]:
    fn, arrays = _in_dtype(program, dtype)
    with _jit_settings(cache):
        # An updated input's buffer may take its new value, as an optimizer's parameters do.
        donated = program.differentiated if program.update else ()
        step = B.jit(fn, donate_argnums=donated)
        with np.errstate(all="ignore"):
            return [t.numpy() for t in step(*[B.tensor(a) for a in arrays])]


def _run_on(backend: str, program: Program, cache: cpu.DiskCache | None, dtype: str) -> list[np.ndarray]:
    """The program's outputs in ``dtype`` on ``backend``, traced, optimized and run alone."""
    if backend == "jit":
        return _run_jit(program, cache, dtype)
    traced = lazy.build_graph([t._value for t in outputs(program, device=B.LAZY_CPU, dtype=dtype)])
    graph = optimize_for(backend, traced.graph)
    run = (lambda args: evaluate(graph, args)) if backend == "reference" else cpu.compile_graph(graph, cache)
    with np.errstate(all="ignore"):
        return run([a.copy() for a in traced.args])


# A backend whose float64 results differ from eager float64 by more than this part of the
# size of what they are computed from (the output's or the largest value of the program)
# computes another function, not the same one rounded otherwise.
SAME_FUNCTION = 1e-6


def amplified_rounding(
    program: Program, base: Baseline, got: Sequence[np.ndarray], backend: str, cache: cpu.DiskCache | None
) -> bool:
    """Whether a float32 mismatch is rounding that the program amplifies where the eager
    run's order happened to cancel exactly (a gradient that is 0 by symmetry, through a
    1/x of a small x: an atan2(x, x), a layer norm of two values), which the float64 run
    beside the baseline does not show: the backend computes the same function in float64
    (within ``SAME_FUNCTION``), and its float32 results are as far from eager's as its
    float64 ones are, scaled by the ratio of the two epsilons."""
    if program.dtype != "float32":
        return False
    try:
        want = [t.numpy() for t in outputs(program, dtype="float64")]
        got64 = _run_on(backend, program, cache, "float64")
    except Exception:  # noqa: BLE001 - no float64 run to tell: the mismatch stands
        return False
    ratio = EPS["float32"] / EPS["float64"]
    largest = _magnitudes(program)[1]
    slack = []
    for w, g, s in zip(want, got64, base.slack, strict=True):
        if w.dtype.kind != "f":
            slack.append(s)
            continue
        finite = np.isfinite(w) & np.isfinite(g)
        distance = float(np.abs(w - g)[finite].max(initial=0.0))
        if distance > SAME_FUNCTION * max(float(np.abs(w[finite]).max(initial=0.0)), largest):
            return False
        slack.append(s + 8 * ratio * distance)
    return compare(program, replace(base, slack=slack), got) is None


def _check_stateful(seeds: Sequence[int], cache: cpu.DiskCache | None) -> list[Failure]:
    failures = []
    for seed in seeds:
        program = draw_stateful(seed)
        try:
            with _jit_settings(cache):
                why = check_stateful(program)
        except Exception as error:  # noqa: BLE001 - any error of braze's is a finding
            failures.append(Failure(program, "jit-state", "crash", _crash(error)))
            continue
        if why:
            failures.append(Failure(program, "jit-state", "mismatch", why))
    return failures


def _runners(backend: str, graphs: list[Graph], cache: cpu.DiskCache | None) -> list[Callable]:
    if backend == "reference":
        return [lambda args, g=g: evaluate(g, args) for g in graphs]
    if not graphs:
        return []
    try:
        return list(cpu.compile_graphs(graphs, cache))
    except Exception:  # noqa: BLE001 - one graph broke the library: compile each alone to find it
        return [_compile_alone(g, cache) for g in graphs]


def _compile_alone(graph: Graph, cache: cpu.DiskCache | None) -> Callable:
    try:
        return cpu.compile_graph(graph, cache)
    except Exception as error:  # noqa: BLE001
        message = _crash(error)

        def failed(args: list[np.ndarray]) -> list[np.ndarray]:
            raise RuntimeError(f"compile failed: {message}")

        return failed
