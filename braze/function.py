"""``tf.function``: a Python function compiled with ``braze.jit``, as TensorFlow compiles a
function over the variables it captures.

A TensorFlow training step is usually written over objects it does not take as arguments
(``model``, ``optimizer``, a metric, defined beside it); ``braze.jit`` reads what a
function reaches through its closure and globals afresh on every call, so their weights,
slots and metric state are the step's inputs and what it assigns to them is written back.
NumPy arrays given as arguments become tensors first, so that a new batch is a new input
rather than a new trace. ``tf.config.run_functions_eagerly(True)`` runs the Python instead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from braze import config
from braze.jit import jit
from braze.ops import as_tensor


def _as_tensors(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return as_tensor(value.astype(np.float32) if value.dtype == np.float64 else value)
    if isinstance(value, (list, tuple)):
        return type(value)(_as_tensors(v) for v in value)
    if isinstance(value, dict):
        return {k: _as_tensors(v) for k, v in value.items()}
    return value


class Function:
    """A function compiled on its first call for each signature of its inputs and guards."""

    def __init__(self, fn: Callable) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self._compiled = jit(fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if config.functions_run_eagerly():
            return self.fn(*args, **kwargs)
        return self._compiled(*_as_tensors(args), **_as_tensors(kwargs))

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        return functools.partial(self.__call__, instance)

    @property
    def compiles(self) -> int:
        """How many times the function was traced and compiled."""
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
    signature (``jit_compile`` or not: braze always compiles). ``input_signature`` and the
    retracing options only steer when TensorFlow traces again; braze traces once per
    signature of shapes, dtypes and guarded values."""
    if func is None:
        return lambda f: Function(f)
    return Function(func)


__all__ = ["Function", "function"]
