"""Random programs over braze's public ops, as data that prints as Python.

A ``Program`` is a list of steps; each step is a Python expression over earlier values
(``t0``, ``t1``, ...), so the program the fuzzer runs and the script a failure is written
to are the same text. The loss is a weighted sum of every float value (so every op gets a
gradient); a few values are also returned directly (inputs among them: outputs that alias
inputs). Its ``step`` function returns the loss, those values and the gradients, after
updating the inputs in place by a gradient step when the program has an ``update`` rate (as
an optimizer does to parameters), and then the updated inputs too. A program of ``order`` 2
differentiates instead the sum of the loss's gradients (a second derivative, what a
gradient penalty differentiates). Steps are drawn one at a time and run eagerly as they
are drawn, so a step whose shapes do not fit, or whose values leave a safe range, is
simply drawn again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

import braze as B
from braze.ir.errors import BrazeError

MAX_ELEMENTS = 4096
MAX_MAGNITUDE = 1e4  # larger values make float32 rounding, not the compiler, the story


@dataclass(frozen=True)
class Input:
    shape: tuple[int, ...]
    dtype: str  # "float32", "float64" or "int32"
    key: int = 0  # its data's stream: the program's seed and this key (kept when others go)


@dataclass(frozen=True)
class Step:
    template: str  # a Python expression; "{0}", "{1}" are its operands
    args: tuple[int, ...]  # which earlier values (inputs first, then steps) the operands are
    integer: bool = False  # whether its value is an int32 tensor


@dataclass(frozen=True)
class Program:
    seed: int  # the seed of the input data (and, for a drawn program, of its steps)
    inputs: tuple[Input, ...]
    steps: tuple[Step, ...]
    weights: tuple[float, ...]  # the loss's weight of each step's value (0: not in the loss)
    returned: tuple[int, ...]  # values returned besides the loss
    update: float = 0.0  # when set, ``step`` does t -= update * gradient on the differentiated inputs
    order: int = 1  # 2: ``step`` differentiates the sum of the loss's gradients

    @property
    def dtype(self) -> str:
        return self.inputs[0].dtype

    @property
    def differentiated(self) -> tuple[int, ...]:
        return tuple(i for i, x in enumerate(self.inputs) if x.dtype != "int32")

    def expression(self, k: int) -> str:
        step = self.steps[k]
        return step.template.format(*(f"t{a}" for a in step.args))

    def source(self) -> str:
        """``def program(t0, ...)`` returning ``(loss, (returned values...))``, and ``def
        step(t0, ...)`` returning the list of values the fuzzer compares (``output_names``)."""
        count = len(self.inputs)
        names = ", ".join(f"t{i}" for i in range(count))
        lines = [f"def program({names}):"]
        lines += [f"    t{count + k} = {self.expression(k)}" for k in range(len(self.steps))]
        terms = []
        for k, weight in enumerate(self.weights):
            if weight:
                value = f"t{count + k}"
                if self.steps[k].integer:
                    value = f"B.astype({value}, B.{self.dtype})"
                terms.append(f"({value} * {weight!r}).sum()")
        lines.append("    loss = " + (" + ".join(terms) if terms else "(t0 * 0.5).sum()"))
        returned = "".join(f"t{r}, " for r in self.returned)
        lines.append(f"    return loss, ({returned})")
        differentiated = "program"
        if self.order == 2:
            inner = f"B.grad(program, argnums={self.differentiated!r}, has_aux=True)"
            lines += ["", "", f"def gradient_sum({names}):", f"    grads, returned = {inner}({names})"]
            lines.append("    return sum([(g * 0.5).sum() for g in grads]), returned")
            differentiated = "gradient_sum"
        gradient = f"B.value_and_grad({differentiated}, argnums={self.differentiated!r}, has_aux=True)"
        lines += ["", "", f"def step({names}):", f"    (loss, returned), grads = {gradient}({names})"]
        updated = ""
        if self.update:
            lines.append("    with B.no_grad():")
            lines += [f"        t{i} -= grads[{k}] * {self.update!r}" for k, i in enumerate(self.differentiated)]
            updated = "".join(f", t{i}" for i in self.differentiated)
        lines.append(f"    return [loss, *returned, *grads{updated}]")
        return "\n".join(lines) + "\n"

    def output_names(self) -> list[str]:
        """What ``step`` returns, in order."""
        names = ["loss", *(f"t{r}" for r in self.returned), *(f"grad t{i}" for i in self.differentiated)]
        return names + ([f"updated t{i}" for i in self.differentiated] if self.update else [])

    def function(self) -> Callable:
        """The program's ``step`` function."""
        return step_function(self.source(), f"<fuzz program {self.seed}>")

    def arrays(self) -> list[np.ndarray]:
        return make_arrays(self.inputs, self.seed)

    def without_step(self, k: int, replacement: int) -> Program:
        """The program with step ``k`` gone and its readers reading value ``replacement`` instead."""
        count = len(self.inputs)
        removed = count + k

        def moved(a: int) -> int:
            a = replacement if a == removed else a
            return a - 1 if a > removed else a

        steps = tuple(replace(s, args=tuple(moved(a) for a in s.args)) for i, s in enumerate(self.steps) if i != k)
        weights = tuple(w for i, w in enumerate(self.weights) if i != k)
        returned = tuple(dict.fromkeys(moved(r) for r in self.returned))
        return Program(self.seed, self.inputs, steps, weights, returned, self.update, self.order)

    def without_input(self, i: int) -> Program:
        """The program without input ``i``, which nothing may read."""

        def moved(a: int) -> int:
            return a - 1 if a > i else a

        steps = tuple(replace(s, args=tuple(moved(a) for a in s.args)) for s in self.steps)
        inputs = self.inputs[:i] + self.inputs[i + 1 :]
        return replace(self, inputs=inputs, steps=steps, returned=tuple(moved(r) for r in self.returned))

    def readers(self, value: int) -> int:
        return sum(a == value for s in self.steps for a in s.args) + (value in self.returned)


def step_function(source: str, filename: str = "<fuzz program>") -> Callable:
    namespace: dict = {"B": B}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own text
    return namespace["step"]


def make_arrays(inputs: tuple[Input, ...], seed: int) -> list[np.ndarray]:
    arrays = []
    for x in inputs:
        rng = np.random.default_rng([seed, x.key])
        if x.dtype == "int32":
            arrays.append(rng.integers(-5, 6, x.shape).astype(np.int32))
        else:
            arrays.append(rng.standard_normal(x.shape).astype(x.dtype))
    return arrays


def valid(program: Program) -> list[B.Tensor] | None:
    """The program's values run eagerly, or None when a step fails or leaves the safe range."""
    values = [B.tensor(a) for a in program.arrays()]
    namespace: dict = {"B": B}
    for k in range(len(program.steps)):
        namespace.update({f"t{i}": v for i, v in enumerate(values)})
        value = run_step(program.expression(k), namespace)
        if value is None:
            return None
        values.append(value)
    return values


def run_step(expression: str, namespace: dict) -> B.Tensor | None:
    """``expression`` run eagerly, or None when it fails or its value is empty, too large
    or out of the safe range."""
    try:
        with np.errstate(all="ignore"):
            value = eval(expression, namespace)  # noqa: S307 - our own text
            array = value.numpy()
    except (BrazeError, ValueError, IndexError, TypeError, ZeroDivisionError):
        return None
    if array.size == 0 or array.size > MAX_ELEMENTS or array.ndim > 4:
        return None
    if array.dtype.kind == "f" and not np.all(np.abs(array) < MAX_MAGNITUDE):
        return None
    return value
