"""PyTorch's Adadelta, RMSprop and Adagrad: per-element step sizes from running sums of
squared gradients, with PyTorch's arguments (in its order), defaults and update formulas,
``maximize`` included (Keras's RMSprop and Adagrad, which place epsilon differently, are in
``braze.optim.keras``). PyTorch's choices of implementation (``foreach``, ``fused``,
``capturable``, ``differentiable``) are taken at their defaults and refused otherwise."""

from __future__ import annotations

from typing import Any

from braze.ops import sqrt
from braze.optim.optimizer import Hyperparameter, Optimizer, Slots, active, check_positive, full_data, zeros_data
from braze.tensor import Tensor

# What PyTorch's implementation options ask for, which braze's one update rule does not have.
_TORCH_ONLY = {
    "foreach": "PyTorch's multi-tensor kernels",
    "fused": "PyTorch's fused kernels",
    "capturable": "a step captured in a CUDA graph",
    "differentiable": "a step that autograd differentiates through",
}


def _refuse_torch_only(optimizer: str, **options: Any) -> None:
    """Accept PyTorch's implementation options at their defaults (None or False), which a
    program may spell out; refuse any other value rather than ignore what it asks for."""
    for name, value in options.items():
        if value is not None and value is not False:
            raise NotImplementedError(
                f"{optimizer}: {name}={value!r} asks for {_TORCH_ONLY[name]}, which braze does not have: leave it out"
            )


class _Adaptive(Optimizer):
    """What the three share: ``maximize`` (the gradient negated) and then L2 ``weight_decay``
    added to it, as PyTorch's, and its configuration as the constructor's arguments."""

    def get_config(self) -> dict[str, Any]:
        return {**{name: getattr(self, name) for name in self.jit_inputs}, "maximize": self.maximize}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> _Adaptive:
        return cls(**config)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        # A state saved before these optimizers took maximize has none in its groups: it was
        # False (PyTorch's own optimizers fill it in so too).
        groups = [{"maximize": False, **g} for g in state_dict["param_groups"]]
        super().load_state_dict({**state_dict, "param_groups": groups})

    def decayed(self, param: Tensor, grad: Tensor, h: dict[str, Tensor]) -> Tensor:
        if "maximize" in h:  # -1, before the decay (PyTorch's order)
            grad = grad * h["maximize"]
        return grad + param * h["decay"] if "decay" in h else grad

    def common_inputs(self) -> dict[str, Hyperparameter]:
        found = {"lr": self.lr, "eps": self.eps}
        # An input by name, so a recorded step of a group that maximizes is never replayed
        # for one that minimizes.
        if self.maximize:
            found["maximize"] = -1.0
        if active(self.weight_decay):
            found["decay"] = self.weight_decay
        return found


