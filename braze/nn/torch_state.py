"""A PyTorch ``state_dict`` for a braze model and back. braze's layers that PyTorch's CNNs
and transformers are made of (``Conv2d``, ``BatchNorm2d``, ``Embedding``, ``LayerNorm``...)
hold their tensors under PyTorch's names and layouts already; ``Linear`` (Keras's ``Dense``)
holds a ``kernel`` of shape (in, out) where PyTorch's holds a ``weight`` of shape (out, in).
These two functions rename and transpose those, and pass every other tensor through."""

from __future__ import annotations

from typing import Any

import numpy as np

from braze.nn.layers import Dense
from braze.nn.module import Module


def _dense_prefixes(model: Module) -> set[str]:
    """The names of ``model``'s Dense/Linear layers (``"fc1"``, ``"blocks.0.mlp.c_fc"``)."""
    return {name for name, module in model.named_modules() if isinstance(module, Dense)}


def _split(name: str) -> tuple[str, str]:
    prefix, _, leaf = name.rpartition(".")
    return prefix, leaf


def from_torch_state_dict(model: Module, state: dict[str, Any]) -> dict[str, np.ndarray]:
    """``state`` (a PyTorch ``state_dict`` of the same architecture, as NumPy arrays or
    anything NumPy reads) as ``model``'s ``load_state_dict`` takes it: each Linear's
    ``weight`` (out, in) becomes its ``kernel`` (in, out); every other array is kept."""
    dense = _dense_prefixes(model)
    found = {}
    for name, value in state.items():
        prefix, leaf = _split(name)
        array = np.asarray(value)
        if prefix in dense and leaf == "weight" and array.ndim == 2:
            found[f"{prefix}.kernel"] = np.ascontiguousarray(array.T)
        else:
            found[name] = array
    return found


def to_torch_state_dict(model: Module) -> dict[str, np.ndarray]:
    """``model``'s ``state_dict`` under PyTorch's names and layouts: each Linear's
    ``kernel`` (in, out) as its ``weight`` (out, in)."""
    dense = _dense_prefixes(model)
    found = {}
    for name, array in model.state_dict().items():
        prefix, leaf = _split(name)
        if prefix in dense and leaf == "kernel":
            found[f"{prefix}.weight"] = np.ascontiguousarray(array.T)
        else:
            found[name] = array
    return found
