"""Adam and AdamW (decoupled weight decay)."""

from __future__ import annotations

from typing import Any

from braze.ops import log1p, sqrt
from braze.optim.optimizer import (
    Hyperparameter,
    Optimizer,
    Slots,
    active,
    check_positive,
    one_minus_power,
    real,
    zeros_data,
)
from braze.tensor import Tensor


class Adam(Optimizer):
    """Adam; ``weight_decay`` adds an L2 term to the gradient, as PyTorch's Adam does. ``lr``
    may be a number, a 0-d tensor or a schedule (``braze.optim.schedules``)."""

    decoupled = False
    default_weight_decay = 0.0
    jit_inputs = ("lr", "betas", "eps", "weight_decay")
    count_slots = ("step",)
    optional_slots = ()

    def __init__(
        self,
        params: Any = None,
        lr: Hyperparameter = 1e-3,
        betas: tuple[Hyperparameter, Hyperparameter] = (0.9, 0.999),
        eps: Hyperparameter = 1e-8,
        weight_decay: Hyperparameter | None = None,
    ) -> None:
        weight_decay = self.default_weight_decay if weight_decay is None else weight_decay
        super().__init__(params, lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay)

    def check(self, hyperparameters: dict[str, Hyperparameter]) -> None:
        name, betas = type(self).__name__, hyperparameters["betas"]
        # PyTorch's bounds: lr and eps may be 0, no hyperparameter negative.
        check_positive(
            name,
            allow_zero=True,
            lr=hyperparameters["lr"],
            eps=hyperparameters["eps"],
            weight_decay=hyperparameters["weight_decay"],
        )
        if len(betas) != 2 or not all(isinstance(b, Tensor) or 0 <= b < 1 for b in betas):
            raise ValueError(f"{name}: invalid betas={betas}: expected two numbers in [0, 1)")

    def get_config(self) -> dict[str, Any]:
        return {"lr": self.lr, "betas": list(self.betas), "eps": self.eps, "weight_decay": self.weight_decay}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Adam:
        return cls(**{**config, "betas": tuple(config["betas"])})

    def init_slots(self, param: Tensor) -> Slots:
        return {"m": zeros_data(param), "v": zeros_data(param), "step": zeros_data(param, (), param.dtype.compute)}

    def rule_inputs(self) -> dict[str, Hyperparameter]:
        b1, b2 = (real(b) for b in self.betas)
        found = {"b1": b1, "1-b1": 1 - b1, "b2": b2, "1-b2": 1 - b2, "lr": self.lr, "eps": self.eps}
        if active(self.weight_decay):
            decoupled = 1 - real(self.current(self.lr)) * real(self.weight_decay)
            found["decay"] = decoupled if self.decoupled else self.weight_decay
        return found

    def rule(self, param: Tensor, grad: Tensor, slots: Slots, h: dict[str, Tensor]) -> tuple[Tensor, Slots]:
        def c(value: float) -> Tensor:
            return self.constant(value, param)

        if "decay" in h and not self.decoupled:
            grad = grad + param * h["decay"]
        m = slots["m"] * h["b1"] + grad * h["1-b1"]
        v = slots["v"] * h["b2"] + grad * grad * h["1-b2"]
        # The step count is a tensor slot, so the bias corrections are computed in the graph:
        # a traced or jitted step is the same computation every time.
        step = slots["step"] + c(1.0)
        # From 1 - beta, which is exact to float32 rounding where beta is not (PyTorch's
        # bias corrections are in double precision).
        step_size = h["lr"] / one_minus_power(log1p(-h["1-b1"]), step)
        denominator = sqrt(v) / sqrt(one_minus_power(log1p(-h["1-b2"]), step)) + h["eps"]
        if "decay" in h and self.decoupled:
            param = param * h["decay"]
        return param - m / denominator * step_size, {"m": m, "v": v, "step": step}


class AdamW(Adam):
    """Adam with weight decay applied to the parameters directly (Loshchilov and Hutter);
    the weight decay defaults to 0.01, as in PyTorch."""

    decoupled = True
    default_weight_decay = 0.01
