"""Optimizers written with tensor ops: SGD (momentum, Nesterov, weight decay), Adam, AdamW;
PyTorch's learning-rate schedulers (``lr_scheduler``) and Keras's schedules (``schedules``)."""

from typing import Any

from braze.optim import lr_scheduler, schedules
from braze.optim.adam import Adam, AdamW
from braze.optim.optimizer import Optimizer
from braze.optim.sgd import SGD

_BY_NAME = {"sgd": lambda: SGD(lr=0.01), "adam": lambda: Adam(lr=1e-3, eps=1e-7), "adamw": lambda: AdamW()}


def get_optimizer(optimizer: str | Optimizer, model: Any) -> Optimizer:
    """An optimizer from a Keras name or an instance, bound to ``model``'s parameters if it
    has any yet (a model without an input shape gets them from its first batch)."""
    if isinstance(optimizer, str):
        if optimizer.lower() not in _BY_NAME:
            raise ValueError(f"unknown optimizer {optimizer!r}: expected one of {sorted(_BY_NAME)}")
        optimizer = _BY_NAME[optimizer.lower()]()
    if not optimizer.params and model.parameters():
        optimizer.bind(model)
    return optimizer


__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "get_optimizer", "lr_scheduler", "schedules"]
