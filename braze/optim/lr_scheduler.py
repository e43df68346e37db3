"""PyTorch's learning-rate schedulers (``torch.optim.lr_scheduler``).

A scheduler sets the ``lr`` of each of its optimizer's parameter groups to a Python number
on every ``step()`` (called once per epoch, or per batch, outside the training step). The
learning rate is an input of a jitted step and device data on a lazy device, so a new
value never recompiles. Each value comes from the scheduler's closed form at
``last_epoch`` (what PyTorch computes when given an epoch), from ``base_lrs``: each
group's learning rate when its first scheduler was made, kept as the group's
``initial_lr``. One scheduler (or a
:class:`SequentialLR` of several) drives an optimizer at a time.
"""

from __future__ import annotations

import bisect
import math
import types
from collections.abc import Callable, Sequence
from typing import Any

from braze.optim.optimizer import Optimizer


class LRScheduler:
    """The base class: ``get_lr()`` is the closed form at ``last_epoch``; making a scheduler
    takes its first step, to epoch 0, as in PyTorch."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not hasattr(optimizer, "param_groups"):
            raise TypeError(f"{type(self).__name__}: expected an optimizer, got {type(optimizer).__name__}")
        groups = _groups(optimizer)
        if last_epoch == -1:
            for group in groups:
                if "initial_lr" in group:
                    continue
                if not isinstance(group["lr"], (int, float)):
                    raise TypeError(
                        f"{type(self).__name__} sets the learning rate to numbers; the optimizer's is "
                        f"{type(group['lr']).__name__} (a schedule object already decides it)"
                    )
                group["initial_lr"] = group["lr"]
        elif not all("initial_lr" in group for group in groups):
            raise ValueError(f"{type(self).__name__}: last_epoch={last_epoch} resumes a schedule; make one first")
        self.optimizer = optimizer
        self.base_lrs = [group["initial_lr"] for group in groups]
        self.last_epoch = last_epoch
        self.step()

    def get_lr(self) -> list[float]:
        raise NotImplementedError(f"{type(self).__name__} must define get_lr()")

    def step(self, epoch: int | None = None) -> None:
        """Advance to the next epoch (or to ``epoch``) and set the optimizer's learning rate."""
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        self._last_lr = self.get_lr()
        for group, lr in zip(_groups(self.optimizer), self._last_lr, strict=True):
            group["lr"] = lr

    def get_last_lr(self) -> list[float]:
        """The learning rates the last ``step()`` set, one per parameter group."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer (and functions, which are not saved, as in PyTorch)."""
        return {k: v for k, v in vars(self).items() if k != "optimizer" and not callable(v)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        vars(self).update(state)


class StepLR(LRScheduler):
    """``base_lr * gamma ** (epoch // step_size)``."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        if step_size < 1:
            raise ValueError(f"StepLR: step_size must be 1 or more, got {step_size}")
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """``base_lr * gamma ** (how many milestones the epoch has reached)``."""

    def __init__(
        self, optimizer: Optimizer, milestones: Sequence[int], gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.milestones, self.gamma = sorted(milestones), gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        reached = bisect.bisect_right(self.milestones, self.last_epoch)
        return [base * self.gamma**reached for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """``base_lr * gamma ** epoch``."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """``eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2`` (SGDR without
    restarts: past ``T_max`` the cosine rises again, as in PyTorch)."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:  # noqa: N803 - PyTorch's name
        if T_max < 1:
            raise ValueError(f"CosineAnnealingLR: T_max must be 1 or more, got {T_max}")
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        cosine = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (base - self.eta_min) * cosine for base in self.base_lrs]


