"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay (PyTorch's)."""

from __future__ import annotations

from typing import Any

from braze.ops import maximum
from braze.optim.optimizer import Hyperparameter, Optimizer, Slots, active, check_kind, check_positive, zeros_data
from braze.tensor import Tensor


class SGD(Optimizer):
    """Stochastic gradient descent, with optional (Nesterov) momentum, ``dampening`` and L2
    ``weight_decay``, with PyTorch's arguments in PyTorch's order and defaults
    (``SGD(params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False)``).

    ``lr`` may be a number, a 0-d tensor or a schedule (``braze.optim.schedules``); a zero
    ``momentum``, ``dampening`` or ``weight_decay`` leaves its term out. As PyTorch's, the
    momentum buffer starts as the first gradient, then is ``momentum * buf + (1 -
    dampening) * grad``."""

    jit_inputs = ("lr", "momentum", "dampening", "weight_decay")
    optional_slots = ("momentum", "started")  # made once momentum (dampening) is turned on

    def __init__(
        self,
        params: Any = None,
        lr: Hyperparameter = 1e-3,
        momentum: Hyperparameter = 0.0,
        dampening: Hyperparameter = 0.0,
        weight_decay: Hyperparameter = 0.0,
        nesterov: bool = False,
    ) -> None:
        super().__init__(
            params, lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov
        )

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
        check_kind("SGD", dampening=hyperparameters["dampening"])  # any number, as PyTorch's
        if hyperparameters["nesterov"] and (not active(momentum) or active(hyperparameters["dampening"])):
            raise ValueError("SGD: Nesterov momentum needs momentum > 0 and zero dampening (as PyTorch's)")

    def get_config(self) -> dict[str, Any]:
        return {
            "lr": self.lr,
            "momentum": self.momentum,
            "dampening": self.dampening,
            "weight_decay": self.weight_decay,
            "nesterov": self.nesterov,
        }

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> SGD:
        return cls(**config)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        # A state saved before braze's SGD took dampening has none in its groups: it was 0.
        groups = [g if "dampening" in g else {**g, "dampening": 0.0} for g in state_dict["param_groups"]]
        super().load_state_dict({**state_dict, "param_groups": groups})

    def init_slots(self, param: Tensor) -> Slots:
        if not active(self.momentum):
            return {}
        slots = {"momentum": zeros_data(param)}
        if active(self.dampening):
            # 0 until the first step, then 1: PyTorch's buffer starts as the first gradient,
            # undamped, and the zero buffer alone cannot tell the first step from a later one.
            slots["started"] = zeros_data(param, ())
        return slots

    def rule_inputs(self) -> dict[str, Hyperparameter]:
        found = {"lr": self.lr}
        if active(self.weight_decay):
            found["decay"] = self.weight_decay
        if active(self.momentum):
            found["nesterov momentum" if self.nesterov else "momentum"] = self.momentum
            if active(self.dampening):
                found["dampening"] = self.dampening
        return found

    def rule(self, param: Tensor, grad: Tensor, slots: Slots, h: dict[str, Tensor]) -> tuple[Tensor, Slots]:
        if "decay" in h:
            grad = grad + param * h["decay"]
        momentum = h.get("momentum", h.get("nesterov momentum"))
        if momentum is None:
            return param - grad * h["lr"], {}
        previous = slots.get("momentum")  # none yet when momentum was turned on after the optimizer was made
        if previous is None:
            velocity, kept = grad, {}
        elif "dampening" in h:
            started = slots.get("started")  # none when dampening was turned on after the optimizer was made
            one = self.constant(1.0, param)
            damped = one - h["dampening"] if started is None else one - h["dampening"] * started
            velocity = previous * momentum + grad * damped
            kept = {} if started is None else {"started": maximum(started, one)}
        else:
            velocity, kept = previous * momentum + grad, {}
        direction = grad + velocity * momentum if "nesterov momentum" in h else velocity
        return param - direction * h["lr"], {"momentum": velocity, **kept}
