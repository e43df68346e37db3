"""Parameter groups: parameters that share hyperparameters, as PyTorch's ``param_groups``.

A group is read and set as a dict (``group["lr"] = 1e-4``, ``group["params"]``), as
PyTorch's are, and holds its hyperparameters as attributes, so ``braze.jit`` finds them:
each optimizer class has its own group class whose ``jit_inputs`` are the optimizer's, and
a learning rate set on a group between compiled steps is an input of the next step, never a
recompile.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

from braze.tensor import Tensor


class ParamGroup(MutableMapping):
    """One group: ``params`` (tensors that require grad) and a value for each of its
    optimizer's hyperparameters (and ``initial_lr`` once a learning-rate scheduler set it)."""

    jit_inputs: tuple[str, ...] = ()  # the optimizer's; set on each optimizer's own group class

    def __init__(self, params: list[Tensor], hyperparameters: dict[str, Any]) -> None:
        self.params = params
        self._names = list(hyperparameters)
        for name, value in hyperparameters.items():
            setattr(self, name, value)

    def __getitem__(self, key: str) -> Any:
        if key != "params" and key not in self._names:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        if key == "params":
            raise KeyError("a group's params are fixed: make another group with optimizer.add_param_group()")
        if key not in self._names:
            self._names.append(key)
        setattr(self, key, value)

    def __delitem__(self, key: str) -> None:
        raise TypeError(f"a parameter group's {key!r} cannot be removed, only set")

    def __iter__(self) -> Iterator[str]:
        return iter(["params", *self._names])

    def __len__(self) -> int:
        return 1 + len(self._names)

    def __repr__(self) -> str:
        values = ", ".join(f"{name!r}: {getattr(self, name)!r}" for name in self._names)
        return f"{{'params': [{len(self.params)} tensors], {values}}}"


def group_class(optimizer_class: type) -> type[ParamGroup]:
    """The group class of an optimizer class: its ``jit_inputs`` are the optimizer's."""
    return type(
        "ParamGroup",
        (ParamGroup,),
        {
            "jit_inputs": tuple(optimizer_class.jit_inputs),
            "__module__": optimizer_class.__module__,
            "__qualname__": f"{optimizer_class.__qualname__}.ParamGroup",
        },
    )


def requested_groups(params: Any, optimizer: str) -> list[tuple[list[Tensor], dict[str, Any]]]:
    """(parameters, hyperparameters given) of each group that ``params`` asks for: a Module
    or an iterable of tensors is one group; an iterable of dicts (``{"params": [...],
    "weight_decay": 0.0}``) is a group each."""
    if hasattr(params, "parameters"):
        return [(_tensors(params.parameters(), optimizer), {})]
    if isinstance(params, (Tensor, dict)):
        raise TypeError(f"{optimizer}: params must be a model, an iterable of tensors or of parameter groups (dicts)")
    items = list(params)
    if items and all(isinstance(item, dict) for item in items):
        groups = []
        for item in items:
            if "params" not in item:
                raise ValueError(f"{optimizer}: a parameter group needs 'params', got keys {sorted(item)}")
            given = item["params"]
            if isinstance(given, Tensor):
                given = [given]
            if isinstance(given, (set, frozenset)):  # PyTorch's refusal: slots are saved by position
                raise TypeError(
                    f"{optimizer}: a parameter group's params must be ordered (a list), not a set, "
                    "whose order changes between runs"
                )
            found = given.parameters() if hasattr(given, "parameters") else given
            groups.append((_tensors(found, optimizer), {k: v for k, v in item.items() if k != "params"}))
        return groups
    if any(isinstance(item, dict) for item in items):
        raise TypeError(f"{optimizer}: give either tensors or parameter groups (dicts), not both")
    return [(_tensors(items, optimizer), {})]


def _tensors(found: Any, optimizer: str) -> list[Tensor]:
    tensors = list(found)
    for p in tensors:
        if not isinstance(p, Tensor) or not p.requires_grad:
            raise TypeError(f"{optimizer}: parameters must be tensors that require grad")
    return tensors
