"""Adam and AdamW (decoupled weight decay)."""

from __future__ import annotations

from typing import Any

from braze.ops import power, sqrt
from braze.optim.optimizer import Optimizer, Slots, zeros_data
from braze.tensor import Tensor


class Adam(Optimizer):
    """Adam; ``weight_decay`` adds an L2 term to the gradient, as PyTorch's Adam does."""

    decoupled = False
    default_weight_decay = 0.0

    def __init__(
        self,
        params: Any = None,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float | None = None,
    ) -> None:
        weight_decay = self.default_weight_decay if weight_decay is None else weight_decay
        if lr <= 0 or not (0 <= betas[0] < 1 and 0 <= betas[1] < 1) or eps <= 0 or weight_decay < 0:
            raise ValueError(f"{type(self).__name__}: invalid lr={lr}, betas={betas}, eps={eps} or weight_decay")
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        super().__init__(params)

    def get_config(self) -> dict[str, Any]:
        return {"lr": self.lr, "betas": list(self.betas), "eps": self.eps, "weight_decay": self.weight_decay}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Adam:
        return cls(**{**config, "betas": tuple(config["betas"])})

    def init_slots(self, param: Tensor) -> Slots:
        return {"m": zeros_data(param), "v": zeros_data(param), "step": zeros_data(param, ())}

    def update(self, param: Tensor, grad: Tensor, slots: Slots) -> tuple[Tensor, Slots]:
        b1, b2 = self.betas

        def c(value: float) -> Tensor:
            return self.constant(value, param)

        if self.weight_decay and not self.decoupled:
            grad = grad + param * c(self.weight_decay)
        m = slots["m"] * c(b1) + grad * c(1 - b1)
        v = slots["v"] * c(b2) + grad * grad * c(1 - b2)
        # The step count is a tensor slot, so the bias corrections are computed in the graph:
        # a traced or jitted step is the same computation every time.
        step = slots["step"] + c(1.0)
        step_size = c(self.lr) / (c(1.0) - power(c(b1), step))
        denominator = sqrt(v) / sqrt(c(1.0) - power(c(b2), step)) + c(self.eps)
        if self.weight_decay and self.decoupled:
            param = param * c(1 - self.lr * self.weight_decay)
        return param - m / denominator * step_size, {"m": m, "v": v, "step": step}


class AdamW(Adam):
    """Adam with weight decay applied to the parameters directly (Loshchilov and Hutter);
    the weight decay defaults to 0.01, as in PyTorch."""

    decoupled = True
    default_weight_decay = 0.01
