"""``keras.optimizers``: SGD, Adam, AdamW, RMSprop and Adagrad with Keras's arguments,
defaults and update formulas (which differ from PyTorch's in small ways: SGD keeps a
velocity that includes the learning rate, Adam folds both bias corrections into the step
size and adds epsilon to the root of the uncorrected second moment, ``lr * sqrt(1 -
beta_2 ** t) / (1 - beta_1 ** t) * m / (sqrt(v) + epsilon)``, RMSprop adds epsilon inside
the square root).

Each takes Keras's common arguments: ``weight_decay`` (decoupled: ``w -= lr * wd * w``
before the update), ``clipnorm``, ``clipvalue``, ``global_clipnorm`` and ``name``. Their
hyperparameters are inputs of a compiled step (``jit_inputs``), so a new learning rate, from
a callback or a schedule, never compiles the step again.
"""

from __future__ import annotations

from typing import Any

from braze.ops import astype, log, maximum, sqrt
from braze.optim.optimizer import (
    Hyperparameter,
    Optimizer,
    Slots,
    active,
    check_positive,
    full_data,
    one_minus_power,
    real,
    zeros_data,
)
from braze.tensor import Tensor


class KerasOptimizer(Optimizer):
    """The arguments every Keras optimizer takes, and its decoupled weight decay. The
    learning rate may be a number, a 0-d tensor or a schedule (``keras.optimizers.schedules``)."""

    optional_slots: tuple[str, ...] = ()  # a group holds no hyperparameters: the slots tell the kinds apart

    def __init__(
        self,
        learning_rate: Hyperparameter,
        weight_decay: Hyperparameter | None = None,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
        use_ema: bool = False,
        ema_momentum: float = 0.99,
        ema_overwrite_frequency: int | None = None,
        loss_scale_factor: float | None = None,
        gradient_accumulation_steps: int | None = None,
        name: str | None = None,
        **unknown: Any,
    ) -> None:
        kind = type(self).__name__
        if unknown:
            raise TypeError(f"{kind}: unexpected argument(s) {sorted(unknown)}")
        if use_ema or loss_scale_factor is not None or gradient_accumulation_steps is not None:
            raise NotImplementedError(
                f"{kind}: use_ema, loss_scale_factor and gradient_accumulation_steps are not supported"
            )
        # Keras refuses two: its optimizers apply one clipping, never a composition of them.
        given = {"clipnorm": clipnorm, "clipvalue": clipvalue, "global_clipnorm": global_clipnorm}
        if sum(value is not None for value in given.values()) > 1:
            shown = ", ".join(f"{name}={value}" for name, value in given.items())
            raise ValueError(f"{kind}: give only one of clipnorm, clipvalue and global_clipnorm, got {shown}")
        check_positive(kind, allow_zero=True, learning_rate=learning_rate)  # Keras takes a rate of 0
        check_positive(kind, allow_zero=True, weight_decay=weight_decay or 0.0)
        self.name = name or kind
        self.lr, self.weight_decay = learning_rate, weight_decay or 0.0
        self.clipnorm, self.clipvalue, self.global_clipnorm = clipnorm, clipvalue, global_clipnorm
        super().__init__()

    def h(self, value: Hyperparameter, like: Tensor) -> Tensor:
        return self.hyperparameter(value, like)

    def update(self, param: Tensor, grad: Tensor, slots: Slots) -> tuple[Tensor, Slots]:
        if active(self.weight_decay):
            decay = real(self.current(self.lr)) * real(self.weight_decay)
            param = param - param * self.h(decay, param)
        return self.keras_update(param, grad, slots)

    def keras_update(self, param: Tensor, grad: Tensor, slots: Slots) -> tuple[Tensor, Slots]:
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "learning_rate": self.lr,
            "weight_decay": self.weight_decay,
            "clipnorm": self.clipnorm,
            "clipvalue": self.clipvalue,
            "global_clipnorm": self.global_clipnorm,
            **self.options(),
        }

    def options(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> KerasOptimizer:
        return cls(**config)


class SGD(KerasOptimizer):
    """Keras's SGD: ``v = momentum * v - lr * g; w += v`` (Nesterov: ``w += momentum * v - lr * g``)."""

    jit_inputs = ("lr", "momentum", "weight_decay")
    optional_slots = ("momentum",)  # made once momentum is turned on

    def __init__(
        self, learning_rate: Hyperparameter = 0.01, momentum: Hyperparameter = 0.0, nesterov: bool = False, **kwargs
    ):
        check_positive("SGD", allow_zero=True, momentum=momentum)
        if not isinstance(momentum, Tensor) and momentum > 1:  # Keras's bound
            raise ValueError(f"SGD: momentum must be in [0, 1], got {momentum}")
        self.momentum, self.nesterov = momentum, bool(nesterov)
        super().__init__(learning_rate, **kwargs)

    def options(self) -> dict[str, Any]:
        return {"momentum": self.momentum, "nesterov": self.nesterov}

    def init_slots(self, param: Tensor) -> Slots:
        return {"momentum": zeros_data(param)} if active(self.momentum) else {}

    def keras_update(self, param, grad, slots):
        lr = self.h(self.lr, param)
        if not active(self.momentum):
            return param - grad * lr, {}
        m = self.h(self.momentum, param)
        previous = slots.get("momentum")  # none yet when momentum was turned on after the optimizer was made
        velocity = -grad * lr if previous is None else previous * m - grad * lr
        step = velocity * m - grad * lr if self.nesterov else velocity
        return param + step, {"momentum": velocity}


class Adam(KerasOptimizer):
    """Keras's Adam: the bias corrections in the step size, ``epsilon`` added to the root
    of the second moment (``amsgrad``: of its running maximum)."""

    jit_inputs = ("lr", "beta_1", "beta_2", "epsilon", "weight_decay")

    def __init__(
        self,
        learning_rate: Hyperparameter = 0.001,
        beta_1: Hyperparameter = 0.9,
        beta_2: Hyperparameter = 0.999,
        epsilon: Hyperparameter = 1e-7,
        amsgrad: bool = False,
        **kwargs: Any,
    ):
        kind = type(self).__name__
        for name, beta in (("beta_1", beta_1), ("beta_2", beta_2)):
            if not isinstance(beta, Tensor) and not 0 <= beta < 1:
                raise ValueError(f"{kind}: {name} must be in [0, 1), got {beta}")
        check_positive(kind, epsilon=epsilon)
        self.beta_1, self.beta_2, self.epsilon, self.amsgrad = beta_1, beta_2, epsilon, amsgrad
        super().__init__(learning_rate, **kwargs)

    def options(self) -> dict[str, Any]:
        return {"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon, "amsgrad": self.amsgrad}

    def init_slots(self, param: Tensor) -> Slots:
        slots = {"m": zeros_data(param), "v": zeros_data(param)}
        if self.amsgrad:
            slots["v_hat"] = zeros_data(param)
        return slots

    def keras_update(self, param, grad, slots):
        b1, b2 = real(self.beta_1), real(self.beta_2)
        step = astype(self.iterations + 1, param.dtype)  # Keras's: the optimizer's own step count
        # Keras's powers of the betas in the parameter's dtype, without the cancellation of
        # 1 - beta ** step (which would leave a few digits, differently in each backend's pow).
        correction1 = one_minus_power(log(self.h(b1, param)), step)
        correction = sqrt(one_minus_power(log(self.h(b2, param)), step)) / correction1
        rate = self.h(self.lr, param) * correction
        m = slots["m"] + (grad - slots["m"]) * self.h(1 - b1, param)
        v = slots["v"] + (grad * grad - slots["v"]) * self.h(1 - b2, param)
        new = {"m": m, "v": v}
        if self.amsgrad:
            v = new["v_hat"] = maximum(slots["v_hat"], v)
        return param - m * rate / (sqrt(v) + self.h(self.epsilon, param)), new


class AdamW(Adam):
    """Adam with decoupled weight decay, 0.004 by default (Keras's)."""

    def __init__(self, learning_rate: Hyperparameter = 0.001, weight_decay: Hyperparameter = 0.004, **kwargs: Any):
        super().__init__(learning_rate, weight_decay=weight_decay, **kwargs)


class RMSprop(KerasOptimizer):
    """Keras's RMSprop: ``epsilon`` inside the square root; optional momentum and centering."""

    jit_inputs = ("lr", "rho", "momentum", "epsilon", "weight_decay")
    optional_slots = ("momentum",)  # made once momentum is turned on

    def __init__(
        self,
        learning_rate: Hyperparameter = 0.001,
        rho: Hyperparameter = 0.9,
        momentum: Hyperparameter = 0.0,
        epsilon: Hyperparameter = 1e-7,
        centered: bool = False,
        **kwargs: Any,
    ):
        if not isinstance(rho, Tensor) and not 0 <= rho < 1:
            raise ValueError(f"RMSprop: rho must be in [0, 1), got {rho}")
        check_positive("RMSprop", epsilon=epsilon)
        check_positive("RMSprop", allow_zero=True, momentum=momentum)
        self.rho, self.momentum, self.epsilon, self.centered = rho, momentum, epsilon, centered
        super().__init__(learning_rate, **kwargs)

    def options(self) -> dict[str, Any]:
        return {"rho": self.rho, "momentum": self.momentum, "epsilon": self.epsilon, "centered": self.centered}

    def init_slots(self, param: Tensor) -> Slots:
        slots = {"velocity": zeros_data(param)}
        if active(self.momentum):
            slots["momentum"] = zeros_data(param)
        if self.centered:
            slots["average_gradient"] = zeros_data(param)
        return slots

    def keras_update(self, param, grad, slots):
        rho = real(self.rho)
        velocity = slots["velocity"] * self.h(rho, param) + grad * grad * self.h(1 - rho, param)
        new = {"velocity": velocity}
        epsilon = self.h(self.epsilon, param)
        if self.centered:
            average = slots["average_gradient"] * self.h(rho, param) + grad * self.h(1 - rho, param)
            new["average_gradient"] = average
            denominator = velocity - average * average + epsilon
        else:
            denominator = velocity + epsilon
        increment = grad * self.h(self.lr, param) / sqrt(denominator)
        if active(self.momentum):
            previous = slots.get("momentum")
            momentum = self.h(self.momentum, param)
            increment = new["momentum"] = increment if previous is None else previous * momentum + increment
        return param - increment, new


class Adagrad(KerasOptimizer):
    """Keras's Adagrad: squared gradients accumulated from ``initial_accumulator_value``."""

    jit_inputs = ("lr", "epsilon", "weight_decay")

    def __init__(
        self,
        learning_rate: Hyperparameter = 0.001,
        initial_accumulator_value: float = 0.1,
        epsilon: Hyperparameter = 1e-7,
        **kwargs: Any,
    ):
        check_positive("Adagrad", epsilon=epsilon)
        self.initial_accumulator_value, self.epsilon = float(initial_accumulator_value), epsilon
        super().__init__(learning_rate, **kwargs)

    def options(self) -> dict[str, Any]:
        return {"initial_accumulator_value": self.initial_accumulator_value, "epsilon": self.epsilon}

    def init_slots(self, param: Tensor) -> Slots:
        return {"accumulator": full_data(param, self.initial_accumulator_value)}

    def keras_update(self, param, grad, slots):
        accumulator = slots["accumulator"] + grad * grad
        step = grad * self.h(self.lr, param) / sqrt(accumulator + self.h(self.epsilon, param))
        return param - step, {"accumulator": accumulator}


CLASSES: dict[str, type[KerasOptimizer]] = {cls.__name__: cls for cls in (SGD, Adam, AdamW, RMSprop, Adagrad)}
_NAMES = {name.lower(): cls for name, cls in CLASSES.items()}


def get(identifier: str | Optimizer) -> Optimizer:
    """An optimizer from a Keras name (``"rmsprop"``, ``"Adam"``) with Keras's defaults, or
    an optimizer as it is."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str):
        found = _NAMES.get(identifier.lower())
        if found is None:
            raise ValueError(f"unknown optimizer {identifier!r}: expected one of {sorted(_NAMES)} or an optimizer")
        return found()
    optimizer = getattr(identifier, "optimizer", None)
    if isinstance(optimizer, Optimizer):  # a wrapper such as braze.distributed.DistributedOptimizer
        return identifier
    raise TypeError(f"an optimizer must be a name or an optimizer, got {type(identifier).__name__}")
