"""Data parallelism as an optimizer wrapper (Horovod's ``DistributedOptimizer``).

Every rank holds the whole model and trains on its own part of each batch. Wrapping the
optimizer (or binding the wrapper, as Keras's ``compile`` does with an unbound one) starts
every rank from rank 0's parameters, and makes each ``step()`` replace every gradient by
its mean over the ranks before the update, so the ranks' parameters stay equal, step
after step, to those of one process training on the whole batch. The
means are ``all_reduce`` nodes in the traced step on a lazy device or under ``braze.jit``,
where the compiler combines them into a few large all-reduces. Keras-style ``fit`` and
``evaluate`` sum their epoch's statistics over the ranks with ``reduce_statistics``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from braze.autodiff import enable_grad, no_grad
from braze.distributed.collectives import all_reduce, broadcast
from braze.distributed.metrics import all_reduce_metrics, all_reduce_statistics
from braze.nn import Statistics
from braze.ops import zeros_like
from braze.optim.optimizer import Optimizer
from braze.tensor import Tensor


class DistributedOptimizer:
    """``optimizer`` with gradients averaged over the ranks; an optimizer not bound to its
    parameters yet is bound by :meth:`bind` (``model.compile(optimizer=...)`` calls it)."""

    def __init__(self, optimizer: Optimizer, root: int = 0) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"DistributedOptimizer wraps a braze optimizer, got {type(optimizer).__name__}")
        self.root = root  # before ``optimizer``: later attributes are the wrapped optimizer's
        self.optimizer = optimizer
        if optimizer.params:
            broadcast(optimizer.params, root)

    def bind(self, params: Any) -> DistributedOptimizer:
        """Bind the wrapped optimizer to ``params`` (a Module or tensors), which then start
        from the root's values on every rank."""
        self.optimizer.bind(params)
        broadcast(self.optimizer.params, self.root)
        return self

    @property
    def params(self) -> list[Tensor]:
        return self.optimizer.params

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none)

    def average_gradients(self) -> None:
        """Replace each parameter's gradient by its mean over the ranks.

        A parameter without a gradient on some rank (a branch that rank's batch did not
        take) has a zero gradient there, since that rank's loss does not depend on it; one
        without a gradient on every rank keeps none, as in one process. Every rank reduces
        the same list, so no gradient is ever averaged with another parameter's."""
        params = self.optimizer.params
        holders = all_reduce(np.array([p.grad is not None for p in params], np.int64), op="sum")
        with no_grad():
            owned = [p for p, n in zip(params, holders, strict=True) if n]
            grads = [zeros_like(p) if p.grad is None else p.grad for p in owned]
            for p, mean in zip(owned, all_reduce(grads, op="mean"), strict=True):
                p.grad = mean

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Average the gradients over the ranks, then step; ``closure`` (PyTorch's) first
        computes this rank's loss and gradients, and its loss is returned."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        self.average_gradients()
        self.optimizer.step()
        return loss

    def apply_gradients(self, grads_and_vars: Any) -> int:
        """Keras's update with each gradient first averaged over the ranks (a variable the
        wrapped optimizer does not hold yet starts from the root's value everywhere)."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        new = [v for _, v in pairs if all(v is not p for p in self.optimizer.params)]
        if new:
            broadcast(new, self.root)
        with no_grad():
            means = all_reduce([g for g, _ in pairs], op="mean")
        return self.optimizer.apply_gradients(zip(means, [v for _, v in pairs], strict=True))

    def apply(self, grads: Any, trainable_variables: Any = None) -> int:
        variables = self.optimizer.params if trainable_variables is None else list(trainable_variables)
        return self.apply_gradients(zip(list(grads), variables, strict=True))

    def to(self, device: Any) -> DistributedOptimizer:
        """Move the wrapped optimizer's slots; the wrapper itself is returned, as from
        ``Optimizer.to``, so ``opt = opt.to(device)`` keeps averaging gradients."""
        self.optimizer.to(device)
        return self

    def agree_steps(self, steps: int) -> int:
        """The training steps every rank takes this epoch: the fewest any rank has. A step
        averages gradients over all ranks, so one rank stepping alone would wait forever;
        ranks differ when a sharded last batch has fewer rows than there are ranks, and
        that batch is then left out (the Keras trainer calls this, every rank at once)."""
        return -int(all_reduce(-int(steps), "max"))

    def any_rank(self, flag: bool) -> bool:
        """Whether ``flag`` holds on any rank (``fit`` asks after each epoch whether a callback
        stopped training: a rank stopping alone would leave the others waiting)."""
        return bool(all_reduce(int(bool(flag)), "max"))

    def reduce_statistics(self, stats: Statistics | list[Any]) -> Any:
        """Sum ``stats`` (this rank's share of an epoch: the X10 tutorial's ``Statistics``,
        or Keras metrics) over the ranks: what the Keras trainer calls, every rank at once,
        before it computes an epoch's logs."""
        if isinstance(stats, Statistics):
            return all_reduce_statistics(stats)
        return all_reduce_metrics(stats)

    def __getattr__(self, name: str) -> Any:
        # Everything else (learning rate, slots, state) is the wrapped optimizer's.
        if "optimizer" not in self.__dict__:  # not constructed yet (copy, unpickling)
            raise AttributeError(name)
        return getattr(self.__dict__["optimizer"], name)

    def __setattr__(self, name: str, value: Any) -> None:
        # ``optimizer.lr = 0.01`` sets the learning rate that step() uses, the wrapped one's.
        if name == "optimizer" or "optimizer" not in self.__dict__:
            object.__setattr__(self, name, value)
        else:
            setattr(self.__dict__["optimizer"], name, value)
