"""Nested lists, tuples and dicts of tensors (JAX's pytrees): the arguments and results that
braze's function transformations (``grad``, ``vjp``, ``jvp``, the Jacobians) take apart
into their tensors and build again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from braze.tensor import Tensor

Rebuild = Callable[[list], Any]


def flatten(tree: Any, what: str = "grad", none_is_empty: bool = False) -> tuple[list[Tensor], Rebuild]:
    """The tensors of a nested list/tuple/dict, and a function rebuilding it from new leaves;
    with ``none_is_empty`` a None anywhere is a subtree without tensors, as in JAX's pytrees."""
    if isinstance(tree, Tensor):
        return [tree], lambda leaves: leaves[0]
    if tree is None and none_is_empty:
        return [], lambda leaves: None
    if isinstance(tree, (list, tuple)):
        parts = [flatten(item, what, none_is_empty) for item in tree]
        return _join(parts, sequence_builder(tree))
    if isinstance(tree, dict):
        keys = dict_keys(tree)
        parts = [flatten(tree[k], what, none_is_empty) for k in keys]
        return _join(parts, lambda items: dict(zip(keys, items, strict=True)))
    raise TypeError(f"{what}: expected tensors or nested lists/tuples/dicts of tensors, got {type(tree).__name__}")


def dict_keys(tree: dict) -> list:
    """A dict's keys in the order its leaves are taken: sorted, as JAX sorts them, so that
    two dicts of the same keys give their leaves alike whatever order they were built in
    (keys that do not sort keep their order)."""
    try:
        return sorted(tree)
    except TypeError:
        return list(tree)


def sequence_builder(tree: list | tuple) -> Callable[[list], Any]:
    """Builds a list or tuple of ``tree``'s type from items: a namedtuple (JAX's pytrees
    keep them) from its fields, another tuple subclass as a plain tuple."""
    if isinstance(tree, list):
        return list
    if hasattr(type(tree), "_fields"):
        return lambda items: type(tree)(*items)
    return tuple


def _join(parts: list[tuple[list[Tensor], Rebuild]], build: Callable[[list], Any]) -> tuple[list[Tensor], Rebuild]:
    leaves = [leaf for part_leaves, _ in parts for leaf in part_leaves]
    sizes = [len(part_leaves) for part_leaves, _ in parts]

    def unflatten(new_leaves: list) -> Any:
        items, offset = [], 0
        for (_, rebuild), size in zip(parts, sizes, strict=True):
            items.append(rebuild(new_leaves[offset : offset + size]))
            offset += size
        return build(items)

    return leaves, unflatten
