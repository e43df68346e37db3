"""PyTorch's ``torch.save`` and ``torch.load`` for what a training script saves most: a
state dict (``braze.save(model.state_dict(), "model.pt")``, then
``model.load_state_dict(braze.load("model.pt"))``). braze writes no pickle and reads none,
so a file it loads runs no code: what it saves is a checkpoint of named arrays (the
safetensors format for a ``.safetensors`` name, else braze's ``.npz``, whatever the name's
suffix), and anything else is refused by name."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from braze.nn.checkpoint import read_checkpoint, write_checkpoint

__all__ = ["load", "save"]


def save(obj: Mapping[str, Any], f: str | os.PathLike) -> None:
    """Write ``obj``, names to tensors or arrays (a module's ``state_dict()``), to ``f``
    atomically. A model object or a nested state (an optimizer's ``state_dict()``) is a
    TypeError: PyTorch pickles those, and loading a pickle can run code."""
    if not isinstance(obj, Mapping):
        raise TypeError(
            f"braze.save writes a state dict (names to tensors or arrays), not a {type(obj).__name__}: save "
            "model.state_dict(), or the whole model with model.save('x.keras')"
        )
    arrays = {}
    for name, value in obj.items():
        if not isinstance(name, str) or isinstance(value, (Mapping, list, tuple, str)) or value is None:
            raise TypeError(
                f"braze.save: {name!r} holds a {type(value).__name__}; a state dict maps names to tensors or "
                "arrays, and a nested one (an optimizer's) is not saved without pickle (a model compiled with "
                "its optimizer saves whole, slots included, with model.save('x.keras'))"
            )
        arrays[name] = np.asarray(value)
    write_checkpoint(f, arrays)


def load(f: str | os.PathLike, map_location: Any = None, weights_only: bool = True) -> dict[str, np.ndarray]:
    """The state dict ``braze.save`` wrote to ``f`` (or any ``.npz`` or ``.safetensors``
    checkpoint), names to NumPy arrays, which ``load_state_dict`` puts on the model's
    device whatever ``map_location`` says. ``weights_only=False`` (unpickling arbitrary
    objects) is refused."""
    if weights_only is not True:
        raise ValueError("braze.load never unpickles (it could run code from the file): weights_only must be True")
    return read_checkpoint(f)
