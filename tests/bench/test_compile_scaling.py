"""Compile work grows linearly with the program: the Python calls per graph node that
tracing, the pass pipeline and C emission make are the same at 4,000 nodes as at 1,000, for
each program shape the compile benchmark measures. (Counted calls, not seconds: a count does
not depend on the host's speed or load. The fusion pass this replaced made 13 times as many
calls per node at 4,000 nodes of the unrolled LSTM as at 1,000.)"""

from __future__ import annotations

import cProfile
import gc
import pstats
from collections.abc import Callable

import pytest

from braze.backends.cpu.compiler import find_compiler
from braze.backends.cpu.emit import emit_module
from braze.backends.cpu.fusion import CPU_FUSION
from braze.bench.compile_scaling import PROGRAMS, measure, units_for
from braze.passes import pipeline
from braze.passes.buffers import assign

SMALL, LARGE = 1000, 4000
# Calls per node may differ a little between sizes (the kernels' sizes round differently);
# growth with the size, as a walk of the graph per node would give, is 4 times as many.
SLACK = 1.15
COMPILER = find_compiler()  # C emission is generated text: it needs the target, no compiler run


def calls(work: Callable[[], object]) -> int:
    # Without the garbage collector: a collection inside the profile runs the finalizers of
    # whatever earlier tests in this process left behind, and counts their calls too. The
    # fewer of two runs: beside other tests, a run once counted 16% more calls in tracing
    # than the same run alone, work that was not the trace's.
    return min(_profiled_calls(work) for _ in range(2))


def _profiled_calls(work: Callable[[], object]) -> int:
    gc.collect()
    gc.disable()
    profile = cProfile.Profile()
    try:
        profile.enable()
        work()
    finally:
        profile.disable()
        gc.enable()
    return pstats.Stats(profile).total_calls


def calls_per_node(name: str, nodes: int) -> dict[str, float]:
    program = PROGRAMS[name]
    units = units_for(program, nodes)
    graph = program.trace(units)
    optimized, _ = pipeline.run(graph, policy=CPU_FUSION)
    size = len(graph.nodes())
    found = {
        "trace": calls(lambda: program.trace(units)) / size,
        "passes": calls(lambda: pipeline.run(graph, policy=CPU_FUSION)) / size,
    }
    if COMPILER is not None:
        target = COMPILER.target
        found["emit"] = calls(lambda: emit_module(optimized, assign(optimized, target.alignment), target)) / size
    return found


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_work_per_node_does_not_grow_with_the_program(name):
    small, large = calls_per_node(name, SMALL), calls_per_node(name, LARGE)
    for phase in small:
        assert large[phase] <= SLACK * small[phase], (phase, small, large)


def test_the_benchmark_times_every_phase_of_a_program_of_the_size_asked():
    m = measure(PROGRAMS["chain"], units_for(PROGRAMS["chain"], 300), native=False)
    assert 250 <= m.nodes <= 350
    assert list(m.phases)[0] == "trace" and {"simplify", "fuse", "emit"} <= set(m.phases)
    assert m.kernels >= 1 and m.seconds == pytest.approx(sum(m.phases.values()))
