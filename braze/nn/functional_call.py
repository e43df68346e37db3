"""``functional_call``: a module run with other tensors in place of its parameters, as
``torch.func.functional_call``, so that its loss is a function of those tensors for
``braze.grad``, ``braze.jvp`` or ``braze.hvp``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from braze.nn.module import Module
from braze.tensor import Tensor


def _holder(module: Module, name: str) -> tuple[Any, Any]:
    """The object holding the parameter ``name`` ("layers.0.kernel") and its key there."""
    *path, last = name.split(".")
    holder: Any = module
    for part in path:
        if isinstance(holder, Module):
            holder = getattr(holder, part)
        else:
            holder = holder[int(part) if isinstance(holder, (list, tuple)) else part]
    if isinstance(holder, tuple):
        raise TypeError(f"functional_call: {name} is held in a tuple, which cannot take another tensor")
    return holder, int(last) if isinstance(holder, list) else last


def _swap(holder: Any, key: Any, value: Tensor) -> Tensor:
    if isinstance(holder, Module):
        previous = getattr(holder, key)
        setattr(holder, key, value)
    else:
        previous = holder[key]
        holder[key] = value
    return previous


def functional_call(
    module: Module, parameters: Mapping[str, Tensor], args: Any = (), kwargs: Mapping[str, Any] | None = None
) -> Any:
    """``module(*args, **kwargs)`` with each parameter named in ``parameters`` (the names of
    ``module.named_parameters()``) replaced by the tensor given for it during the call;
    the module's own tensors are back in place afterwards. Pass detached copies
    (``{n: p.detach() for n, p in module.named_parameters()}``) to differentiate with respect
    to them alone."""
    known = dict(module.named_parameters())
    unknown = sorted(set(parameters) - set(known))
    if unknown:
        raise KeyError(f"functional_call: {type(module).__name__} has no parameters {unknown}")
    for name, value in parameters.items():
        if not isinstance(value, Tensor) or value.shape != known[name].shape:
            got = value.shape if isinstance(value, Tensor) else type(value).__name__
            raise ValueError(f"functional_call: {name} needs a tensor of shape {known[name].shape}, got {got}")
    swapped: list[tuple[Any, Any, Tensor]] = []
    try:
        for name, value in parameters.items():
            holder, key = _holder(module, name)
            swapped.append((holder, key, _swap(holder, key, value)))
        call_args = args if isinstance(args, Sequence) and not isinstance(args, Tensor) else (args,)
        return module(*call_args, **(kwargs or {}))
    finally:
        for holder, key, previous in reversed(swapped):
            _swap(holder, key, previous)
