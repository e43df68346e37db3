"""Stochastic gradient descent with momentum, Nesterov momentum and weight decay (PyTorch's)."""

from __future__ import annotations

from typing import Any

from braze.optim.optimizer import Hyperparameter, Optimizer, Slots, active, check_positive, zeros_data
from braze.tensor import Tensor


class SGD(Optimizer):
    """Stochastic gradient descent, with optional (Nesterov) momentum and L2 ``weight_decay``.

    ``lr`` may be a number, a 0-d tensor or a schedule (``braze.optim.schedules``); a zero
    ``momentum`` or ``weight_decay`` leaves its term out."""

    jit_inputs = ("lr", "momentum", "weight_decay")

    def __init__(
        self,
        params: Any = None,
        lr: Hyperparameter = 0.01,
        momentum: Hyperparameter = 0.0,
        nesterov: bool = False,
        weight_decay: Hyperparameter = 0.0,
    ) -> None:
        super().__init__(params, lr=lr, momentum=momentum, nesterov=nesterov, weight_decay=weight_decay)

    def check(self, hyperparameters: dict[str, Hyperparameter]) -> None:
        momentum = hyperparameters["momentum"]
        # PyTorch's bounds: a rate of 0 is allowed (a schedule's end), a negative one is not.
        check_positive(
            "SGD",
            allow_zero=True,
            lr=hyperparameters["lr"],
            momentum=momentum,
            weight_decay=hyperparameters["weight_decay"],
        )
        if hyperparameters["nesterov"] and not active(momentum):
            raise ValueError("SGD: Nesterov momentum needs momentum > 0")

    def get_config(self) -> dict[str, Any]:
        return {"lr": self.lr, "momentum": self.momentum, "nesterov": self.nesterov, "weight_decay": self.weight_decay}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> SGD:
        return cls(**config)

    def init_slots(self, param: Tensor) -> Slots:
        return {"momentum": zeros_data(param)} if active(self.momentum) else {}

    def rule_inputs(self) -> dict[str, Hyperparameter]:
        found = {"lr": self.lr}
        if active(self.weight_decay):
            found["decay"] = self.weight_decay
        if active(self.momentum):
            found["nesterov momentum" if self.nesterov else "momentum"] = self.momentum
        return found

    def rule(self, param: Tensor, grad: Tensor, slots: Slots, h: dict[str, Tensor]) -> tuple[Tensor, Slots]:
        if "decay" in h:
            grad = grad + param * h["decay"]
        momentum = h.get("momentum", h.get("nesterov momentum"))
        if momentum is None:
            return param - grad * h["lr"], {}
        previous = slots.get("momentum")  # none yet when momentum was turned on after the optimizer was made
        velocity = grad if previous is None else previous * momentum + grad
        direction = grad + velocity * momentum if "nesterov momentum" in h else velocity
        return param - direction * h["lr"], {"momentum": velocity}
