"""The Module base: parameter discovery, train/eval mode, device moves and safe checkpoints.

Parameters are the float tensors that require grad held as attributes (directly, or in
lists/tuples/dicts of tensors); sub-modules are found the same way. Their names follow
attribute paths ("conv1.kernel", "layers.0.bias"). Checkpoints are ``.npz`` archives of
plain arrays (never pickle), written to a temporary file and renamed over the target, so
an interrupted save leaves the previous checkpoint intact.
"""

from __future__ import annotations

import os
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from braze.ir.errors import BrazeError
from braze.runtime.device import Device, as_device
from braze.tensor import Tensor

# An .npz archive is a zip file: it starts with a local file header, or with the end
# record when it holds no arrays (a model without parameters).
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")


class CheckpointError(BrazeError, ValueError):
    """A checkpoint that does not fit the model, or a file that is not a braze checkpoint."""


class Module:
    """Base class of layers and models: call it to run ``forward``."""

    training: bool = True

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
        for name, value in self._items():
            if isinstance(value, Module):
                yield from value.named_parameters(f"{prefix}{name}.")
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

    def to(self, device: Device | str) -> Module:
        """Move every parameter to ``device`` in place (X10's ``model.move(to:)``)."""
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

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        """Copy values into the parameters; names and shapes must match exactly."""
        params = dict(self.named_parameters())
        missing = sorted(set(params) - set(state))
        unexpected = sorted(set(state) - set(params))
        if missing or unexpected:
            raise CheckpointError(
                f"checkpoint does not fit {type(self).__name__}: missing {missing}, unexpected {unexpected}"
            )
        for name, p in params.items():
            value = np.asarray(state[name])
            if value.shape != p.shape:
                raise CheckpointError(
                    f"checkpoint does not fit {type(self).__name__}: {name} has shape {value.shape} in the "
                    f"checkpoint but {p.shape} in the model"
                )
            _set_value(p, value.astype(p.dtype.numpy))

    def save(self, path: str | os.PathLike) -> None:
        """Write the parameters to ``path`` (.npz) atomically."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                np.savez(handle, **self.state_dict())
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, target)
        except BaseException:
            if os.path.exists(temp):
                os.unlink(temp)
            raise

    def load(self, path: str | os.PathLike) -> None:
        """Read the parameters saved by :meth:`save`; a :class:`CheckpointError` names the
        file and says what is wrong (missing, truncated, not a checkpoint, does not fit)."""
        state = read_checkpoint(path)
        try:
            self.load_state_dict(state)
        except CheckpointError as error:
            raise CheckpointError(f"{path}: {error}") from None

    # Keras-style training (see braze.nn.training) --------------------------------------

    def compile(self, loss: Any, optimizer: Any, metrics: Any = (), jit_compile: bool = False) -> Module:
        """Choose the loss, optimizer and metrics for ``fit``/``evaluate`` (Keras); with
        ``jit_compile`` each training step is one compiled function."""
        from braze.nn.training import Trainer

        self._trainer = Trainer(self, loss, optimizer, metrics, jit_compile)
        return self

    def fit(self, data: Any, epochs: int = 1, validation_data: Any = None, **kwargs: Any) -> Any:
        return self._compiled().fit(data, epochs=epochs, validation_data=validation_data, **kwargs)

    def evaluate(self, data: Any, **kwargs: Any) -> dict[str, float]:
        return self._compiled().evaluate(data, **kwargs)

    def _compiled(self) -> Any:
        trainer = getattr(self, "_trainer", None)
        if trainer is None:
            raise RuntimeError(f"{type(self).__name__}: call compile(loss=..., optimizer=...) before fit/evaluate")
        return trainer


def read_checkpoint(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The floating-point arrays of the ``.npz`` checkpoint ``path``, by parameter name.

    Raises :class:`CheckpointError` naming the file when it is missing, empty, not a zip
    archive (wrong magic bytes), truncated or corrupt, or holds anything but float arrays.
    """
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError as error:
        raise CheckpointError(f"{path}: cannot read checkpoint ({error.strerror or error})") from None
    if not magic:
        raise CheckpointError(f"{path}: empty file, not a checkpoint")
    if magic not in _ZIP_MAGICS:
        raise CheckpointError(
            f"{path}: not a checkpoint: wrong magic bytes {magic!r} (an .npz archive starts with {_ZIP_MAGICS[0]!r})"
        )
    try:
        with np.load(path, allow_pickle=False) as archive:
            state = {name: archive[name] for name in archive.files}
    except (zipfile.BadZipFile, EOFError, zlib.error) as error:
        raise CheckpointError(f"{path}: truncated or corrupt checkpoint ({error})") from None
    except (OSError, ValueError) as error:
        raise CheckpointError(f"{path}: not a checkpoint: {error}") from None
    for name, value in state.items():
        if not isinstance(value, np.ndarray):
            raise CheckpointError(f"{path}: not a checkpoint: member {name!r} is not a NumPy array")
        if value.dtype.kind != "f":
            raise CheckpointError(
                f"{path}: wrong dtype: {name} is {value.dtype}, a checkpoint holds floating-point parameters"
            )
    return state


def _walk(name: str, value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, (Module, Tensor)):
        yield name, value
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _walk(f"{name}.{i}", item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(f"{name}.{key}", item)


def _set_value(p: Tensor, array: np.ndarray) -> None:
    from braze.tensor import executor_for

    p._value = executor_for(p.device).from_numpy(np.require(array, requirements="C"), p.device)
