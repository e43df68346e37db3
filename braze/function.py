"""``tf.function``: compile a Python function with ``braze.jit``, including the state it
reaches through its closure and globals, as TensorFlow traces a function over the
variables it captures.

A TensorFlow training step is usually written over objects it does not take as arguments
(``model``, ``optimizer``, a metric, defined beside it). ``braze.jit`` treats what it is
not given as constant, so ``function`` finds every object the function names that holds
tensors (in its closure, its globals, and the code of functions nested in it) and passes
them to the compiled function as inputs: their tensors are read on every call and what
the step assigns to them (parameters, optimizer slots, metric state) is written back.
NumPy arrays given as arguments become tensors first, so a new batch is a new input, not a
constant of the first trace. Other Python values (numbers, strings) are frozen when traced,
as in TensorFlow.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from braze import config
from braze.jit import _tensors, jit
from braze.ops import as_tensor


def _names(code: types.CodeType) -> Iterator[str]:
    """Global names that ``code`` and the functions defined inside it read."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names(const)


def captured_state(fn: Callable) -> dict[str, Any]:
    """The objects holding tensors that ``fn`` reaches by name: closure cells and globals."""
    found: dict[str, Any] = {}
    code = getattr(fn, "__code__", None)
    if code is None:
        return found
    for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=True):
        try:
            found[name] = cell.cell_contents
        except ValueError:  # a cell not filled yet
            continue
    namespace = getattr(fn, "__globals__", {})
    for name in dict.fromkeys(_names(code)):
        if name in namespace and name not in found:
            found[name] = namespace[name]
    return {name: value for name, value in found.items() if _holds_tensors(value)}


def _holds_tensors(value: Any) -> bool:
    if isinstance(value, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)):
        return False
    return bool(_tensors((value,), {}))


def _as_tensors(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return as_tensor(value.astype(np.float32) if value.dtype == np.float64 else value)
    if isinstance(value, (list, tuple)):
        return type(value)(_as_tensors(v) for v in value)
    if isinstance(value, dict):
        return {k: _as_tensors(v) for k, v in value.items()}
    return value


class Function:
    """A function compiled on first call per signature, its captured state as inputs."""

    def __init__(self, fn: Callable) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self._compiled = jit(lambda state, *args, **kwargs: fn(*args, **kwargs))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if config.functions_run_eagerly():
            return self.fn(*args, **kwargs)
        return self._compiled(captured_state(self.fn), *_as_tensors(args), **_as_tensors(kwargs))

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        return functools.partial(self.__call__, instance)

    @property
    def compiles(self) -> int:
        return self._compiled.compiles


def function(
    func: Callable | None = None,
    input_signature: Any = None,
    autograph: bool = True,
    jit_compile: bool | None = None,
    reduce_retracing: bool = False,
    experimental_relax_shapes: bool | None = None,
) -> Any:
    """``tf.function``: ``func`` compiled by braze's compiler on its first call for each
    signature (``jit_compile`` or not: braze always compiles). ``input_signature`` and
    the retracing options only steer when TensorFlow traces again; braze traces once per
    signature of shapes and dtypes, as with them."""
    if func is None:
        return lambda f: Function(f)
    return Function(func)


__all__ = ["Function", "captured_state", "function"]
