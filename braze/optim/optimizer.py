"""The optimizer base: PyTorch's ``zero_grad()``/``step()`` over a pure per-parameter update.

Each optimizer defines ``init_slots`` (its state for one parameter, step counters included)
and ``update`` (new parameter and slots from the old ones and a gradient), written with
tensor ops so that on a lazy device, or under ``braze.jit``, the whole update is traced
into the training step and nothing is left to Python between steps. ``step()`` writes results back
into the same tensors (parameters and slots keep their identity, which lets a lazy device
update them in place); ``apply()`` is the functional form.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from braze.autodiff import no_grad
from braze.lazy import barrier
from braze.ops import full
from braze.runtime.device import Device, as_device
from braze.tensor import Tensor

Slots = dict[str, Tensor]


def zeros_data(param: Tensor, shape: tuple[int, ...] | None = None) -> Tensor:
    """A zero slot as device data, so a lazy device traces the same update every step."""
    return Tensor.from_numpy(np.zeros(param.shape if shape is None else shape, param.dtype.numpy), param.device)


class Optimizer:
    """The base of braze's optimizers: ``zero_grad()`` and ``step()`` over the bound parameters
    (a Module or tensors), each parameter's slots in ``state``; subclasses define ``init_slots``
    and ``update``."""

    def __init__(self, params: Any = None) -> None:
        self.params: list[Tensor] = []
        self.state: list[Slots | None] = []
        self.steps = 0
        self._constants: dict[tuple, Tensor] = {}  # this step's, by (value, dtype, device)
        if params is not None:
            self.bind(params)

    def bind(self, params: Any) -> Optimizer:
        """Attach the parameters to optimize (a Module or an iterable of tensors)."""
        found = params.parameters() if hasattr(params, "parameters") else list(params)
        if not found:
            raise ValueError(f"{type(self).__name__}: no parameters to optimize")
        for p in found:
            if not isinstance(p, Tensor) or not p.requires_grad:
                raise TypeError(f"{type(self).__name__}: parameters must be tensors that require grad")
        self.params = list(found)
        self.state = [None] * len(self.params)
        return self

    def init_slots(self, param: Tensor) -> Slots:
        return {}

    def update(self, param: Tensor, grad: Tensor, slots: Slots) -> tuple[Tensor, Slots]:
        raise NotImplementedError

    def constant(self, value: float, like: Tensor) -> Tensor:
        """``value`` as a 0-d tensor of ``like``'s dtype and device, made once per ``step()``
        for all the parameters (updates multiply by it as by a number): on a lazy device one
        constant for the step, not one per parameter. Forgotten when the updates are made,
        so that a lazy step's barrier never computes them as results."""
        key = (value, like.dtype, like.device)
        found = self._constants.get(key)
        if found is None:
            found = self._constants[key] = full((), value, like.dtype, like.device)
        return found

    @contextlib.contextmanager
    def _step_constants(self) -> Iterator[None]:
        try:
            yield
        finally:
            self._constants.clear()

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        """Update every parameter that has a gradient, in place; on a lazy device, then run
        the traced step (a barrier)."""
        if not self.params:
            raise RuntimeError(f"{type(self).__name__}: no parameters; pass them or a model to the optimizer")
        self.steps += 1
        with no_grad(), self._step_constants():
            for i, p in enumerate(self.params):
                if p.grad is None:
                    continue
                if p.grad.device != p.device:
                    raise RuntimeError(f"gradient on {p.grad.device!r} for a parameter on {p.device!r}")
                slots = self.state[i]
                if slots is None:
                    slots = self.state[i] = self.init_slots(p)
                new_p, new_slots = self.update(p, p.grad, slots)
                p._assign(new_p)
                for name, value in new_slots.items():
                    slots[name]._assign(value)
        device = self.params[0].device
        if device.is_lazy:
            barrier(device)  # a lazy training step ends here, as users of X10's barrier expect

    def apply(
        self, params: Iterable[Tensor], grads: Iterable[Tensor], state: list[Slots] | None = None
    ) -> tuple[list[Tensor], list[Slots]]:
        """Functional update: new parameters and slots, leaving the inputs untouched."""
        params, grads = list(params), list(grads)
        state = state if state is not None else [self.init_slots(p) for p in params]
        new_params, new_state = [], []
        with no_grad(), self._step_constants():
            for p, g, slots in zip(params, grads, state, strict=True):
                new_p, new_slots = self.update(p.detach(), g, slots)
                new_params.append(new_p)
                new_state.append(new_slots)
        return new_params, new_state

    def to(self, device: Device | str) -> Optimizer:
        """Move the optimizer's slots (X10's ``SGD(copying:to:)``)."""
        target = as_device(device)
        for slots in self.state:
            for value in (slots or {}).values():
                value.move_(target)
        return self
