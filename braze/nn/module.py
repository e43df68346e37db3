"""The Module base: parameter discovery, train/eval mode, device moves and safe checkpoints.

Parameters are the float tensors that require grad held as attributes (directly, or in
lists/tuples/dicts of tensors); sub-modules are found the same way. Their names follow
attribute paths ("conv1.kernel", "layers.0.bias"). Checkpoints (``.npz`` or
``.safetensors``, see :mod:`braze.nn.checkpoint`) hold one array per parameter under its name.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np

from braze.ir.dtypes import as_dtype
from braze.nn.checkpoint import CheckpointError, read_checkpoint, write_checkpoint
from braze.nn.keras_methods import KerasMethods
from braze.runtime.device import Device, as_device
from braze.tensor import Tensor

__all__ = ["CheckpointError", "IncompatibleKeys", "Module", "read_checkpoint"]


class Module(KerasMethods):
    """Base class of layers and models: call it to run ``forward``; Keras's ``compile``,
    ``fit``, ``evaluate``, ``predict`` and ``summary`` come from :class:`KerasMethods`."""

    training: bool = True

    def __new__(cls, *args: Any, **kwargs: Any) -> Module:
        module = super().__new__(cls)
        # An attribute of each module from the start, not only once train() or eval() set
        # it: braze.jit guards what the module holds, so a mode is always the same entry.
        module.training = True
        return module

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # Discovery -------------------------------------------------------------------

    def _items(self) -> Iterator[tuple[str, Any]]:
        """(name, value) for every tensor or module reachable through attributes."""
        for name, value in vars(self).items():
            if name.startswith("_"):
                continue
            yield from _walk(name, value)

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        yield prefix, self
        for name, value in self._items():
            if isinstance(value, Module):
                yield from value.named_modules(f"{prefix}{name}.")

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Tensor]]:
        """Every parameter once, under the first name it is reached by: a parameter that two
        layers share (tied weights) is updated, moved and saved once, as in PyTorch."""
        seen: set[int] = set()
        for name, value in self._parameter_paths(prefix):
            if id(value) not in seen:
                seen.add(id(value))
                yield name, value

    def _parameter_paths(self, prefix: str) -> Iterator[tuple[str, Tensor]]:
        for name, value in self._items():
            if isinstance(value, Module):
                yield from value._parameter_paths(f"{prefix}{name}.")
            elif isinstance(value, Tensor) and value.requires_grad:
                yield f"{prefix}{name}", value

    def parameters(self) -> list[Tensor]:
        return [p for _, p in self.named_parameters()]

    def num_parameters(self) -> int:
        return sum(p.size for p in self.parameters())

    # Modes and devices ---------------------------------------------------------------

    def train(self, mode: bool = True) -> Module:
        for _, module in self.named_modules():
            module.training = mode
        return self

    def eval(self) -> Module:
        return self.train(False)

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = None

    def to(self, device: Device | str | None = None, dtype: Any = None) -> Module:
        """Move every parameter to ``device`` in place (X10's ``model.move(to:)``), and/or
        convert every parameter to the float ``dtype`` in place (PyTorch's
        ``module.to(dtype=torch.float64)``; ``braze.float64`` trains in double precision)."""
        if dtype is not None:
            target_dtype = as_dtype(dtype, "Module.to")
            if not target_dtype.is_float:
                raise TypeError(f"Module.to: parameters must stay floats, not {target_dtype.name}")
            for p in self.parameters():
                values = p.numpy()
                p._aval = p._aval._replace(dtype=target_dtype)
                p._load(values)
                p.grad = None
        if device is not None:
            target = as_device(device)
            for p in self.parameters():
                p.move_(target)
        return self

    @property
    def device(self) -> Device | None:
        params = self.parameters()
        return params[0].device if params else None

    # Checkpoints --------------------------------------------------------------------

    def state_dict(self) -> dict[str, np.ndarray]:
        return {name: np.array(p.numpy()) for name, p in self.named_parameters()}

    def load_state_dict(self, state: dict[str, np.ndarray], strict: bool = True) -> IncompatibleKeys:
        """Copy values into the parameters. With ``strict`` (the default) the names must
        match exactly; otherwise the names found in both are loaded and the others are
        returned, as PyTorch does. Shapes must match either way, and nothing is loaded
        unless everything fits."""
        params = dict(self.named_parameters())
        missing = sorted(set(params) - set(state))
        unexpected = sorted(set(state) - set(params))
        if strict and (missing or unexpected):
            raise CheckpointError(
                f"checkpoint does not fit {type(self).__name__}: missing {missing}, unexpected {unexpected}"
            )
        loaded = {name: np.asarray(state[name]) for name in params if name in state}
        for name, value in loaded.items():
            if value.shape != params[name].shape:
                raise CheckpointError(
                    f"checkpoint does not fit {type(self).__name__}: {name} has shape {value.shape} in the "
                    f"checkpoint but {params[name].shape} in the model"
                )
        for name, value in loaded.items():
            params[name]._load(value)
        return IncompatibleKeys(missing, unexpected)

    def save(self, path: str | os.PathLike) -> None:
        """Write the parameters to ``path`` atomically: a ``.safetensors`` file when the name
        ends so (readable by the safetensors library, for NumPy and PyTorch), else ``.npz``."""
        write_checkpoint(path, self.state_dict())

    def load(self, path: str | os.PathLike, strict: bool = True) -> IncompatibleKeys:
        """Read the parameters saved by :meth:`save` (either format, told by the file's first
        bytes); a :class:`CheckpointError` names the file and says what is wrong (missing,
        truncated, not a checkpoint, a missing, extra or wrongly shaped parameter)."""
        state = read_checkpoint(path)
        try:
            return self.load_state_dict(state, strict)
        except CheckpointError as error:
            raise CheckpointError(f"{path}: {error}") from None


class IncompatibleKeys(NamedTuple):
    """What ``load_state_dict(strict=False)`` did not load: the model's names the state
    lacks, and the state's names the model lacks (PyTorch's ``_IncompatibleKeys``)."""

    missing_keys: list[str]
    unexpected_keys: list[str]


def _walk(name: str, value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, (Module, Tensor)):
        yield name, value
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _walk(f"{name}.{i}", item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(f"{name}.{key}", item)
