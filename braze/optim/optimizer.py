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
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from braze.autodiff import enable_grad, no_grad
from braze.ir.dtypes import DType, float64, storage_array
from braze.lazy import barrier
from braze.ops import astype, clip, expm1, full, maximum, sqrt, zeros_like
from braze.ops import sum as reduce_sum
from braze.ops.core import scalar_input
from braze.optim.groups import ParamGroup, group_class, requested_groups
from braze.replay import replayable, replayed
from braze.runtime.cache import BoundedCache
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


def check_kind(optimizer: str, **hyperparameters: Hyperparameter) -> None:
    """A TypeError naming any hyperparameter that is not a number, a tensor or a schedule:
    ``lr=None`` would otherwise be taken as NaN at the first step, where PyTorch refuses it."""
    for name, value in hyperparameters.items():
        if not isinstance(value, (int, float, np.number, Tensor)) and not callable(value):
            raise TypeError(
                f"{optimizer}: {name} must be a number, a 0-d tensor or a schedule, got {type(value).__name__}"
            )


def check_positive(optimizer: str, allow_zero: bool = False, **hyperparameters: Hyperparameter) -> None:
    """A TypeError naming any hyperparameter that is not a number, a tensor or a schedule,
    and a ValueError naming any given as a number that is negative (or zero, unless
    ``allow_zero``); tensors and schedules are taken as they are."""
    check_kind(optimizer, **hyperparameters)
    for name, value in hyperparameters.items():
        if isinstance(value, (int, float, np.number)) and (value < 0 or (value == 0 and not allow_zero)):
            bound = "0 or more" if allow_zero else "more than 0"
            raise ValueError(f"{optimizer}: {name} must be {bound}, got {value}")


def one_minus_power(log_base: Tensor, step: Tensor) -> Tensor:
    """``1 - base ** step`` (a bias correction) from ``log(base)``, as ``-expm1(step *
    log(base))``: to the dtype's rounding, where the direct form cancels (a beta of 0.999
    at step 1 leaves three digits of float32) and PyTorch computes it in double precision."""
    return -expm1(step * log_base)


def zeros_data(param: Tensor, shape: tuple[int, ...] | None = None, dtype: DType | None = None) -> Tensor:
    """A zero slot as device data, so a lazy device traces the same update every step."""
    return full_data(param, 0.0, shape, dtype)


def full_data(param: Tensor, value: float, shape: tuple[int, ...] | None = None, dtype: DType | None = None) -> Tensor:
    """A slot filled with ``value``, as device data (not an op traced into the first step)."""
    return slot_data(param, np.full(param.shape if shape is None else shape, value), dtype)


def slot_data(param: Tensor, values: Any, dtype: DType | None = None) -> Tensor:
    """``values`` (as they read: bfloat16 ones as floats) as device data of ``param``'s
    dtype (or ``dtype``) and device: a slot of it, made or restored."""
    return Tensor.from_numpy(storage_array(values, dtype or param.dtype), param.device)


class LearningRate(float):
    """An optimizer's learning rate as a number that also answers as Keras's variable:
    ``optimizer.learning_rate.assign(0.01)`` sets the optimizer's rate."""

    def __new__(cls, value: float, optimizer: Any) -> LearningRate:
        rate = super().__new__(cls, value)
        rate.optimizer = optimizer
        return rate

    def assign(self, value: Any) -> None:
        self.optimizer.learning_rate = float(value)

    def numpy(self) -> np.float32:
        return np.float32(self)

    def __reduce__(self) -> tuple:
        return float, (float(self),)  # a copy (a History's value) is the number, not the optimizer


