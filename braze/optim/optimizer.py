"""The optimizer base: PyTorch's ``zero_grad()``/``step()`` over a pure per-parameter update.

Each optimizer defines ``init_slots`` (its state for one parameter, step counters included)
and ``update`` (new parameter and slots from the old ones and a gradient), written with
tensor ops so that on a lazy device, or under ``braze.jit``, the whole update is traced
into the training step and nothing is left to Python between steps. ``step()`` writes results back
into the same tensors (parameters and slots keep their identity, which lets a lazy device
update them in place); ``apply()`` is the functional form.

Hyperparameters (``lr``, momentum, betas, weight decay...) may change between steps and
never cause a recompile: each is a number, a 0-d tensor, or for the learning rate a
schedule of the step count (``braze.optim.schedules``), and ``hyperparameter()`` makes it a
0-d tensor of the parameter's dtype that a lazy trace takes as a graph input whatever its
value; the classes list them in ``jit_inputs``, so that under ``braze.jit``
they are inputs of the compiled step too. A zero one leaves its term out of the update.

Keras's spellings work on every optimizer: ``apply_gradients(zip(grads, variables))``
(gradients from a ``GradientTape``; variables it does not hold yet are added),
``apply(grads, variables)``, ``learning_rate`` (read and set between steps, as
``ReduceLROnPlateau`` does), ``iterations``, and gradient clipping by ``clipvalue``,
``clipnorm`` (per gradient) or ``global_clipnorm``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from braze.autodiff import no_grad
from braze.ir.dtypes import float64
from braze.lazy import barrier
from braze.ops import astype, clip, full, maximum, sqrt
from braze.ops import sum as reduce_sum
from braze.ops.core import scalar_input
from braze.runtime.device import Device, as_device
from braze.tensor import Tensor

Slots = dict[str, Tensor]
# A hyperparameter: a number, a 0-d tensor, or (the learning rate) a schedule of the step count.
Hyperparameter = Any


def active(value: Hyperparameter) -> bool:
    """Whether a hyperparameter's term is part of the update: a zero one is left out (a
    tensor or a schedule may be anything, so its term is always computed)."""
    return not isinstance(value, (int, float, np.number)) or value != 0


def real(value: Hyperparameter) -> Any:
    """A number as it is, a tensor in float64: arithmetic between hyperparameters
    (``1 - beta``, ``lr * weight_decay``) is done in double precision, as Python does it."""
    return astype(value, float64) if isinstance(value, Tensor) else value


def check_positive(optimizer: str, allow_zero: bool = False, **hyperparameters: Hyperparameter) -> None:
    """A ValueError naming any hyperparameter given as a number that is negative (or zero,
    unless ``allow_zero``); tensors and schedules are taken as they are."""
    for name, value in hyperparameters.items():
        if isinstance(value, (int, float, np.number)) and (value < 0 or (value == 0 and not allow_zero)):
            bound = "0 or more" if allow_zero else "more than 0"
            raise ValueError(f"{optimizer}: {name} must be {bound}, got {value}")


def zeros_data(param: Tensor, shape: tuple[int, ...] | None = None) -> Tensor:
    """A zero slot as device data, so a lazy device traces the same update every step."""
    return full_data(param, 0.0, shape)


def full_data(param: Tensor, value: float, shape: tuple[int, ...] | None = None) -> Tensor:
    """A slot filled with ``value``, as device data (not an op traced into the first step)."""
    return Tensor.from_numpy(np.full(param.shape if shape is None else shape, value, param.dtype.numpy), param.device)


class Optimizer:
    """The base of braze's optimizers: ``zero_grad()`` and ``step()`` over the bound parameters
    (a Module or tensors), each parameter's slots in ``state`` (made when the parameters are
    bound), and ``iterations``, the count of steps taken (Keras's name), a 0-d int64 tensor
    that a learning-rate schedule reads; subclasses define ``init_slots`` and ``update``."""

    jit_inputs: tuple[str, ...] = ("lr",)  # numbers read afresh by every call of a jitted step
    clipvalue: float | None = None
    clipnorm: float | None = None
    global_clipnorm: float | None = None

    def __init__(self, params: Any = None) -> None:
        self.params: list[Tensor] = []
        self.state: list[Slots] = []
        self.iterations: Tensor | None = None
        self._constants: dict[tuple, Any] = {}  # this step's, by (value or id, dtype, device)
        self._held: list[Any] = []  # the values named by id in _constants
        self._index: dict[int, int] = {}  # a parameter's position, by id
        if params is not None:
            self.bind(params)

    @property
    def learning_rate(self) -> Hyperparameter:
        """Keras's name of ``lr``: a number (set it between steps), a tensor or a schedule."""
        return self.lr

    @learning_rate.setter
    def learning_rate(self, value: Hyperparameter) -> None:
        check_positive(type(self).__name__, allow_zero=True, learning_rate=value)
        self.lr = float(value) if isinstance(value, (int, float, np.number)) else value

    @property
    def variables(self) -> list[Tensor]:
        """The optimizer's state: its step count and every slot."""
        return [self.iterations, *(t for slots in self.state for t in slots.values())]

    def bind(self, params: Any) -> Optimizer:
        """Attach the parameters to optimize (a Module or an iterable of tensors)."""
        found = params.parameters() if hasattr(params, "parameters") else list(params)
        if not found:
            raise ValueError(f"{type(self).__name__}: no parameters to optimize")
        for p in found:
            if not isinstance(p, Tensor) or not p.requires_grad:
                raise TypeError(f"{type(self).__name__}: parameters must be tensors that require grad")
        self.params = list(found)
        # Made now, not on the first step, so that the first step already has the state of
        # every later one (under braze.jit: one compile, not one more after the first step).
        self.state = [self.init_slots(p) for p in self.params]
        self.iterations = Tensor.from_numpy(np.zeros((), np.int64), self.params[0].device)
        self._index = {id(p): i for i, p in enumerate(self.params)}
        return self

    build = bind  # Keras's name

    def init_slots(self, param: Tensor) -> Slots:
        return {}

    def update(self, param: Tensor, grad: Tensor, slots: Slots) -> tuple[Tensor, Slots]:
        raise NotImplementedError

    def constant(self, value: float, like: Tensor) -> Tensor:
        """``value``, a number written in the update rule (``1.0``), as a 0-d constant of
        ``like``'s dtype and device, made once per ``step()`` for all the parameters: on a
        lazy device one constant for the step, not one per parameter. Forgotten when the
        updates are made, so that a lazy step's barrier never computes them as results."""
        key = (value, like.dtype, like.device)
        found = self._constants.get(key)
        if found is None:
            found = self._constants[key] = full((), value, like.dtype, like.device)
        return found

    def hyperparameter(self, value: Hyperparameter, like: Tensor) -> Tensor:
        """A hyperparameter's value now as a 0-d tensor of ``like``'s dtype and device, made
        once per ``step()``: a number is a constant that a lazy trace takes as a graph input
        whatever its value (a new learning rate, 1 or 0 included, is not a new graph), a
        tensor is converted, and a schedule is evaluated at ``iterations``."""
        number = isinstance(value, (int, float, np.number))
        key = (("number", value) if number else id(value), like.dtype, like.device)
        found = self._constants.get(key)
        if found is None:
            if not number:  # alive until the step ends, so that its id names nothing else meanwhile
                self._held.append(value)
            current = self.current(value)
            if isinstance(current, Tensor):
                if current.shape != ():
                    raise ValueError(f"{type(self).__name__}: a hyperparameter tensor must be 0-d, got {current.shape}")
                found = astype(current.to(like.device), like.dtype)
            else:
                found = scalar_input(current, like.dtype, like.device)
            self._constants[key] = found
        return found

    def current(self, value: Hyperparameter) -> Any:
        """A hyperparameter's value at this step: a schedule evaluated at ``iterations``
        (once per ``step()``), anything else as it is."""
        if isinstance(value, Tensor) or not callable(value):
            return value
        key = ("schedule", id(value))
        found = self._constants.get(key)
        if found is None:
            self._held.append(value)
            found = self._constants[key] = value(self.iterations)
        return found

    @contextlib.contextmanager
    def _step_constants(self) -> Iterator[None]:
        try:
            yield
        finally:
            self._constants.clear()
            self._held.clear()

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        """Update every parameter that has a gradient, in place; on a lazy device, then run
        the traced step (a barrier)."""
        if not self.params:
            raise RuntimeError(f"{type(self).__name__}: no parameters; pass them or a model to the optimizer")
        self._apply([(i, p, p.grad) for i, p in enumerate(self.params) if p.grad is not None])

    def apply_gradients(self, grads_and_vars: Iterable[tuple[Tensor | None, Tensor]]) -> Tensor:
        """Keras's update: each variable takes its gradient's step (a None gradient is
        skipped); variables the optimizer does not hold yet are added to it. Returns
        ``iterations``."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise ValueError(f"{type(self).__name__}.apply_gradients: no gradients (every gradient is None)")
        updates = []
        for grad, var in pairs:
            if not isinstance(var, Tensor) or not var.requires_grad:
                raise TypeError(f"{type(self).__name__}.apply_gradients: variables must be tensors that require grad")
            index = self._index.get(id(var))
            if index is None:
                if not self.params:
                    self.bind([var])
                else:
                    self.params.append(var)
                    self.state.append(self.init_slots(var))
                index = self._index[id(var)] = len(self.params) - 1
            updates.append((index, var, grad))
        self._apply(updates)
        return self.iterations

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
        """Step each (index, parameter, gradient) in place and count the step; then a lazy
        device's barrier."""
        device = self.params[0].device
        if self.iterations.device != device:  # the model moved after the optimizer was made
            self.to(device)
        with no_grad(), self._step_constants():
            grads = self._clipped([grad for _, _, grad in updates])
            for (i, p, _), grad in zip(updates, grads, strict=True):
                if grad.device != p.device:
                    raise RuntimeError(f"gradient on {grad.device!r} for a parameter on {p.device!r}")
                if grad.shape != p.shape:
                    raise ValueError(f"gradient of shape {grad.shape} for a parameter of shape {p.shape}")
                slots = self.state[i]
                new_p, new_slots = self.update(p, grad, slots)
                p._assign(new_p)
                for name, value in new_slots.items():
                    if name in slots:
                        slots[name]._assign(value)
                    else:  # a slot needed from now on (momentum turned on mid-run)
                        slots[name] = value.detach()
            self.iterations._assign(self.iterations + 1)
        if device.is_lazy:
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
        if self.iterations is not None:
            self.iterations.move_(target)
        for slots in self.state:
            for value in slots.values():
                value.move_(target)
        return self
