"""The Module base: parameter and buffer discovery, train/eval mode, device moves and safe
checkpoints.

Parameters are the float tensors that require grad held as attributes (directly, or in
lists/tuples/dicts of tensors); sub-modules are found the same way. Buffers are state that
is not trained but belongs to the module, such as batch norm's moving statistics:
tensors given to ``register_buffer`` (PyTorch) or made by ``add_weight(trainable=False)``
(Keras). Names follow attribute paths ("conv1.kernel", "layers.0.bias"); a tensor or module
held twice is found once, under its first path. ``to()`` moves both kinds, and checkpoints
(``.npz`` or ``.safetensors``, see :mod:`braze.nn.checkpoint`) hold one array for each
under its name.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from braze.ir.dtypes import as_dtype
from braze.nn.checkpoint import HDF5_SUFFIXES, CheckpointError, read_checkpoint, saved_whole, write_checkpoint
from braze.nn.keras_methods import KerasMethods
from braze.nn.state import is_buffer, mark_buffer, set_value
from braze.ops import zeros_like
from braze.runtime.device import Device, as_device
from braze.tensor import Tensor, was_trainable

__all__ = ["CheckpointError", "IncompatibleKeys", "Module", "is_buffer", "mark_buffer", "read_checkpoint"]


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
        """(name, value) for every tensor or module held through public attributes, each once."""
        seen: set[int] = set()
        for name, value in vars(self).items():
            if name.startswith("_") or not isinstance(value, _HOLDERS):  # most attributes are settings
                continue
            for path, item in _walk(name, value):
                if id(item) not in seen:
                    seen.add(id(item))
                    yield path, item

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """(name, module) for this module ("", or ``prefix``) and every one inside it, each
        once, named by their attribute paths (``"blocks.0.attn"``), as PyTorch's."""
        seen: set[int] = set()
        for name, module, _, _ in self._module_items(_dotted(prefix)):
            if id(module) not in seen:
                seen.add(id(module))
                yield name.removesuffix("."), module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """(name, module) for the modules this one holds directly (in its attributes, and
        in lists and dicts there: ``"blocks.0"``), each once, as PyTorch's."""
        for name, value in self._items():
            if isinstance(value, Module):
                yield name, value

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def modules(self) -> Iterator[Module]:
        """This module and every module inside it, each once (PyTorch's ``modules``)."""
        for _, module in self.named_modules():
            yield module

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every module inside this one, then on this one (PyTorch's order:
        a weight-initializing function reaches each layer), and return this module."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Make every parameter (frozen ones too) require gradients or not, as PyTorch's:
        a frozen one is left out of ``parameters()`` but kept in the state that is saved."""
        for t in self._state().values():
            if not is_buffer(t):
                t.requires_grad_(requires_grad)
        return self

    def _module_items(
        self, prefix: str, trainable: bool = True
    ) -> Iterator[tuple[str, Module, list[tuple[str, Any]], bool]]:
        """(prefix, module, its items, whether it trains) for this module and every module
        inside it, a module met again included: each module's attributes are walked once
        per meeting, for its submodules and its tensors alike. A module trains unless it or
        one around it is a Keras layer set to ``trainable = False``."""
        items = list(self._items())
        trainable = trainable and getattr(self, "trainable", True) is not False
        yield prefix, self, items, trainable
        for name, value in items:
            if isinstance(value, Module):
                yield from value._module_items(f"{prefix}{name}.", trainable)

    def _named_tensors(self, prefix: str = "") -> Iterator[tuple[str, Tensor]]:
        """Every tensor of this module and the modules inside it, each once."""
        for name, value, _ in self._owned_tensors(prefix):
            yield name, value

    def _owned_tensors(self, prefix: str = "") -> Iterator[tuple[str, Tensor, bool]]:
        """Every tensor of this module and the modules inside it, each once, with whether
        the module that holds it (first) trains."""
        modules: set[int] = set()
        seen: set[int] = set()
        for module_prefix, module, items, trainable in self._module_items(prefix):
            if id(module) in modules:
                continue
            modules.add(id(module))
            for name, value in items:
                if isinstance(value, Tensor) and id(value) not in seen:
                    seen.add(id(value))
                    yield f"{module_prefix}{name}", value, trainable

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Tensor]]:
        """The tensors that require grad, but those of a Keras layer set to ``trainable =
        False`` (Keras's ``trainable_weights``): what an optimizer made from the module trains."""
        for name, value, trainable in self._owned_tensors(_dotted(prefix)):
            if value.requires_grad and trainable:
                yield name, value

    def named_buffers(self, prefix: str = "") -> Iterator[tuple[str, Tensor]]:
        for name, value in self._named_tensors(_dotted(prefix)):
            if not value.requires_grad and is_buffer(value):
                yield name, value

    def parameters(self) -> list[Tensor]:
        return [p for _, p in self.named_parameters()]

    def buffers(self) -> list[Tensor]:
        return [b for _, b in self.named_buffers()]

    def register_buffer(self, name: str, tensor: Tensor) -> None:
        """Hold ``tensor`` as the attribute ``name``: state that is moved, saved and loaded
        with the parameters but never trained (PyTorch's ``register_buffer``)."""
        if not isinstance(tensor, Tensor) or tensor.requires_grad:
            raise TypeError(f"register_buffer({name!r}): a buffer is a tensor that does not require grad")
        setattr(self, name, mark_buffer(tensor))

    def _state(self) -> dict[str, Tensor]:
        """Parameters (frozen ones too) and buffers by name: what checkpoints hold."""
        return {name: t for name, t in self._named_tensors() if t.requires_grad or is_buffer(t) or was_trainable(t)}

    def num_parameters(self) -> int:
        return sum(p.size for p in self.parameters())

    # Modes and devices ---------------------------------------------------------------

    def train(self, mode: bool = True) -> Module:
        for _, module in self.named_modules():
            module.training = mode
        return self

    def eval(self) -> Module:
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop every parameter's gradient (``set_to_none=False``: make each a zero tensor),
        as PyTorch's: a parameter frozen since its last backward too, whose gradient an
        optimizer made before the freeze would otherwise apply again."""
        for t in self._state().values():
            if t.grad is not None:
                t.grad = None if set_to_none else zeros_like(t.grad)

    def to(self, device: Device | str | None = None, dtype: Any = None) -> Module:
        """Move every parameter and buffer to ``device`` in place (X10's ``model.move(to:)``),
        and/or convert every floating-point one to the float ``dtype`` in place (PyTorch's
        ``module.to(dtype=torch.float64)``; ``braze.float64`` trains in double precision)."""
        state = self._state().values()
        if dtype is not None:
            target_dtype = as_dtype(dtype, "Module.to")
            if not target_dtype.is_float:
                raise TypeError(f"Module.to: parameters must stay floats, not {target_dtype.name}")
            for t in state:
                if t.dtype.is_float:
                    values = t.numpy()
                    t._aval = t._aval._replace(dtype=target_dtype)
                    set_value(t, values)
                    t.grad = None
        if device is not None:
            target = as_device(device)
            for t in state:
                t.move_(target)
        return self

    @property
    def device(self) -> Device | None:
        params = self.parameters()
        return params[0].device if params else None

    # Checkpoints --------------------------------------------------------------------

    def state_dict(self) -> dict[str, np.ndarray]:
        return {name: np.array(t.numpy()) for name, t in self._state().items()}

    def load_state_dict(self, state: dict[str, np.ndarray], strict: bool = True) -> IncompatibleKeys:
        """Copy values into the parameters and buffers. With ``strict`` (the default) the
        names must match exactly; otherwise the names found in both are loaded and the
        others are returned, as PyTorch does. Shapes must match either way, and nothing is
        loaded unless everything fits."""
        params = self._state()
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
            if (value.dtype.kind == "f") != params[name].dtype.is_float:  # an integer array is a count
                raise CheckpointError(
                    f"checkpoint does not fit {type(self).__name__}: {name} is {value.dtype} in the checkpoint "
                    f"but {params[name].dtype.name} in the model"
                )
        for name, value in loaded.items():
            set_value(params[name], value)
        return IncompatibleKeys(missing, unexpected)

    def save(self, path: str | os.PathLike, overwrite: bool = True) -> None:
        """Write the model to ``path`` atomically: the whole model (architecture, weights,
        compile settings) for a ``.keras`` name, as Keras's ``model.save``; else the weights
        and buffers, a ``.safetensors`` file when the name ends so (readable by the
        safetensors library, for NumPy and PyTorch), or ``.npz``; another name is an error
        (Keras's too), not a file ``load_model`` cannot read."""
        if saved_whole(path):
            from braze.nn.saving import save_model

            save_model(self, path, overwrite)
            return
        self.save_weights(path, overwrite)

    def save_weights(self, path: str | os.PathLike, overwrite: bool = True) -> None:
        """Write the weights and buffers to a checkpoint: ``.safetensors`` for that name,
        ``.npz`` for that name and under a Keras ``.weights.h5`` one (with a warning: braze
        writes no HDF5, and reads its own file back by its content); another name is a
        ValueError before anything is written."""
        if saved_whole(path) and Path(path).suffix == ".keras":
            raise CheckpointError(f"{path}: a .keras file holds a whole model: use model.save({str(path)!r})")
        warn_if_hdf5(path, "an .npz checkpoint")
        if not overwrite and os.path.exists(path):
            raise FileExistsError(f"{path} exists and overwrite=False")
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

    def load_weights(
        self, path: str | os.PathLike, strict: bool = True, *, skip_mismatch: bool = False
    ) -> IncompatibleKeys:
        """Keras's name of :meth:`load`; ``skip_mismatch`` loads what fits and skips, with a
        warning, the weights whose name or shape the model does not have (Keras's)."""
        if not skip_mismatch:
            return self.load(path, strict)
        params = self._state()
        state = read_checkpoint(path)
        fits = {k: v for k, v in state.items() if k in params and tuple(np.shape(v)) == params[k].shape}
        skipped = sorted(set(state) - set(fits)) + sorted(set(params) - set(state))
        if skipped:
            warnings.warn(f"{path}: skipped the weights that do not fit: {skipped}", stacklevel=2)
        return self.load_state_dict(fits, strict=False)


def warn_if_hdf5(path: str | os.PathLike, what: str) -> None:
    if Path(path).suffix in HDF5_SUFFIXES:
        warnings.warn(
            f"{path}: braze writes {what} under this name, not HDF5: braze reads it back (by its content), h5py cannot",
            stacklevel=3,
        )


class IncompatibleKeys(NamedTuple):
    """What ``load_state_dict(strict=False)`` did not load: the model's names the state
    lacks, and the state's names the model lacks (PyTorch's ``_IncompatibleKeys``)."""

    missing_keys: list[str]
    unexpected_keys: list[str]

    def assert_consumed(self) -> None:
        """Raise unless every weight was loaded and every saved one used (tf.keras's
        ``load_weights(...).assert_consumed()``)."""
        if self.missing_keys or self.unexpected_keys:
            raise AssertionError(f"not loaded: {self.missing_keys}; saved but unused: {self.unexpected_keys}")


_HOLDERS = (Module, Tensor, list, tuple, dict)  # what may hold a tensor or module (see _walk)


def _dotted(prefix: str) -> str:
    """A public ``prefix=`` (PyTorch's, without its dot) as the start of the names inside."""
    return f"{prefix}." if prefix else ""


def _walk(name: str, value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, (Module, Tensor)):
        yield name, value
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _walk(f"{name}.{i}", item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(f"{name}.{key}", item)
