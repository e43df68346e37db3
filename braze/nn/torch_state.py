"""A PyTorch ``state_dict`` for a braze model and back. braze's layers that PyTorch's CNNs
and transformers are made of (``Conv2d``, ``BatchNorm2d``, ``Embedding``, ``LayerNorm``...)
hold their tensors under PyTorch's names and layouts already; ``Linear`` (Keras's ``Dense``)
holds a ``kernel`` of shape (in, out) where PyTorch's holds a ``weight`` of shape (out, in),
and ``Sequential`` (Keras's) holds its layers as ``layers.0``, ``layers.1``... where
PyTorch's are ``0``, ``1``... These two functions rename and transpose those, and pass every
other tensor through."""

from __future__ import annotations

from typing import Any

import numpy as np

from braze.nn.layers import Dense
from braze.nn.model import Sequential
from braze.nn.module import Module


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix and name else prefix or name


def _torch_prefixes(module: Module, prefix: str = "", torch_prefix: str = "") -> dict[str, str]:
    """PyTorch's name of ``module`` and of every module inside it, by braze's name (the
    model itself is ``""`` in both): a Sequential's ``layers.i`` is PyTorch's ``i``."""
    found = {prefix: torch_prefix}
    for name, child in module.named_children():
        torch_name = name.removeprefix("layers.") if isinstance(module, Sequential) else name
        found.update(_torch_prefixes(child, _join(prefix, name), _join(torch_prefix, torch_name)))
    return found


def _renamed(name: str, prefixes: dict[str, str]) -> tuple[str, str, str]:
    """(the module's name, its name in ``prefixes``, the rest of ``name``) for the longest
    module name in ``prefixes`` that ``name`` starts with: the model's, ``""``, at least."""
    parts = name.split(".")
    k = next(k for k in range(len(parts) - 1, -1, -1) if ".".join(parts[:k]) in prefixes)
    module = ".".join(parts[:k])
    return module, prefixes[module], ".".join(parts[k:])


def _dense(model: Module) -> set[str]:
    """The names of ``model``'s Dense/Linear layers (``"fc1"``, ``"blocks.0.mlp.c_fc"``)."""
    return {name for name, module in model.named_modules() if isinstance(module, Dense)}


def from_torch_state_dict(model: Module, state: dict[str, Any]) -> dict[str, np.ndarray]:
    """``state`` (a PyTorch ``state_dict`` of the same architecture, as NumPy arrays or
    anything NumPy reads) as ``model``'s ``load_state_dict`` takes it: each Linear's
    ``weight`` (out, in) becomes its ``kernel`` (in, out), a Sequential's ``i.`` its
    ``layers.i.``; every other array is kept."""
    prefixes = _torch_prefixes(model)
    # PyTorch's names first; a name already braze's (``layers.0.weight``) is taken as it is.
    braze_prefixes = {braze: braze for braze in prefixes} | {torch: braze for braze, torch in prefixes.items()}
    dense = _dense(model)
    found = {}
    for name, value in state.items():
        _, prefix, leaf = _renamed(name, braze_prefixes)
        array = np.asarray(value)
        if prefix in dense and leaf == "weight" and array.ndim == 2:
            found[_join(prefix, "kernel")] = np.ascontiguousarray(array.T)
        else:
            found[_join(prefix, leaf)] = array
    return found


def to_torch_state_dict(model: Module) -> dict[str, np.ndarray]:
    """``model``'s ``state_dict`` under PyTorch's names and layouts: each Linear's
    ``kernel`` (in, out) as its ``weight`` (out, in), a Sequential's ``layers.i.`` as ``i.``."""
    torch_prefixes = _torch_prefixes(model)
    dense = _dense(model)
    found = {}
    for name, array in model.state_dict().items():
        prefix, torch_prefix, leaf = _renamed(name, torch_prefixes)
        if prefix in dense and leaf == "kernel":
            found[_join(torch_prefix, "weight")] = np.ascontiguousarray(array.T)
        else:
            found[_join(torch_prefix, leaf)] = array
    return found
