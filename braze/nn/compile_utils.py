"""What ``compile(loss=..., metrics=...)`` becomes for a model's outputs, as Keras resolves it.

A model with several outputs (a list or dict of them, named by their layers) takes a loss
(and loss weight) per output as a list in output order or a dict by output name, or one
loss for every output; targets come the same ways. Metrics are a dict by output name or,
as in Keras 3, a list of one entry per output (a metric, a list of them or None); another
list goes to every output. With several outputs each metric's name is prefixed by
its output's (``out_a_accuracy``), and each output's loss is logged too (``out_a_loss``).
``metrics`` ignore sample weights and ``weighted_metrics`` apply them, as in Keras; a name
logged twice is made unique as Keras makes it (``accuracy_1``, ``weighted_accuracy``).
"""

from __future__ import annotations

from typing import Any

from braze.nn import keras_losses, tree
from braze.nn import metrics as metrics_module
from braze.nn.metrics import Mean, Metric
from braze.tensor import Tensor

# braze named a single-output Sequential's output "output" before naming it after its last
# layer, as Keras 3 does: a dict by the old name (in a saved model's compile settings) still
# reaches that one output.
_LEGACY_SINGLE_NAME = "output"


def _per_output(spec: Any, names: list[str], what: str) -> list[Any]:
    """``spec`` for each output: a dict by name, a list in order, or one value for all (a
    list or dict of one for a single output, as Keras takes them)."""
    if isinstance(spec, dict):
        if len(names) == 1 and set(spec) == {_LEGACY_SINGLE_NAME}:
            return [spec[_LEGACY_SINGLE_NAME]]
        unknown = sorted(set(spec) - set(names))
        if unknown:
            raise ValueError(f"compile: {what} for unknown outputs {unknown}; the model's outputs are {names}")
        return [spec.get(name) for name in names]
    if isinstance(spec, (list, tuple)):
        if len(spec) != len(names):
            raise ValueError(
                f"compile: {len(spec)} {what} for a model with {len(names)} output(s) ({names}); give one per "
                "output, in order, or a dict by output name"
            )
        return list(spec)
    return [spec] * len(names)


def _by_output(values: Any, names: list[str], what: str, taking: list[int] | None = None) -> list[Any]:
    """The ``what`` (targets or sample weights) of each output, from a dict by name, a list
    in order or one value. One value for several outputs goes to the one output that takes
    a target (``taking``: the outputs with a loss or metrics), as Keras 3 gives it to
    ``loss=[loss_fn, None]``."""
    if isinstance(values, dict):
        return [values.get(name) for name in names]
    if len(names) == 1:
        return [values]
    if not isinstance(values, (list, tuple)) and taking is not None and len(taking) <= 1:
        return [values if i in taking else None for i in range(len(names))]
    if not isinstance(values, (list, tuple)) or len(values) != len(names):
        given = f"{len(values)} {what}" if isinstance(values, (list, tuple)) else f"one {what.removesuffix('s')}"
        raise ValueError(
            f"{given} for a model with {len(names)} outputs ({names}): give a list in that order or a dict by name"
        )
    return list(values)


def targets_per_output(y_true: Any, names: list[str], taking: list[int] | None = None) -> list[Any]:
    """The targets of each output (see ``_by_output``)."""
    return _by_output(y_true, names, "targets", taking)


def weights_per_output(sample_weight: Any, names: list[str]) -> list[Any]:
    """Sample weights for each output: per output as the targets are, or one for all."""
    if sample_weight is None or not isinstance(sample_weight, (dict, list, tuple)):
        return [sample_weight] * len(names)
    if len(names) == 1 and isinstance(sample_weight, (list, tuple)) and len(sample_weight) == 1:
        return list(sample_weight)  # a list of the one output's weights
    return _by_output(sample_weight, names, "sample weights")


def per_output(
    y_true: Any, y_pred: Any, sample_weight: Any, names: list[str], taking: list[int] | None = None
) -> tuple[list, list, list]:
    """The predictions, targets and sample weights of each output (``taking``: as
    ``targets_per_output``)."""
    return tree.leaves(y_pred), targets_per_output(y_true, names, taking), weights_per_output(sample_weight, names)