class Adadelta(_Adaptive):
    """``v = rho v + (1 - rho) g^2``, ``d = sqrt(u + eps) / sqrt(v + eps) g``,
    ``u = rho u + (1 - rho) d^2``, ``w -= lr d`` (PyTorch's, lr 1.0 by default)."""

    jit_inputs = ("lr", "rho", "eps", "weight_decay")
    optional_slots = ()

    def __init__(
        self,
        params: Any = None,
        lr: Hyperparameter = 1.0,
        rho: Hyperparameter = 0.9,
        eps: Hyperparameter = 1e-6,
        weight_decay: Hyperparameter = 0.0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        _refuse_torch_only("Adadelta", foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize)

    def check(self, hyperparameters: dict[str, Hyperparameter]) -> None:
        check_positive("Adadelta", allow_zero=True, **hyperparameters)
        rho = hyperparameters["rho"]
        if not isinstance(rho, Tensor) and rho > 1:
            raise ValueError(f"Adadelta: rho must be in [0, 1], got {rho}")

    def init_slots(self, param: Tensor) -> Slots:
        return {"square_avg": zeros_data(param), "acc_delta": zeros_data(param)}

    def rule_inputs(self) -> dict[str, Hyperparameter]:
        return {**self.common_inputs(), "rho": self.rho, "1-rho": 1 - self.rho}

    def rule(self, param: Tensor, grad: Tensor, slots: Slots, h: dict[str, Tensor]) -> tuple[Tensor, Slots]:
        grad = self.decayed(param, grad, h)
        square_avg = slots["square_avg"] * h["rho"] + grad * grad * h["1-rho"]
        delta = sqrt(slots["acc_delta"] + h["eps"]) / sqrt(square_avg + h["eps"]) * grad
        acc_delta = slots["acc_delta"] * h["rho"] + delta * delta * h["1-rho"]
        return param - delta * h["lr"], {"square_avg": square_avg, "acc_delta": acc_delta}


class RMSprop(_Adaptive):
    """``v = alpha v + (1 - alpha) g^2``; centered, ``v`` less the square of the gradients'
    running mean; ``w -= lr g / (sqrt(v) + eps)``, or with ``momentum`` a buffer
    ``b = momentum b + g / (sqrt(v) + eps)`` and ``w -= lr b`` (PyTorch's: epsilon outside
    the root, lr 1e-2 by default)."""

    jit_inputs = ("lr", "alpha", "eps", "weight_decay", "momentum")
    optional_slots = ("momentum_buffer", "grad_avg")  # made once momentum or centering is on

    def __init__(
        self,
        params: Any = None,
        lr: Hyperparameter = 1e-2,
        alpha: Hyperparameter = 0.99,
        eps: Hyperparameter = 1e-8,
        weight_decay: Hyperparameter = 0.0,
        momentum: Hyperparameter = 0.0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        _refuse_torch_only("RMSprop", capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(
            params,
            lr=lr,
            alpha=alpha,
            eps=eps,
            weight_decay=weight_decay,
            momentum=momentum,
            centered=centered,
            maximize=maximize,
        )

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "centered": self.centered}

    def check(self, hyperparameters: dict[str, Hyperparameter]) -> None:
        numbers = {k: v for k, v in hyperparameters.items() if k not in ("centered", "maximize")}
        check_positive("RMSprop", allow_zero=True, **numbers)

    def init_slots(self, param: Tensor) -> Slots:
        slots = {"square_avg": zeros_data(param)}
        if active(self.momentum):
            slots["momentum_buffer"] = zeros_data(param)
        if self.centered:
            slots["grad_avg"] = zeros_data(param)
        return slots

    def rule_inputs(self) -> dict[str, Hyperparameter]:
        found = {**self.common_inputs(), "alpha": self.alpha, "1-alpha": 1 - self.alpha}
        if active(self.momentum):
            found["momentum"] = self.momentum
        return found

    def rule(self, param: Tensor, grad: Tensor, slots: Slots, h: dict[str, Tensor]) -> tuple[Tensor, Slots]:
        grad = self.decayed(param, grad, h)
        square_avg = slots["square_avg"] * h["alpha"] + grad * grad * h["1-alpha"]
        kept = {"square_avg": square_avg}
        variance = square_avg
        if self.centered:
            grad_avg = slots["grad_avg"] * h["alpha"] + grad * h["1-alpha"]
            variance, kept["grad_avg"] = square_avg - grad_avg * grad_avg, grad_avg
        step = grad / (sqrt(variance) + h["eps"])
        if "momentum" in h:
            previous = slots.get("momentum_buffer")  # none yet where momentum was turned on mid-run: zeros
            step = step if previous is None else previous * h["momentum"] + step
            kept["momentum_buffer"] = step
        return param - step * h["lr"], kept


class Adagrad(_Adaptive):
    """``s += g^2``, ``w -= lr / (1 + (t - 1) lr_decay) g / (sqrt(s) + eps)`` (PyTorch's,
    lr 1e-2, the sum starting at ``initial_accumulator_value``)."""

    jit_inputs = ("lr", "lr_decay", "eps", "weight_decay")
    count_slots = ("step",)
    optional_slots = ()

    def __init__(
        self,
        params: Any = None,
        lr: Hyperparameter = 1e-2,
        lr_decay: Hyperparameter = 0.0,
        weight_decay: Hyperparameter = 0.0,
        initial_accumulator_value: float = 0.0,
        eps: Hyperparameter = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        _refuse_torch_only("Adagrad", foreach=foreach, differentiable=differentiable, fused=fused)
        self.initial_accumulator_value = float(initial_accumulator_value)
        super().__init__(params, lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps, maximize=maximize)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "initial_accumulator_value": self.initial_accumulator_value}

    def check(self, hyperparameters: dict[str, Hyperparameter]) -> None:
        check_positive("Adagrad", allow_zero=True, **hyperparameters)
        if self.initial_accumulator_value < 0:
            raise ValueError(
                f"Adagrad: initial_accumulator_value must be 0 or more, got {self.initial_accumulator_value}"
            )

    def init_slots(self, param: Tensor) -> Slots:
        return {
            "sum": full_data(param, self.initial_accumulator_value),
            "step": zeros_data(param, (), param.dtype.compute),
        }

    def rule_inputs(self) -> dict[str, Hyperparameter]:
        return {**self.common_inputs(), "lr_decay": self.lr_decay}

    def rule(self, param: Tensor, grad: Tensor, slots: Slots, h: dict[str, Tensor]) -> tuple[Tensor, Slots]:
        grad = self.decayed(param, grad, h)
        step = slots["step"] + self.constant(1.0, param)
        rate = h["lr"] / ((step - self.constant(1.0, param)) * h["lr_decay"] + self.constant(1.0, param))
        total = slots["sum"] + grad * grad
        return param - grad / (sqrt(total) + h["eps"]) * rate, {"sum": total, "step": step}
