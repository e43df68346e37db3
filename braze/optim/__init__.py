"""Optimizers written with tensor ops: SGD (momentum, Nesterov, weight decay), Adam, AdamW,
Adadelta, RMSprop and Adagrad with PyTorch's arguments, and Keras's (``keras.optimizers``: SGD, Adam, AdamW, RMSprop,
Adagrad) in :mod:`braze.optim.keras`; PyTorch's learning-rate schedulers (``lr_scheduler``)
and Keras's schedules (``schedules``)."""

from typing import Any

from braze.optim import keras, lr_scheduler, schedules
from braze.optim.adam import Adam, AdamW
from braze.optim.adaptive import Adadelta, Adagrad, RMSprop
from braze.optim.optimizer import Optimizer
from braze.optim.sgd import SGD


def get_optimizer(optimizer: str | Optimizer, model: Any) -> Optimizer:
    """An optimizer from a Keras name (with Keras's defaults) or an instance, bound to
    ``model``'s trainable weights if it has any yet (a model without an input shape gets them
    from its first batch)."""
    optimizer = keras.get(optimizer)
    if not optimizer.params:
        weights = getattr(model, "trainable_weights", None)
        params = weights if weights is not None else model.parameters()
        if params:
            optimizer.bind(params)
    return optimizer


__all__ = [
    "SGD",
    "Adadelta",
    "Adagrad",
    "Adam",
    "AdamW",
    "Optimizer",
    "RMSprop",
    "get_optimizer",
    "keras",
    "lr_scheduler",
    "schedules",
]
