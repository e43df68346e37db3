"""``keras.optimizers``: SGD, Adam, AdamW, RMSprop and Adagrad with Keras's arguments,
defaults and update formulas (which differ from PyTorch's in small ways: SGD keeps a
velocity that includes the learning rate, Adam's epsilon is added after the bias
correction of the second moment, RMSprop adds epsilon inside the square root).

Each takes Keras's common arguments: ``weight_decay`` (decoupled: ``w -= lr * wd * w``
before the update), ``clipnorm``, ``clipvalue``, ``global_clipnorm`` and ``name``.
"""

from __future__ import annotations

from typing import Any

from braze.ops import maximum, power, sqrt
from braze.optim.optimizer import Optimizer, Slots, full_data, zeros_data
from braze.tensor import Tensor


class KerasOptimizer(Optimizer):
    """The arguments every Keras optimizer takes, and its decoupled weight decay."""

    def __init__(
        self,
        learning_rate: float,
        weight_decay: float | None = None,
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
        if not isinstance(learning_rate, (int, float)):
            raise NotImplementedError(
                f"{kind}: learning_rate must be a number, got {type(learning_rate).__name__} (schedules are not "
                "supported yet: set optimizer.learning_rate between epochs, or use callbacks.ReduceLROnPlateau or "
                "LearningRateScheduler)"
            )
        if use_ema or loss_scale_factor is not None or gradient_accumulation_steps is not None:
            raise NotImplementedError(
                f"{kind}: use_ema, loss_scale_factor and gradient_accumulation_steps are not supported"
            )
        if clipnorm is not None and global_clipnorm is not None:
            raise ValueError(f"{kind}: give clipnorm or global_clipnorm, not both")
        self.name = name or kind
        self.weight_decay = weight_decay
        self.clipnorm, self.clipvalue, self.global_clipnorm = clipnorm, clipvalue, global_clipnorm
        self.learning_rate = learning_rate
        super().__init__()

    def update(self, param: Tensor, grad: Tensor, slots: Slots) -> tuple[Tensor, Slots]:
        if self.weight_decay:
            param = param - param * self.constant(self.lr * self.weight_decay, param)
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
    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.0, nesterov: bool = False, **kwargs: Any):
        if not 0 <= momentum <= 1:
            raise ValueError(f"SGD: momentum must be in [0, 1], got {momentum}")
        self.momentum, self.nesterov = float(momentum), bool(nesterov)
        super().__init__(learning_rate, **kwargs)

    def options(self) -> dict[str, Any]:
        return {"momentum": self.momentum, "nesterov": self.nesterov}

    def init_slots(self, param: Tensor) -> Slots:
        return {"momentum": zeros_data(param)} if self.momentum else {}

    def keras_update(self, param, grad, slots):
        lr = self.constant(self.lr, param)
        if not self.momentum:
            return param - grad * lr, {}
        m = self.constant(self.momentum, param)
        velocity = slots["momentum"] * m - grad * lr
        step = velocity * m - grad * lr if self.nesterov else velocity
        return param + step, {"momentum": velocity}


