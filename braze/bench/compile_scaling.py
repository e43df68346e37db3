"""How compile time grows with a program's size: programs of four shapes (an elementwise
chain, a wide fan, a chain of diamonds, an unrolled LSTM's training step) built to a
given number of graph nodes, and the seconds each phase of compiling them takes (tracing,
every pass, C emission, the C compiler); and an LSTM's training step over a given number
of time steps in both forms, the Python loop (unrolled) and ``braze.lax.scan`` (one loop
node, whatever the length)."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from braze import autodiff, lax, lazy, ops
from braze.backends.cpu.compiler import compile_library, find_compiler
from braze.backends.cpu.emit import emit_module, prelude, translation_units
from braze.backends.cpu.fusion import CPU_FUSION
from braze.ir.graph import Graph
from braze.passes import pipeline
from braze.passes.buffers import assign
from braze.runtime import collector
from braze.tensor import Tensor

WIDTH = 64  # elements of the chain's, fan's and diamonds' vectors
LSTM_BATCH, LSTM_INPUTS, LSTM_UNITS = 4, 8, 16


def chain(x: Tensor, units: int) -> Tensor:
    """``units`` steps of multiply-add, a tanh every seventh: one long elementwise chain."""
    for k in range(units):
        x = ops.tanh(x * 0.999) if k % 7 == 0 else x * 0.999 + 0.001
    return x


def fan(x: Tensor, units: int) -> Tensor:
    """``units`` sums, each of a different function of ``x``: one input read by every kernel."""
    total = ops.sum(ops.tanh(x))
    for k in range(1, units):
        total = total + ops.sum(ops.tanh(x * (1 + k / units)))
    return total


def diamonds(x: Tensor, units: int) -> Tensor:
    """``units`` diamonds, each reading its predecessor twice and joining the two paths."""
    for _ in range(units):
        x = ops.tanh(x) + x * 0.5
    return x


def lstm_loss(x: Tensor, units: int, *weights: Tensor) -> Tensor:
    """An LSTM over ``units`` time steps of ``x`` (batch, time, features), written as a Python
    loop (so it unrolls), and the squared error of a linear read-out of its last state."""
    wx, wh, b, wo = weights
    n = LSTM_UNITS
    h = ops.zeros((LSTM_BATCH, n), device=x.device)
    c = ops.zeros((LSTM_BATCH, n), device=x.device)
    for t in range(units):
        z = ops.matmul(x[:, t, :], wx) + ops.matmul(h, wh) + b
        i, f, o = (ops.sigmoid(z[:, k * n : (k + 1) * n]) for k in (0, 1, 3))
        c = f * c + i * ops.tanh(z[:, 2 * n : 3 * n])
        h = o * ops.tanh(c)
    return ops.mean(ops.matmul(h, wo) ** 2)


def lstm_scan_loss(x: Tensor, units: int, *weights: Tensor) -> Tensor:
    """``lstm_loss`` with the time steps a ``braze.lax.scan``: the loop is one graph node."""
    wx, wh, b, wo = weights
    n = LSTM_UNITS

    def cell(carry: tuple[Tensor, Tensor], x_t: Tensor) -> tuple[tuple[Tensor, Tensor], None]:
        h, c = carry
        z = ops.matmul(x_t, wx) + ops.matmul(h, wh) + b
        i, f, o = (ops.sigmoid(z[:, k * n : (k + 1) * n]) for k in (0, 1, 3))
        c = f * c + i * ops.tanh(z[:, 2 * n : 3 * n])
        return (o * ops.tanh(c), c), None

    zeros = ops.zeros((LSTM_BATCH, n), device=x.device)
    (h, _), _ = lax.scan(cell, (zeros, zeros), ops.transpose(x, (1, 0, 2)))
    return ops.mean(ops.matmul(h, wo) ** 2)


@dataclass(frozen=True)
class Program:
    name: str
    trace: Callable[[int], Graph]  # the graph of ``units`` units of the program


def _vector() -> Tensor:
    return ops.tensor(np.linspace(-1, 1, WIDTH, dtype=np.float32))


def _elementwise(fn: Callable[[Tensor, int], Tensor]) -> Callable[[int], Graph]:
    return lambda units: lazy.trace(lambda x: fn(x, units), _vector())


def _lstm_step(units: int, loss: Callable[..., Tensor] = lstm_loss) -> Graph:
    rng = np.random.default_rng(0)
    shapes = [(LSTM_INPUTS, 4 * LSTM_UNITS), (LSTM_UNITS, 4 * LSTM_UNITS), (4 * LSTM_UNITS,), (LSTM_UNITS, 1)]
    weights = [ops.tensor(0.1 * rng.standard_normal(s).astype(np.float32)) for s in shapes]
    x = ops.tensor(rng.standard_normal((LSTM_BATCH, units, LSTM_INPUTS)).astype(np.float32))
    step = autodiff.value_and_grad(lambda *w: loss(x.to(w[0].device), units, *w), argnums=(0, 1, 2, 3))

    def values(*w: Tensor) -> tuple[Tensor, ...]:
        value, grads = step(*w)
        return (value, *grads)

    return lazy.trace(values, *weights)


PROGRAMS = {
    p.name: p
    for p in (
        Program("chain", _elementwise(chain)),
        Program("fan", _elementwise(fan)),
        Program("diamonds", _elementwise(diamonds)),
        Program("lstm", _lstm_step),
    )
}
# An LSTM's training step by its number of time steps: unrolled, and as one scan.
SEQUENCES = {
    p.name: p for p in (Program("lstm", _lstm_step), Program("lstm-scan", lambda t: _lstm_step(t, lstm_scan_loss)))
}


def units_for(program: Program, nodes: int) -> int:
    """How many units make a graph of about ``nodes`` nodes (from the size of a small one)."""
    probe = 8
    per_unit = (len(program.trace(2 * probe).nodes()) - len(program.trace(probe).nodes())) / probe
    return max(1, round(nodes / per_unit))


@dataclass
class Measurement:
    program: str
    units: int
    nodes: int = 0
    kernels: int = 0
    phases: dict[str, float] = field(default_factory=dict)  # seconds per phase, in order

    @property
    def seconds(self) -> float:
        return sum(self.phases.values())

    def per_thousand_nodes(self) -> float:
        return 1000 * self.seconds / self.nodes


def measure(program: Program, units: int, native: bool = True) -> Measurement:
    """Compile ``units`` units of ``program`` for the CPU, timing each phase (the C compiler's
    only when ``native``; the autotuner, bounded whatever the size, is left out), with the
    garbage collector paused as ``braze.jit`` pauses it."""
    with collector.paused():
        return _measure(program, units, native)


def _measure(program: Program, units: int, native: bool) -> Measurement:
    result = Measurement(program.name, units)
    start = time.perf_counter()
    graph = program.trace(units)
    result.phases["trace"] = time.perf_counter() - start
    result.nodes = len(graph.nodes())
    compiler = find_compiler(None)
    alignment = compiler.target.alignment if compiler else pipeline.ALIGNMENT
    optimized, log = pipeline.run(graph, policy=CPU_FUSION, alignment=alignment)
    for name, seconds, _ in log.entries:
        result.phases[name] = result.phases.get(name, 0.0) + seconds
    result.kernels = sum(1 for n in optimized.nodes() if n.op.name == "fusion")
    if compiler is None:
        return result
    start = time.perf_counter()
    plan = emit_module(optimized, optimized.annotations.get("buffers") or assign(optimized, alignment), compiler.target)
    units_c = translation_units(prelude(compiler.target), [plan], compiler.target.cores)
    result.phases["emit"] = time.perf_counter() - start
    if native:
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="braze-bench-compile-") as folder:
            compile_library(compiler, units_c, Path(folder))
        result.phases["cc"] = time.perf_counter() - start
    return result
