"""The optimizer base: PyTorch's ``zero_grad()``/``step()`` over a pure per-parameter update.

Each optimizer defines ``init_slots`` (its state for one parameter, step counters included)
and ``update`` (new parameter and slots from the old ones and a gradient), written with
tensor ops so that on a lazy device, or under ``braze.jit``, the whole update is traced
into the training step and nothing is left to Python between steps. ``step()`` writes results back
into the same tensors (parameters and slots keep their identity, which lets a lazy device
update them in place); ``apply()`` is the functional form.

Keras's spellings work on every optimizer: ``apply_gradients(zip(grads, variables))``
(gradients from a ``GradientTape``, the variables bound on first use), ``learning_rate``
(read and set between steps, as ``ReduceLROnPlateau`` does), ``iterations``, and gradient
clipping by ``clipvalue``, ``clipnorm`` (per gradient) or ``global_clipnorm``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from braze.autodiff import no_grad
from braze.lazy import barrier
from braze.ops import clip, full, maximum, sqrt
from braze.ops import sum as reduce_sum
from braze.runtime.device import Device, as_device
from braze.tensor import Tensor

Slots = dict[str, Tensor]


def zeros_data(param: Tensor, shape: tuple[int, ...] | None = None) -> Tensor:
    """A zero slot as device data, so a lazy device traces the same update every step."""
    return full_data(param, 0.0, shape)


def full_data(param: Tensor, value: float, shape: tuple[int, ...] | None = None) -> Tensor:
    """A slot filled with ``value``, as device data (not an op traced into the first step)."""
    return Tensor.from_numpy(np.full(param.shape if shape is None else shape, value, param.dtype.numpy), param.device)


class Optimizer:
    clipvalue: float | None = None
    clipnorm: float | None = None
    global_clipnorm: float | None = None

    def __init__(self, params: Any = None) -> None:
        self.params: list[Tensor] = []
        self.state: list[Slots | None] = []
        self.steps = 0
        self._constants: dict[tuple, Tensor] = {}  # this step's, by (value, dtype, device)
        self._index: dict[int, int] = {}
        if params is not None:
            self.bind(params)

    @property
    def learning_rate(self) -> float:
        return self.lr

    @learning_rate.setter
    def learning_rate(self, value: float) -> None:
        value = float(value)
        if value < 0:
            raise ValueError(f"{type(self).__name__}: the learning rate must not be negative, got {value}")
        self.lr = value

    @property
    def iterations(self) -> int:
        """How many updates the optimizer has applied (Keras's ``iterations``)."""
        return self.steps

    @property
    def variables(self) -> list[Tensor]:
        return [t for slots in self.state for t in (slots or {}).values()]

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
        self._index = {id(p): i for i, p in enumerate(self.params)}
        return self

    build = bind  # Keras's name

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
        self._apply([(i, p, p.grad) for i, p in enumerate(self.params) if p.grad is not None])

    def apply_gradients(self, grads_and_vars: Iterable[tuple[Tensor | None, Tensor]]) -> int:
        """Keras's update: each variable takes its gradient's step (a None gradient is
        skipped); variables the optimizer does not hold yet are added to it."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise ValueError(f"{type(self).__name__}.apply_gradients: no gradients (every gradient is None)")
        updates = []
        for grad, var in pairs:
            if not isinstance(var, Tensor) or not var.requires_grad:
                raise TypeError(f"{type(self).__name__}.apply_gradients: variables must be tensors that require grad")
            index = self._index.get(id(var))
            if index is None:
                index = self._index[id(var)] = len(self.params)
                self.params.append(var)
                self.state.append(None)
            updates.append((index, var, grad))
        self._apply(updates)
        return self.steps

    def apply(self, grads: Any, trainable_variables: Any = None, state: list[Slots] | None = None) -> Any:
        """Keras 3's ``optimizer.apply(grads, variables)`` (without variables, the gradients
        of the bound parameters, in order). Given parameters (tensors that require grad),
        gradients and optionally slots instead, the functional update of :meth:`apply_state`."""
        grads = list(grads)
        if state is not None or (grads and all(isinstance(t, Tensor) and t.requires_grad for t in grads)):
            return self.apply_state(grads, trainable_variables, state)
        variables = self.params if trainable_variables is None else list(trainable_variables)
        if len(grads) != len(variables):
            raise ValueError(f"{type(self).__name__}.apply: {len(grads)} gradients for {len(variables)} variables")
        return self.apply_gradients(zip(grads, variables, strict=True))

    def _clipped(self, grads: list[Tensor]) -> list[Tensor]:
        """Gradients clipped as Keras clips them: each to [-clipvalue, clipvalue], each to
        an L2 norm of at most clipnorm, then all together to a global norm of global_clipnorm."""
        if self.clipvalue is not None:
            grads = [clip(g, -self.clipvalue, self.clipvalue) for g in grads]
        if self.clipnorm is not None:
            grads = [g * (self.clipnorm / maximum(sqrt(reduce_sum(g * g)), self.clipnorm)) for g in grads]
        if self.global_clipnorm is not None and grads:
            norm = sqrt(sum((reduce_sum(g * g) for g in grads[1:]), reduce_sum(grads[0] * grads[0])))
            scale = self.global_clipnorm / maximum(norm, self.global_clipnorm)
            grads = [g * scale for g in grads]
        return grads

    def _apply(self, updates: list[tuple[int, Tensor, Tensor]]) -> None:
        """Step each (index, parameter, gradient) in place; then a lazy device's barrier."""
        self.steps += 1
        with no_grad(), self._step_constants():
            grads = self._clipped([grad for _, _, grad in updates])
            for (i, p, _), grad in zip(updates, grads, strict=True):
                if grad.device != p.device:
                    raise RuntimeError(f"gradient on {grad.device!r} for a parameter on {p.device!r}")
                if grad.shape != p.shape:
                    raise ValueError(f"gradient of shape {grad.shape} for a parameter of shape {p.shape}")
                slots = self.state[i]
                if slots is None:
                    slots = self.state[i] = self.init_slots(p)
                new_p, new_slots = self.update(p, grad, slots)
                p._assign(new_p)
                for name, value in new_slots.items():
                    slots[name]._assign(value)
        device = updates[0][1].device if updates else None
        if device is not None and device.is_lazy:
            barrier(device)  # a lazy training step ends here, as users of X10's barrier expect

    def apply_state(
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
