"""Nested structures of values (tuples, lists, dicts), as Keras's inputs and outputs come:
a model with two inputs takes ``[a, b]`` or ``{"a": a, "b": b}`` and returns the same kinds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def leaves(structure: Any) -> list[Any]:
    """The non-container values of ``structure``, depth first, dicts in key order."""
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in leaves(item)]
    if isinstance(structure, dict):
        return [leaf for item in structure.values() for leaf in leaves(item)]
    return [structure]


def map_leaves(fn: Callable[[Any], Any], structure: Any) -> Any:
    """``structure`` with every leaf replaced by ``fn(leaf)``."""
    if isinstance(structure, tuple) and hasattr(structure, "_fields"):  # a namedtuple
        return type(structure)(*(map_leaves(fn, item) for item in structure))
    if isinstance(structure, (list, tuple)):
        return type(structure)(map_leaves(fn, item) for item in structure)
    if isinstance(structure, dict):
        return {key: map_leaves(fn, item) for key, item in structure.items()}
    return fn(structure)


def unflatten(structure: Any, values: list[Any]) -> Any:
    """``structure`` with its leaves replaced, in order, by ``values``."""
    remaining = iter(values)
    return map_leaves(lambda _: next(remaining), structure)