class Adam(KerasOptimizer):
    def __init__(
        self,
        learning_rate: float = 0.001,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-7,
        amsgrad: bool = False,
        **kwargs: Any,
    ):
        if not (0 <= beta_1 < 1 and 0 <= beta_2 < 1) or epsilon <= 0:
            raise ValueError(f"{type(self).__name__}: invalid beta_1={beta_1}, beta_2={beta_2} or epsilon={epsilon}")
        self.beta_1, self.beta_2, self.epsilon, self.amsgrad = float(beta_1), float(beta_2), float(epsilon), amsgrad
        super().__init__(learning_rate, **kwargs)

    def options(self) -> dict[str, Any]:
        return {"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon, "amsgrad": self.amsgrad}

    def init_slots(self, param: Tensor) -> Slots:
        slots = {"m": zeros_data(param), "v": zeros_data(param), "step": zeros_data(param, ())}
        if self.amsgrad:
            slots["v_hat"] = zeros_data(param)
        return slots

    def keras_update(self, param, grad, slots):
        def c(value: float) -> Tensor:
            return self.constant(value, param)

        b1, b2 = self.beta_1, self.beta_2
        step = slots["step"] + c(1.0)  # a tensor slot: the bias corrections are in the graph
        rate = c(self.lr) * sqrt(c(1.0) - power(c(b2), step)) / (c(1.0) - power(c(b1), step))
        m = slots["m"] + (grad - slots["m"]) * c(1 - b1)
        v = slots["v"] + (grad * grad - slots["v"]) * c(1 - b2)
        new = {"m": m, "v": v, "step": step}
        if self.amsgrad:
            v = new["v_hat"] = maximum(slots["v_hat"], v)
        return param - m * rate / (sqrt(v) + c(self.epsilon)), new


class AdamW(Adam):
    """Adam with decoupled weight decay, 0.004 by default (Keras's)."""

    def __init__(self, learning_rate: float = 0.001, weight_decay: float = 0.004, **kwargs: Any):
        super().__init__(learning_rate, weight_decay=weight_decay, **kwargs)


class RMSprop(KerasOptimizer):
    def __init__(
        self,
        learning_rate: float = 0.001,
        rho: float = 0.9,
        momentum: float = 0.0,
        epsilon: float = 1e-7,
        centered: bool = False,
        **kwargs: Any,
    ):
        if not 0 <= rho < 1 or momentum < 0 or epsilon <= 0:
            raise ValueError(f"RMSprop: invalid rho={rho}, momentum={momentum} or epsilon={epsilon}")
        self.rho, self.momentum, self.epsilon, self.centered = float(rho), float(momentum), float(epsilon), centered
        super().__init__(learning_rate, **kwargs)

    def options(self) -> dict[str, Any]:
        return {"rho": self.rho, "momentum": self.momentum, "epsilon": self.epsilon, "centered": self.centered}

    def init_slots(self, param: Tensor) -> Slots:
        slots = {"velocity": zeros_data(param)}
        if self.momentum:
            slots["momentum"] = zeros_data(param)
        if self.centered:
            slots["average_gradient"] = zeros_data(param)
        return slots

    def keras_update(self, param, grad, slots):
        def c(value: float) -> Tensor:
            return self.constant(value, param)

        velocity = slots["velocity"] * c(self.rho) + grad * grad * c(1 - self.rho)
        new = {"velocity": velocity}
        if self.centered:
            average = new["average_gradient"] = slots["average_gradient"] * c(self.rho) + grad * c(1 - self.rho)
            denominator = velocity - average * average + c(self.epsilon)
        else:
            denominator = velocity + c(self.epsilon)
        increment = grad * c(self.lr) / sqrt(denominator)
        if self.momentum:
            increment = new["momentum"] = slots["momentum"] * c(self.momentum) + increment
        return param - increment, new


class Adagrad(KerasOptimizer):
    def __init__(
        self, learning_rate: float = 0.001, initial_accumulator_value: float = 0.1, epsilon: float = 1e-7, **kwargs
    ):
        self.initial_accumulator_value, self.epsilon = float(initial_accumulator_value), float(epsilon)
        super().__init__(learning_rate, **kwargs)

    def options(self) -> dict[str, Any]:
        return {"initial_accumulator_value": self.initial_accumulator_value, "epsilon": self.epsilon}

    def init_slots(self, param: Tensor) -> Slots:
        return {"accumulator": full_data(param, self.initial_accumulator_value)}

    def keras_update(self, param, grad, slots):
        accumulator = slots["accumulator"] + grad * grad
        return param - grad * self.constant(self.lr, param) / sqrt(accumulator + self.constant(self.epsilon, param)), {
            "accumulator": accumulator
        }


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