class LambdaLR(LRScheduler):
    """``base_lr * lr_lambda(epoch)``: one function for every group, or a list of one per
    group, as PyTorch's."""

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | Sequence[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        groups = len(_groups(optimizer))
        lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * groups
        if len(lambdas) != groups:
            raise ValueError(f"LambdaLR: {len(lambdas)} lr_lambdas for {groups} parameter groups")
        for k, fn in enumerate(lambdas):
            if not callable(fn):
                raise TypeError(f"LambdaLR: lr_lambda {k} is a {type(fn).__name__}, not a function of the epoch")
        self.lr_lambda, self.lr_lambdas = lr_lambda, lambdas
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base * fn(self.last_epoch) for base, fn in zip(self.base_lrs, self.lr_lambdas, strict=True)]

    def state_dict(self) -> dict[str, Any]:
        """As PyTorch's: no functions (a lambda cannot be pickled), each as None, or for a
        callable object its attributes."""
        state = {k: v for k, v in super().state_dict().items() if k not in ("lr_lambda", "lr_lambdas")}
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) or not hasattr(fn, "__dict__") else dict(vars(fn))
            for fn in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the state, keeping this scheduler's own functions (as PyTorch does)."""
        state = dict(state)
        saved = state.pop("lr_lambdas", [])
        super().load_state_dict(state)
        for fn, attributes in zip(self.lr_lambdas, saved, strict=False):
            if attributes is not None:
                vars(fn).update(attributes)


class LinearLR(LRScheduler):
    """From ``start_factor * base_lr`` to ``end_factor * base_lr`` in ``total_iters`` epochs
    along a line, then constant (a warm-up)."""

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if not 0 < start_factor <= 1 or not 0 <= end_factor <= 1:
            raise ValueError(
                f"LinearLR: start_factor must be in (0, 1] and end_factor in [0, 1], got {start_factor}, {end_factor}"
            )
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        # total_iters=0: no epoch reaches the end of the line, so start_factor stays, as PyTorch's.
        done = min(self.total_iters, self.last_epoch) / self.total_iters if self.total_iters else 0.0
        factor = self.start_factor + (self.end_factor - self.start_factor) * done
        return [base * factor for base in self.base_lrs]


class SequentialLR(LRScheduler):
    """``schedulers[0]`` until the epoch reaches ``milestones[0]``, then ``schedulers[1]``
    from its epoch 0, and so on (a warm-up followed by a decay)."""

    def __init__(
        self,
        optimizer: Optimizer,
        schedulers: Sequence[LRScheduler],
        milestones: Sequence[int],
        last_epoch: int = -1,
    ) -> None:
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                f"SequentialLR: {len(schedulers)} schedulers need {len(schedulers) - 1} milestones, "
                f"got {len(milestones)}"
            )
        if any(s.optimizer is not optimizer for s in schedulers):
            raise ValueError("SequentialLR: every scheduler must drive the optimizer it is given")
        self.optimizer, self.schedulers, self.milestones = optimizer, list(schedulers), list(milestones)
        self.base_lrs = [group["initial_lr"] for group in _groups(optimizer)]
        self.last_epoch = last_epoch + 1
        # Each scheduler took its first step when it was made: start again from the first.
        for scheduler in self.schedulers:
            scheduler.last_epoch -= 1
        self.schedulers[0].step()
        self._last_lr = self.schedulers[0].get_last_lr()

    def get_lr(self) -> list[float]:
        return self.get_last_lr()

    def step(self, epoch: int | None = None) -> None:
        if epoch is not None:
            raise ValueError("SequentialLR.step() takes no epoch: its schedulers count their own")
        self.last_epoch += 1
        index = bisect.bisect_right(self.milestones, self.last_epoch)
        scheduler = self.schedulers[index]
        if index > 0 and self.milestones[index - 1] == self.last_epoch:
            scheduler.step(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict[str, Any]:
        state = {k: v for k, v in vars(self).items() if k not in ("optimizer", "schedulers")}
        state["schedulers"] = [s.state_dict() for s in self.schedulers]
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        state = dict(state)
        for scheduler, saved in zip(self.schedulers, state.pop("schedulers"), strict=True):
            scheduler.load_state_dict(saved)
        vars(self).update(state)


def _groups(optimizer: Optimizer) -> list[Any]:
    """The optimizer's parameter groups; before it has parameters, its defaults, which
    its groups will start from."""
    return optimizer.param_groups or [optimizer.defaults]


__all__ = [
    "CosineAnnealingLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "MultiStepLR",
    "SequentialLR",
    "StepLR",
]