def _names(y_pred: Any, output_names: list[str]) -> list[str]:
    count = len(tree.leaves(y_pred))
    if isinstance(y_pred, dict):
        return list(y_pred)
    if len(output_names) == count:
        return list(output_names)
    return ["output"] if count == 1 else [f"output_{i}" for i in range(count)]


class CompileLoss:
    """The total loss of a batch: each output's loss times its weight, summed. ``tracker``
    is the epoch's mean loss (the ``loss`` of the logs), and there is a tracker per output
    when there are several (Keras logs ``name_loss``)."""

    def __init__(self, loss: Any, loss_weights: Any = None, output_names: list[str] | None = None) -> None:
        self.tracker = Mean("loss")
        self.spec, self.loss_weights = loss, loss_weights
        self.losses: list[keras_losses.Loss | None] | None = None
        self.weights: list[float] = []
        self.names: list[str] = []
        self.output_trackers: list[Mean] = []
        self._tracker_of: dict[int, int] = {}  # an output's tracker, by the output's index
        if output_names:
            self.resolve(output_names)

    def resolve(self, names: list[str]) -> None:
        self.names = names
        self.losses = [None if s is None else keras_losses.get(s) for s in _per_output(self.spec, names, "losses")]
        weights = _per_output(self.loss_weights, names, "loss_weights") if self.loss_weights is not None else None
        self.weights = [1.0 if w is None else float(w) for w in (weights or [None] * len(names))]
        # A tracker per output with a loss (Keras logs ``name_loss``) where several have one.
        with_loss = [name for name, loss in zip(names, self.losses, strict=True) if loss is not None]
        self.output_trackers = [Mean(f"{name}_loss") for name in with_loss] if len(with_loss) > 1 else []
        self._tracker_of = {i: k for k, i in enumerate(i for i, loss in enumerate(self.losses) if loss is not None)}

    def __call__(
        self, y_true: Any, y_pred: Any, sample_weight: Any = None, regularization_losses: Any = None
    ) -> Tensor:
        """Keras 2's ``model.compiled_loss``: the total loss (with ``regularization_losses``
        added), recorded in the ``loss`` tracker, weighted by the batch's size."""
        total = self.compute(y_true, y_pred, sample_weight)
        for extra in regularization_losses or ():
            total = extra if total is None else total + extra
        if total is None:
            raise ValueError("compiled_loss: there is no loss: give compile(loss=...)")
        self.tracker.update_state(total, sample_weight=tree.leaves(y_pred)[0].shape[0])
        return total

    @property
    def metrics(self) -> list[Mean]:
        return self.output_trackers

    def compute(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Tensor | None:
        """The weighted sum of the outputs' losses, or None where no output has one."""
        if self.spec is None:
            return None
        names = _names(y_pred, self.names)
        if self.losses is None or len(self.losses) != len(names):
            self.resolve(names)
        taking = [i for i, loss in enumerate(self.losses) if loss is not None]
        preds, targets, weights = per_output(y_true, y_pred, sample_weight, names, taking)
        total = None
        for i, (loss, weight) in enumerate(zip(self.losses, self.weights, strict=True)):
            if loss is None or targets[i] is None:
                continue
            value = loss(targets[i], preds[i], weights[i])
            if self.output_trackers:  # unweighted, averaged by batch size as the total is (Keras's)
                self.output_trackers[self._tracker_of[i]].update_state(value, sample_weight=preds[i].shape[0])
            term = value * weight if weight != 1.0 else value
            total = term if total is None else total + term
        return total


class CompileMetrics(Metric):
    """The metrics given to ``compile``, per output: one metric of ``model.metrics``
    whose result is the dict of theirs (Keras's ``compile_metrics``)."""

    def __init__(self, metrics: Any, weighted_metrics: Any = None, output_names: list[str] | None = None) -> None:
        super().__init__("compile_metrics")
        self._specs = (metrics, weighted_metrics)
        self.metrics: list[Metric] = []
        self.by_output: list[tuple[list[Metric], list[Metric]]] | None = None
        self.names: list[str] = []
        self.base_names: list[str] = []
        self.log_names: list[str] = []
        if output_names:
            self.resolve(output_names)

    @property
    def specs(self) -> tuple[Any, Any]:
        """What ``compile`` was given: ``(metrics, weighted_metrics)``."""
        return self._specs

    def resolve(self, names: list[str]) -> None:
        self.names = names
        plain, weighted = (self._per_output(spec, names) for spec in self._specs)
        self.by_output = list(zip(plain, weighted, strict=True))
        # Keras's order: every output's unweighted metrics, then every output's weighted ones.
        prefixes = [f"{name}_" if len(names) > 1 else "" for name in names]
        kinds = [
            [(prefix, m) for prefix, metrics in zip(prefixes, by_kind, strict=True) for m in metrics]
            for by_kind in (plain, weighted)
        ]
        self.metrics = [m for kind in kinds for _, m in kind]
        # Each metric's name without its output's (Keras's ``metric.name``, which orders
        # ``evaluate``'s list), and its key in the logs.
        self.base_names = [m.name.removeprefix(prefix) for kind in kinds for prefix, m in kind]
        self.log_names = _log_names(
            [m.name for _, m in kinds[0]], [(prefix, m.name.removeprefix(prefix)) for prefix, m in kinds[1]]
        )

    def _per_output(self, spec: Any, names: list[str]) -> list[list[Metric]]:
        if spec is None:
            return [[] for _ in names]
        if isinstance(spec, str) or not isinstance(spec, (list, tuple, dict)):
            spec = [spec]
        # Keras 3: with several outputs, a dict by output name or a list of one entry per
        # output (a metric, a list of them, or None); any other list is every output's.
        by_output = isinstance(spec, dict) or (len(names) > 1 and len(spec) == len(names))
        groups = _per_output(spec, names, "metrics") if by_output else [spec] * len(names)
        found = []
        for name, group in zip(names, groups, strict=True):
            items = [] if group is None else ([group] if not isinstance(group, (list, tuple)) else list(group))
            metrics = [
                _fresh(metrics_module.get(item)) if len(names) > 1 else metrics_module.get(item) for item in items
            ]
            if len(names) > 1:
                for metric in metrics:
                    metric.name = f"{name}_{metric.name}"
            found.append(metrics)
        return found

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        names = _names(y_pred, self.names)
        if self.by_output is None or len(self.by_output) != len(names):
            self.resolve(names)
        taking = [i for i, (plain, weighted) in enumerate(self.by_output) if plain or weighted]
        preds, targets, weights = per_output(y_true, y_pred, sample_weight, names, taking)
        for (plain, weighted), target, pred, weight in zip(self.by_output, targets, preds, weights, strict=True):
            if target is None:
                continue
            for metric in plain:
                metric.update_state(target, pred)
            for metric in weighted:
                metric.update_state(target, pred, sample_weight=weight)

    def result(self) -> dict[str, Tensor]:
        return {name: m.result() for name, m in zip(self.log_names, self.metrics, strict=True)}

    def reset_state(self) -> None:
        for metric in self.metrics:
            metric.reset_state()

    @property
    def state(self) -> list[Tensor]:
        return [v for m in self.metrics for v in m.variables]


def _log_names(plain: list[str], weighted: list[tuple[str, str]]) -> list[str]:
    """The logs' keys of the compiled metrics, the unweighted ones' then the weighted ones',
    made unique as Keras's ``CompileMetrics.result`` makes them: a name taken again gets
    ``_1``, ``_2``...; a weighted metric whose name is taken is ``weighted_<name>`` (after
    its output's name), then numbered. ``plain`` holds full names; ``weighted`` each
    metric's output prefix and own name."""
    counts: dict[str, int] = {}

    def numbered(name: str) -> str:
        if name not in counts:
            counts[name] = 1
            return name
        index = counts[name]
        counts[name] += 1
        return f"{name}_{index}"

    found = [numbered(name) for name in plain]
    for prefix, name in weighted:
        full = f"{prefix}{name}"
        found.append(numbered(full if full not in counts else f"{prefix}weighted_{name}"))
    return found


def _fresh(metric: Metric) -> Metric:
    """A metric of the same kind and settings with its own state (one per output)."""
    if type(metric) is metrics_module.MeanMetricWrapper:
        return metrics_module.MeanMetricWrapper(metric.fn, metric.name, **metric.kwargs)
    return type(metric).from_config(metric.get_config())
