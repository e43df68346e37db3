"""Stochastic gradient descent with momentum, Nesterov momentum and weight decay (PyTorch's)."""

from __future__ import annotations

from typing import Any

from braze.optim.optimizer import Optimizer, Slots, zeros_data
from braze.tensor import Tensor


class SGD(Optimizer):
    def __init__(
        self,
        params: Any = None,
        lr: float = 0.01,
        momentum: float = 0.0,
        nesterov: bool = False,
        weight_decay: float = 0.0,
    ) -> None:
        if lr <= 0 or momentum < 0 or weight_decay < 0:
            raise ValueError(f"SGD: invalid lr={lr}, momentum={momentum} or weight_decay={weight_decay}")
        if nesterov and momentum == 0:
            raise ValueError("SGD: Nesterov momentum needs momentum > 0")
        self.lr, self.momentum, self.nesterov, self.weight_decay = lr, momentum, nesterov, weight_decay
        super().__init__(params)

    def get_config(self) -> dict[str, Any]:
        return {"lr": self.lr, "momentum": self.momentum, "nesterov": self.nesterov, "weight_decay": self.weight_decay}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> SGD:
        return cls(**config)

    def init_slots(self, param: Tensor) -> Slots:
        return {"momentum": zeros_data(param)} if self.momentum else {}

    def update(self, param: Tensor, grad: Tensor, slots: Slots) -> tuple[Tensor, Slots]:
        lr = self.constant(self.lr, param)
        if self.weight_decay:
            grad = grad + param * self.constant(self.weight_decay, param)
        if not self.momentum:
            return param - grad * lr, {}
        momentum = self.constant(self.momentum, param)
        velocity = slots["momentum"] * momentum + grad
        direction = grad + velocity * momentum if self.nesterov else velocity
        return param - direction * lr, {"momentum": velocity}