class Optimizer:
    """The base of braze's optimizers: ``zero_grad()`` and ``step()`` over the bound parameters
    (a Module, tensors, or parameter groups: dicts of ``params`` and the hyperparameters
    that differ from the optimizer's, as in PyTorch), each parameter's slots in ``state``
    (made when the parameters are bound), ``param_groups``, and ``iterations``, the count
    of steps taken (Keras's name), a 0-d int64 tensor that a learning-rate schedule reads;
    ``state_dict()`` and ``load_state_dict()`` save and restore all of it, so that training
    resumes exactly. Subclasses define ``init_slots`` and ``update``, and pass their
    hyperparameters' defaults to ``__init__``; ``optimizer.lr`` (any hyperparameter) reads
    the value every group shares, and setting it sets it in every group."""

    jit_inputs: tuple[str, ...] = ("lr",)  # numbers read afresh by every call of a jitted step
    # Slots that count steps, kept in the parameter's compute dtype: float32 for bfloat16,
    # which counts exactly only to 256 (PyTorch keeps its ``step`` in float32).
    count_slots: tuple[str, ...] = ()
    # Slots that a saved or a loaded state may lack, made only once a hyperparameter turns
    # their term on (SGD's momentum); any other slot must be in both, or the state is
    # another optimizer's and is refused. None: not checked (an optimizer of your own).
    optional_slots: tuple[str, ...] | None = None
    ParamGroup: type[ParamGroup] = ParamGroup  # each subclass gets its own, of its jit_inputs
    clipvalue: float | None = None
    clipnorm: float | None = None
    global_clipnorm: float | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.ParamGroup = group_class(cls)

    def __init__(self, params: Any = None, **defaults: Hyperparameter) -> None:
        self._defaults = defaults
        self.check(defaults)
        self.param_groups: list[ParamGroup] = []
        self.params: list[Tensor] = []
        self.state: list[Slots] = []
        self.iterations: Tensor | None = None
        self._group_of: list[ParamGroup] = []  # each parameter's group, in the order of params
        self._group: ParamGroup | None = None  # whose hyperparameters update() reads now
        self._constants: dict[tuple, Any] = {}  # this step's, by (value or id, dtype, device)
        self._held: list[Any] = []  # the values named by id in _constants
        self._index: dict[int, int] = {}  # a parameter's position, by id
        # rule()'s recorded programs, by the names and types of its inputs (None: not recordable)
        self._programs: BoundedCache[tuple, tuple | None] = BoundedCache(256)
        self._slot_names: dict[tuple, list[tuple[str, ...]]] = {}  # the slots each rule returns, by the same keys
        if params is not None:
            self.bind(params)

    def check(self, hyperparameters: dict[str, Hyperparameter]) -> None:
        """Raise a ValueError for a hyperparameter a group may not have (each optimizer's own)."""

    @property
    def defaults(self) -> dict[str, Hyperparameter]:
        """The hyperparameters given to the constructor: what a new group does not set."""
        return self._defaults

    @property
    def learning_rate(self) -> Hyperparameter:
        """Keras's name of ``lr``: a number (set it between steps; it also answers Keras's
        variable methods, ``assign`` and ``numpy``), a tensor or a schedule."""
        plain = isinstance(self.lr, (int, float, np.number)) and not isinstance(self.lr, bool)
        return LearningRate(self.lr, self) if plain else self.lr

    @learning_rate.setter
    def learning_rate(self, value: Hyperparameter) -> None:
        check_positive(type(self).__name__, allow_zero=True, learning_rate=value)
        self.lr = float(value) if isinstance(value, (int, float, np.number)) else value

    @property
    def variables(self) -> list[Tensor]:
        """The optimizer's state: its step count and every slot."""
        return [self.iterations, *(t for slots in self.state for t in slots.values())]

    # One value of every group, or the value of the group being updated -------------------

    def __getattr__(self, name: str) -> Any:
        defaults = self.__dict__.get("_defaults")
        if name.startswith("_") or defaults is None or (name not in defaults and name != "initial_lr"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        group = self.__dict__.get("_group")
        groups = [group] if group is not None else self.__dict__.get("param_groups") or [defaults]
        values = [g.get(name, _MISSING) for g in groups]
        first = values[0]
        if first is _MISSING:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        if any(v is not first and not (_plain(v) and _plain(first) and v == first) for v in values[1:]):
            shown = ", ".join(repr(v) for v in values)
            raise ValueError(
                f"{type(self).__name__}: its {len(groups)} parameter groups have different {name} ({shown}): "
                f"read optimizer.param_groups[i][{name!r}]"
            )
        return first

    def __setattr__(self, name: str, value: Any) -> None:
        defaults = self.__dict__.get("_defaults")
        if defaults is not None and (name in defaults or name == "initial_lr"):
            for group in self.__dict__.get("param_groups") or [defaults]:
                group[name] = value
            return
        object.__setattr__(self, name, value)

    # Parameters and their groups -----------------------------------------------------

    def bind(self, params: Any) -> Optimizer:
        """Attach the parameters to optimize: a Module, an iterable of tensors, or an
        iterable of parameter groups (dicts of ``params`` and hyperparameters)."""
        requested = requested_groups(params, type(self).__name__)
        self.param_groups, self.params, self.state, self._group_of = [], [], [], []
        self._index = {}
        self.iterations = None
        for tensors, given in requested:
            self._add_group(tensors, given)
        if not self.params:
            raise ValueError(f"{type(self).__name__}: no parameters to optimize")
        return self

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Optimize more parameters, with their own hyperparameters (PyTorch's name)."""
        ((tensors, given),) = requested_groups([param_group], type(self).__name__)
        self._add_group(tensors, given)

    def _add_group(self, tensors: list[Tensor], given: dict[str, Any]) -> None:
        name = type(self).__name__
        # A group's own labels (``"name": "decoder"``) are kept, as PyTorch keeps any key; an
        # unknown number is refused: it would be a misspelled hyperparameter, never read.
        unknown = sorted(
            key
            for key, value in given.items()
            if key not in self._defaults and key != "initial_lr" and _is_number_like(value)
        )
        if unknown:
            raise ValueError(
                f"{name}: unknown hyperparameters {unknown} in a parameter group; {name} has {sorted(self._defaults)}"
            )
        values = {**self._defaults, **given}
        self.check(values)
        held = {id(p) for p in self.params}
        if any(id(p) in held for p in tensors) or len({id(p) for p in tensors}) != len(tensors):
            raise ValueError(f"{name}: a parameter appears in more than one parameter group (or twice in one)")
        group = self.ParamGroup(list(tensors), values)
        self.param_groups.append(group)
        # Made now, not on the first step, so that the first step already has the state of
        # every later one (under braze.jit: one compile, not one more after the first step).
        with self._using(group):
            self.state += [self.init_slots(p) for p in tensors]
        self._index.update({id(p): len(self.params) + i for i, p in enumerate(tensors)})
        self.params += tensors
        self._group_of += [group] * len(tensors)
        if self.iterations is None and self.params:
            self.iterations = Tensor.from_numpy(np.zeros((), np.int64), self.params[0].device)

    build = bind  # Keras's name

    @contextlib.contextmanager
    def _using(self, group: ParamGroup | None) -> Iterator[None]:
        outer, self._group = self._group, group
        try:
            yield
        finally:
            self._group = outer

    def init_slots(self, param: Tensor) -> Slots:
        return {}

    def update(self, param: Tensor, grad: Tensor, slots: Slots) -> tuple[Tensor, Slots]:
        """The new parameter and slots: an optimizer defines this, or ``rule_inputs`` and
        ``rule``, whose lazy steps are replayed."""
        if type(self).rule is Optimizer.rule:
            raise NotImplementedError(f"{type(self).__name__} defines neither update() nor rule()")
        return self.rule(param, grad, slots, self._rule_tensors(param))

    def slot_dtype(self, name: str, param: Tensor) -> DType:
        """The dtype of ``param``'s slot ``name``: the parameter's, or a count's."""
        return param.dtype.compute if name in self.count_slots else param.dtype

    def _in_compute_dtype(self, update: Any, param: Tensor, grad: Tensor, slots: Slots) -> tuple[Tensor, Slots]:
        """``update(param, grad, slots)`` computed in the parameter's compute dtype, its results
        rounded once to the dtypes they are kept in, as PyTorch computes a bfloat16 tensor's
        ops: in bfloat16 itself a beta2 of 0.999 is 1.0, so Adam's bias correction would
        divide by zero and the parameter never move. (The rule's numbers, ``constant`` and
        ``hyperparameter``, are made in that dtype too.)"""
        dtype = param.dtype.compute
        if dtype is param.dtype:
            return update(param, grad, slots)

        def widened(t: Tensor) -> Tensor:
            return astype(t, dtype) if t.dtype is param.dtype else t

        new_param, new_slots = update(widened(param), widened(grad), {n: widened(v) for n, v in slots.items()})
        kept = {n: astype(v, slots[n].dtype if n in slots else self.slot_dtype(n, param)) for n, v in new_slots.items()}
        return astype(new_param, param.dtype), kept

    def rule_inputs(self) -> dict[str, Hyperparameter]:
        """The numbers ``rule`` reads this step (the group's being updated), by name; which
        names there are may depend on the values (a zero weight decay leaves its term out)."""
        return {}

    def rule(self, param: Tensor, grad: Tensor, slots: Slots, h: dict[str, Tensor]) -> tuple[Tensor, Slots]:
        """The update as a function of tensors only: the parameter, its gradient and slots,
        and ``h``, ``rule_inputs()`` as 0-d tensors; numbers written in the rule come from
        ``constant()``. Its ops depend on nothing else (no number read from the optimizer),
        so on a lazy device a step's runs for its parameters are recorded and later steps
        with parameters of the same types replay them (``braze.replay``): the same trace,
        without the op library's Python."""
        raise NotImplementedError

    def _rule_tensors(self, like: Tensor) -> dict[str, Tensor]:
        """``rule_inputs()`` as tensors, made once per step for each group, dtype and device
        (every call, for ``update()`` called outside ``step()``: values may change between)."""
        key = ("rule inputs", id(self._group), like.dtype, like.device)
        found = self._constants.get(key) if self._group is not None else None
        if found is None:
            inputs = self.rule_inputs().items()
            found = {name: self.hyperparameter(value, like) for name, value in inputs}
            if self._group is not None:
                self._held.append(self._group)  # alive until the step ends, so that its id names nothing else meanwhile
                self._constants[key] = found
        return found

    def _replays(self, device: Device) -> bool:
        """Whether this step's updates replay recorded rules (``braze.replay``)."""
        rules = type(self).update is Optimizer.update and type(self).rule is not Optimizer.rule
        return rules and replayable(device)

    def _replayed(self, updates: list[tuple[int, Tensor, Tensor]]) -> list[tuple[Tensor, Slots]]:
        """``rule`` on each (index, parameter, gradient) of the step: one recorded program
        for the whole step, replayed, or recorded now. One program, not one per parameter:
        a step's Python is then one replay, and the rule's constants are made once."""
        inputs: list[Tensor] = []
        rules, parts = [], []
        for i, param, grad in updates:
            with self._using(self._group_of[i]):
                h = self._rule_tensors(param)
            slots = self.state[i]
            inputs += [param, grad, *slots.values(), *h.values()]
            rules.append((i, param, grad, slots, h))
            parts.append((tuple(slots), tuple(h)))
        key = (tuple(parts), tuple([t._aval for t in inputs]), inputs[0].device)

        def run() -> list[Tensor]:
            # The rule's constants are ops of its program, not this step's shared tensors.
            shared, self._constants = self._constants, {}
            results, names = [], []
            try:
                for i, param, grad, slots, h in rules:
                    with self._using(self._group_of[i]):
                        new_param, new_slots = self._in_compute_dtype(
                            lambda p, g, s, h=h: self.rule(p, g, s, h), param, grad, slots
                        )
                    results += [new_param, *new_slots.values()]
                    names.append(tuple(new_slots))
            finally:
                self._constants = shared
            self._slot_names[key] = names
            return results

        # Untracked: ``_apply`` assigns each result into its parameter or slot at once.
        results = iter(replayed(self._programs, key, inputs, run, "OptimizerReplay", tracked=False))
        return [(next(results), {name: next(results) for name in names}) for names in self._slot_names[key]]

    def constant(self, value: float, like: Tensor) -> Tensor:
        """``value``, a number written in the update rule (``1.0``), as a 0-d constant of
        ``like``'s dtype and device, made once per ``step()`` for all the parameters: on a
        lazy device one constant for the step, not one per parameter. Forgotten when the
        updates are made, so that a lazy step's barrier never computes them as results."""
        dtype = like.dtype.compute
        key = (value, dtype, like.device)
        found = self._constants.get(key)
        if found is None:
            found = self._constants[key] = full((), value, dtype, like.device)
        return found

    def hyperparameter(self, value: Hyperparameter, like: Tensor) -> Tensor:
        """A hyperparameter's value now as a 0-d tensor of ``like``'s dtype and device, made
        once per ``step()``: a number is a constant that a lazy trace takes as a graph input
        whatever its value (a new learning rate, 1 or 0 included, is not a new graph), a
        tensor is converted, and a schedule is evaluated at ``iterations``."""
        number = isinstance(value, (int, float, np.number))
        dtype = like.dtype.compute
        key = (("number", value) if number else id(value), dtype, like.device)
        found = self._constants.get(key)
        if found is None:
            if not number:  # alive until the step ends, so that its id names nothing else meanwhile
                self._held.append(value)
            current = self.current(value)
            if isinstance(current, Tensor):
                if current.shape != ():
                    raise ValueError(f"{type(self).__name__}: a hyperparameter tensor must be 0-d, got {current.shape}")
                found = astype(current.to(like.device), dtype)
            else:
                found = scalar_input(current, dtype, like.device)
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

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop every parameter's gradient, as PyTorch's; ``set_to_none=False`` makes each a
        zero tensor instead, which ``step()`` then applies (Adam's moments still decay)."""
        for p in self.params:
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = zeros_like(p.grad)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient, in place; on a lazy device, then run
        the traced step (a barrier). ``closure``, as PyTorch's, is called first (with
        gradients recorded) to compute the loss and gradients; its loss is returned."""
        if not self.params:
            raise RuntimeError(f"{type(self).__name__}: no parameters; pass them or a model to the optimizer")
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        self._apply([(i, p, p.grad) for i, p in enumerate(self.params) if p.grad is not None])
        return loss

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
                    self._add_to_group(var, self.param_groups[0])
                index = self._index[id(var)]
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

    def _add_to_group(self, var: Tensor, group: ParamGroup) -> None:
        """A variable Keras's ``apply_gradients`` meets first: optimized from now on, in ``group``."""
        with self._using(group):
            self.state.append(self.init_slots(var))
        group.params.append(var)
        self._index[id(var)] = len(self.params)
        self.params.append(var)
        self._group_of.append(group)

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
        self._follow_dtypes(updates)
        with no_grad(), self._step_constants():
            clipped = []
            for (i, p, _), grad in zip(updates, self._clipped([grad for _, _, grad in updates]), strict=True):
                if grad.device != p.device:
                    raise RuntimeError(f"gradient on {grad.device!r} for a parameter on {p.device!r}")
                if grad.shape != p.shape:
                    raise ValueError(f"gradient of shape {grad.shape} for a parameter of shape {p.shape}")
                clipped.append((i, p, grad))
            for (i, p, _), (new_p, new_slots) in zip(clipped, self._updated(clipped, device), strict=True):
                slots = self.state[i]
                p._assign(new_p)
                for name, value in new_slots.items():
                    if name in slots:
                        slots[name]._assign(value)
                    else:  # a slot needed from now on (momentum turned on mid-run)
                        slots[name] = value.detach()
            self.iterations._assign(self.iterations + 1)
        if device.is_lazy:
            barrier(device)  # a lazy training step ends here, as users of X10's barrier expect

    def _follow_dtypes(self, updates: list[tuple[int, Tensor, Tensor]]) -> None:
        """Slots of a float parameter converted since they were made (``model.to(dtype=...)``
        after the optimizer) take its dtype, their values kept, as PyTorch's slots, made at
        the first step, would have it."""
        for i, p, _ in updates:
            slots = self.state[i]
            for name, slot in slots.items():
                dtype = self.slot_dtype(name, p)
                if slot.dtype is not dtype and slot.dtype.is_float and p.dtype.is_float:
                    slots[name] = astype(slot, dtype).detach()

    def _updated(self, updates: list[tuple[int, Tensor, Tensor]], device: Device) -> list[tuple[Tensor, Slots]]:
        """The new parameter and slots of each (index, parameter, gradient)."""
        if updates and self._replays(device):
            return self._replayed(updates)
        found = []
        for i, p, grad in updates:
            with self._using(self._group_of[i]):
                found.append(self._in_compute_dtype(self.update, p, grad, self.state[i]))
        return found

    def apply_state(
        self, params: Iterable[Tensor], grads: Iterable[Tensor], state: list[Slots] | None = None
    ) -> tuple[list[Tensor], list[Slots]]:
        """Functional update: new parameters and slots, leaving the inputs untouched."""
        params, grads = list(params), list(grads)
        if state is None:
            with self._using(self.ParamGroup([], self._defaults)):
                state = [self.init_slots(p) for p in params]
        new_params, new_state = [], []
        groups = {id(p): group for p, group in zip(self.params, self._group_of, strict=True)}
        with no_grad(), self._step_constants():
            for p, g, slots in zip(params, grads, state, strict=True):
                with self._using(groups.get(id(p), self.ParamGroup([], self._defaults))):
                    new_p, new_slots = self._in_compute_dtype(self.update, p.detach(), g, slots)
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

    # Saving and restoring ------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Everything training needs to resume, as PyTorch's ``state_dict``: ``state`` (each
        parameter's slots as NumPy arrays, by the parameter's position), ``param_groups``
        (each group's hyperparameters and the positions of its parameters) and
        ``iterations``, the steps taken."""
        groups, start = [], 0
        for group in self.param_groups:
            saved = {name: group[name] for name in group if name != "params"}
            groups.append({**saved, "params": list(range(start, start + len(group.params)))})
            start += len(group.params)
        state = {i: {name: np.array(t.numpy()) for name, t in slots.items()} for i, slots in enumerate(self.state)}
        return {
            "state": state,
            "param_groups": groups,
            "iterations": 0 if self.iterations is None else int(self.iterations.item()),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved into this optimizer's slots, hyperparameters
        and step count, as PyTorch does: a slot made since this optimizer was (momentum
        turned on mid-run) is made, one the saved optimizer had not made is dropped. The
        groups, their hyperparameters' names and the parameters must be as many and of the
        same shapes (a ValueError names the first difference, and nothing is loaded)."""
        difference = self._difference(state_dict["param_groups"], state_dict["state"])
        if difference:
            raise ValueError(f"{type(self).__name__}.load_state_dict: {difference}")
        for saved, group in zip(state_dict["param_groups"], self.param_groups, strict=True):
            for key, value in saved.items():
                if key != "params":
                    group[key] = value
        for i, slots in enumerate(self.state):
            saved = state_dict["state"].get(i, {})
            for slot in [name for name in slots if name not in saved]:  # not made yet when it was saved
                del slots[slot]
            for slot, array in saved.items():
                if slot in slots:
                    slots[slot]._load(array)
                else:  # made mid-run (momentum turned on) before it was saved
                    slots[slot] = slot_data(self.params[i], array, self.slot_dtype(slot, self.params[i]))
        if self.iterations is not None:
            self.iterations._load(np.array(state_dict.get("iterations", 0), np.int64))

    def _difference(self, groups: list[dict[str, Any]], state: dict[int, dict[str, Any]]) -> str | None:
        if len(groups) != len(self.param_groups):
            return f"{len(groups)} parameter groups saved, this optimizer has {len(self.param_groups)}"
        for k, (saved, group) in enumerate(zip(groups, self.param_groups, strict=True)):
            if len(saved["params"]) != len(group.params):
                return f"group {k} saved {len(saved['params'])} parameters, this optimizer's has {len(group.params)}"
            # initial_lr is a scheduler's (saved before or after one was made, as PyTorch allows)
            names, mine = (sorted(set(g) - {"params", "initial_lr"}) for g in (saved, group))
            if names != mine:  # another kind of optimizer
                return f"group {k} saved the hyperparameters {names}, this optimizer's has {mine}"
        for i, slots in enumerate(self.state):
            saved = state.get(i, {})
            unmatched = set(saved).symmetric_difference(slots) - set(self.optional_slots or ())
            if self.optional_slots is not None and unmatched:  # another optimizer's (RMSprop's into Adam)
                return f"parameter {i} saved the slots {sorted(saved)}, this optimizer's has {sorted(slots)}"
            for slot, array in saved.items():
                # A slot this optimizer has not made yet is one of its parameter's shape or a scalar.
                expected = slots[slot].shape if slot in slots else self.params[i].shape
                if np.shape(array) != expected and (slot in slots or np.shape(array) != ()):
                    return f"slot {slot!r} of parameter {i} is {expected}, the saved one {np.shape(array)}"
        return None


_MISSING = object()


def _is_number_like(value: Any) -> bool:
    return isinstance(value, (int, float, np.number, Tensor)) or callable(value)


def _plain(value: Any) -> bool:
    """A number or a tuple of numbers: compared by value, where a tensor or a schedule is
    compared by identity."""
    items = value if isinstance(value, (tuple, list)) else (value,)
    return all(isinstance(v, (int, float, np.number)) for v in items)
