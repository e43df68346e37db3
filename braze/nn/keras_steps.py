"""Keras's step methods, which ``fit``, ``evaluate`` and ``predict`` call for every batch and
which a subclass may override: ``train_step``, ``test_step`` and ``predict_step``, with what
they use (``compute_loss``, ``compute_metrics``, ``metrics``, ``get_metrics_result``, and
Keras 2's ``compiled_loss``/``compiled_metrics``).

The default ``train_step`` records the loss and metrics before it applies the gradients
(the values are the same), so that on a lazy device the whole step is one graph.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any

from braze.autodiff import GradientTape
from braze.nn import regularizers
from braze.nn.adapters import unpack
from braze.nn.metrics import Metric
from braze.nn.training import evaluating
from braze.tensor import Tensor


def call_model(model: Any, x: Any, training: bool) -> Any:
    """``model(x, training=...)``; a PyTorch-style module takes the mode instead."""
    from braze.nn.layer import Layer

    if isinstance(model, Layer):
        return model(x, training=training)
    if training:
        model.train()
        return model(x)
    with evaluating(model):
        return model(x)


class KerasSteps:
    """Mixed into ``Module``: the steps of Keras's training loops."""

    optimizer: Any = None
    compiled_loss: Any = None
    compiled_metrics: Any = None

    # Losses -----------------------------------------------------------------------------

    def _extra_losses(self) -> list[Tensor]:
        """``add_loss`` terms and weight penalties (``self.losses`` of a Keras layer)."""
        found = getattr(self, "losses", None)
        if isinstance(found, list):
            return found
        penalty = regularizers.penalty(self)
        return [] if penalty is None else [penalty]

    def compute_loss(
        self, x: Any = None, y: Any = None, y_pred: Any = None, sample_weight: Any = None, training: bool = True
    ) -> Tensor:
        """The compiled loss of ``y_pred`` against ``y`` plus the model's ``losses``
        (``add_loss`` terms and weight penalties), as Keras 3 computes it."""
        terms = []
        if self.compiled_loss is not None:
            value = self.compiled_loss.compute(y, y_pred, sample_weight)
            if value is not None:
                terms.append(value)
        terms += self._extra_losses()
        if not terms:
            raise ValueError(
                f"{type(self).__name__}: there is no loss to compute: give compile(loss=...) or call add_loss in call()"
            )
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        return total

    def _compute_loss(self, x: Any, y: Any, y_pred: Any, sample_weight: Any, training: bool) -> Tensor:
        """``compute_loss``, told ``training`` where it takes it: an override written before
        Keras 3.3 added the argument (Keras's knowledge-distillation example's) does not."""
        if _takes_training(type(self).compute_loss):
            return self.compute_loss(x, y, y_pred, sample_weight, training=training)
        return self.compute_loss(x, y, y_pred, sample_weight)

    # Metrics ----------------------------------------------------------------------------

    @property
    def metrics(self) -> list[Metric]:
        """The loss tracker, the compiled metrics and the metrics the model holds as
        attributes; ``fit`` resets them every epoch."""
        found: list[Metric] = []
        if self.compiled_loss is not None:
            found.append(self.compiled_loss.tracker)
        if self.compiled_metrics is not None:
            found.append(self.compiled_metrics)
        if self.compiled_loss is not None:
            found += self.compiled_loss.metrics
        for _, module in self.named_modules():
            if module is not self and getattr(module, "compiled", False):
                continue  # a compiled model inside keeps its own metrics
            held = [*vars(module).values(), *module.__dict__.get("added_metrics", {}).values()]
            for value in held:
                if isinstance(value, Metric) and all(value is not m for m in found):
                    found.append(value)
        return found

    @property
    def metrics_names(self) -> list[str]:
        return list(self.get_metrics_result())

    def reset_metrics(self) -> None:
        for metric in self.metrics:
            metric.reset_state()

    def get_metrics_result(self) -> dict[str, Tensor]:
        """Every metric's result by name, the compiled metrics' spread out."""
        logs: dict[str, Any] = {}
        for metric in self.metrics:
            result = metric.result()
            if isinstance(result, dict):
                logs.update(result)
            else:
                logs[metric.name] = result
        return logs

    def compute_metrics(self, x: Any, y: Any, y_pred: Any, sample_weight: Any = None) -> dict[str, Tensor]:
        """Update the compiled metrics with a batch; every metric's result."""
        if self.compiled_metrics is not None:
            self.compiled_metrics.update_state(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def _record(self, loss: Tensor, x: Any, y: Any, y_pred: Any, sample_weight: Any) -> dict[str, Tensor]:
        from braze.nn import tree

        if self.compiled_loss is not None:
            self.compiled_loss.tracker.update_state(loss, sample_weight=tree.leaves(y_pred)[0].shape[0])
        return self.compute_metrics(x, y, y_pred, sample_weight)

    # Steps ------------------------------------------------------------------------------

    def train_step(self, data: Any) -> dict[str, Tensor]:
        """One batch of training: forward in training mode, loss, metrics, gradients of the
        trainable weights, and the optimizer's update; returns the metrics' results."""
        x, y, sample_weight = unpack(data)
        with GradientTape() as tape:
            y_pred = call_model(self, x, training=True)
            loss = self._compute_loss(x, y, y_pred, sample_weight, training=True)
        logs = self._record(loss, x, y, y_pred, sample_weight)
        weights = self._trainable()
        if weights:
            self.optimizer.apply_gradients(zip(tape.gradient(loss, weights), weights, strict=True))
        else:  # as Keras: a model of fixed layers still reports its loss
            warnings.warn(f"{self.name}: the model has no trainable weights; fit only measures it", stacklevel=2)
        return logs

    def test_step(self, data: Any) -> dict[str, Tensor]:
        """One batch of evaluation in inference mode; returns the metrics' results."""
        x, y, sample_weight = unpack(data)
        y_pred = call_model(self, x, training=False)
        loss = self._compute_loss(x, y, y_pred, sample_weight, training=False)
        return self._record(loss, x, y, y_pred, sample_weight)

    def predict_step(self, data: Any) -> Any:
        x, _, _ = unpack(data)
        return call_model(self, x, training=False)

    def _trainable(self) -> list[Tensor]:
        weights = getattr(self, "trainable_weights", None)
        return list(weights if weights is not None else self.parameters())


@functools.cache
def _takes_training(method: Any) -> bool:
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.name == "training" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
