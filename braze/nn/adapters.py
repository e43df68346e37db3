"""What ``fit``, ``evaluate`` and ``predict`` accept, turned into batches, as Keras does.

``x`` may be a NumPy array or tensor, a list or dict of them (a model with several inputs),
with ``y`` beside it (or a list or dict of targets), an ``(x, y)`` or ``(x, y,
sample_weight)`` tuple, or anything that yields such batches: a braze ``DataLoader``,
``ImageFolder`` or ``Dataset``, a list, a generator. Arrays are cut into ``batch_size``
batches (32 by default), reshuffled each epoch with braze's default generator (so
``braze.manual_seed`` makes runs repeatable), and a ``keras.utils.PyDataset``'s batches are
taken in a new order each epoch the same way. A re-iterable source starts over each epoch; a
one-shot iterator (a generator) continues where the last epoch stopped, as Keras's
``fit_generator`` did. A batch is ``(x, y)``, ``(x, y, sample_weight)``, or ``x`` alone
when there are no targets (a model trained by ``add_loss``); ``class_weight`` turns each
batch's targets into sample weights.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from braze.data import DataLoader
from braze.data.keras_utils import Sequence
from braze.nn import tree
from braze.ops.random import default_generator
from braze.tensor import Tensor

DEFAULT_BATCH_SIZE = 32  # Keras's


def is_array(value: Any) -> bool:
    return isinstance(value, (np.ndarray, Tensor))


def _texts_as_array(x: Any) -> Any:
    """A list of texts (one a sample, for a model of one text input) as an array of them."""
    if isinstance(x, (list, tuple)) and x and all(isinstance(v, (str, bytes)) for v in x):
        return np.array(x)
    return x


def is_arrays(value: Any) -> bool:
    """An array, or a list, tuple or dict of arrays (several inputs or outputs); a list of
    ``(x, y)`` tuples is a list of batches instead."""
    if isinstance(value, dict):
        return bool(value) and all(is_array(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return bool(value) and all(is_array(v) for v in value)
    return is_array(value)


def as_input(value: Any, model: Any) -> np.ndarray:
    """A host array for ``model``: float64 becomes the dtype of its parameters (float32,
    Keras's floatx, unless the model was converted with ``model.to(dtype=...)``)."""
    array = np.asarray(value)
    if array.dtype != np.float64:
        return array
    params = model.parameters()
    return array.astype(params[0].dtype.numpy if params else np.float32)


def unpack(data: Any) -> tuple[Any, Any, Any]:
    """``(x, y, sample_weight)`` of a batch (Keras's ``unpack_x_y_sample_weight``)."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data
    raise ValueError(f"a batch must be x, (x,), (x, y) or (x, y, sample_weight); got a {len(data)}-tuple")


def pack(x: Any, y: Any = None, sample_weight: Any = None) -> Any:
    """Keras's ``pack_x_y_sample_weight``: ``x`` alone without targets, else a tuple."""
    if y is None and sample_weight is None:
        return x if not isinstance(x, (list, tuple)) else (x,)
    return (x, y) if sample_weight is None else (x, y, sample_weight)


def batch_size(batch: Any) -> int:
    first = tree.leaves(batch)[0]
    return len(first) if hasattr(first, "__len__") else 1


class Batches:
    """The batches of one epoch at a time from ``source``; for ``predict`` (``inputs_only``)
    only the inputs of each batch. As Keras 3's epoch iterator, each ``evaluate``,
    ``predict`` and validation is a pass of its own, all of it or its first ``steps``
    batches; under ``fit``'s ``steps_per_epoch`` an epoch takes up the pass where the last
    one stopped and the data starts over (reshuffled) once spent, within an epoch too, so
    that every epoch takes its steps (see ``_continued``). A generator always goes on where
    it stopped."""

    def __init__(self, source: Iterable, caller: str, inputs_only: bool = False, class_weight: Any = None) -> None:
        self.source, self.caller, self.inputs_only = source, caller, inputs_only
        self.class_weight = class_weight
        self.one_shot = isinstance(source, Iterator)
        self._running: Iterator | None = None  # the pass over the data that steps per epoch continue

    def __len__(self) -> int:
        return len(self.source) if self.sized else 0

    @property
    def sized(self) -> bool:
        """Whether the source knows its number of batches (a generator does not)."""
        return hasattr(self.source, "__len__")

    def epoch(self, steps: int | None = None, resume: bool = False) -> Iterator[Any]:
        """One epoch's batches: a pass of its own, all of it or its first ``steps``; with
        ``resume`` (``fit``'s ``steps_per_epoch``), ``steps`` batches from where the last
        epoch stopped, the data starting over once spent."""
        if steps is not None and steps < 1:
            raise ValueError(f"{self.caller}: steps must be at least 1 (or None for all batches), got {steps}")
        try:
            if steps is None or self.one_shot or not resume:
                iterator = self.source if self.one_shot else iter(self.source)
                taken = 0
                try:
                    for batch in itertools.islice(iterator, steps):
                        taken += 1
                        yield self._unpack(batch)
                finally:
                    _close(iterator, self.one_shot)
                self._ran_out(steps, taken)
            else:
                yield from self._continued(steps)
        finally:
            end = getattr(self.source, "on_epoch_end", None)
            if end is not None:
                end()  # a keras.utils.Sequence reshuffles here

    def _continued(self, steps: int) -> Iterator[Any]:
        """``steps`` batches from the pass in progress, a new (reshuffled) pass begun
        whenever one ends, so that every epoch takes ``steps`` batches, as the XLA article's
        ``fit_generator(train_set, steps_per_epoch=840 // 64)`` expects (tf.keras 2 took them
        so; Keras 3 ends such an epoch early where a pass ends, warning that the data ran
        out)."""
        taken = 0
        while taken < steps:
            fresh = self._running is None
            if fresh:
                self._running = iter(self.source)
            before = taken
            for batch in itertools.islice(self._running, steps - taken):
                taken += 1
                yield self._unpack(batch)
            if taken < steps:  # this pass is over
                _close(self._running, False)
                self._running = None
                if fresh and taken == before:
                    return  # the data has no batch at all

    def _ran_out(self, steps: int | None, taken: int) -> None:
        """Keras's warning for an epoch cut short by the end of the data (none batched at
        all is the caller's error or warning)."""
        if steps is not None and 0 < taken < steps:
            warnings.warn(
                f"{self.caller}: the data ran out after {taken} of {steps} steps; this pass ends here (give data "
                "of at least steps batches, or repeat it)",
                stacklevel=2,
            )

    def _unpack(self, batch: Any) -> Any:
        if self.inputs_only:
            return pack(unpack(batch)[0])  # several inputs stay one structure: (x,)
        if self.class_weight is None:
            return batch
        x, y, weight = unpack(batch)
        if y is None:
            raise ValueError(f"{self.caller}: class_weight needs targets")
        if weight is not None:
            raise ValueError(f"{self.caller}: give class_weight or sample_weight, not both")
        return x, y, class_weights(self.class_weight, y)


def _close(iterator: Iterator, one_shot: bool) -> None:
    """Stop a prefetching loader's thread now, not at collection (not a generator the
    caller gave, which may go on)."""
    if not one_shot and hasattr(iterator, "close"):
        iterator.close()


def class_weights(class_weight: dict[int, float], y: Any) -> np.ndarray:
    """Each example's weight from its class: the label, or the one-hot target's argmax."""
    labels = np.asarray(y.numpy() if isinstance(y, Tensor) else y)
    if labels.ndim >= 2 and labels.shape[-1] > 1:
        labels = labels.argmax(-1)
    labels = np.round(labels.reshape(len(labels), -1)[:, 0]).astype(np.int64)  # Keras rounds float labels
    table = np.ones(max(max(class_weight) + 1, labels.max() + 1), np.float32)
    for label, weight in class_weight.items():
        table[int(label)] = weight
    return table[labels]


class _ArrayBatches:
    """Batches of nested arrays, every leaf cut by the same (shuffled) indices."""

    def __init__(self, structure: Any, batch_size: int | None, shuffle: bool) -> None:
        self.structure = structure
        # None (an output without targets or weights) stays None in every batch.
        self.present = [leaf is not None for leaf in tree.leaves(structure)]
        leaves = [
            np.asarray(leaf.numpy() if isinstance(leaf, Tensor) else leaf)
            for leaf in tree.leaves(structure)
            if leaf is not None
        ]
        seed = default_generator.next_key() if shuffle else None
        self.loader = DataLoader(
            tuple(leaves), batch_size or DEFAULT_BATCH_SIZE, shuffle=shuffle, seed=seed, prefetch=0
        )

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator[Any]:
        for leaves in self.loader:
            cut = iter(leaves)
            yield tree.unflatten(self.structure, [next(cut) if kept else None for kept in self.present])


class _ShuffledSequence:
    """A ``keras.utils.PyDataset``'s batches in a new order every pass, as Keras's
    ``fit(shuffle=True)`` takes them (from braze's default generator, as arrays are)."""

    def __init__(self, sequence: Sequence) -> None:
        self.sequence = sequence
        self._rng = np.random.default_rng(default_generator.next_key())

    def __len__(self) -> int:
        return len(self.sequence)

    def __iter__(self) -> Iterator[Any]:
        for index in self._rng.permutation(len(self.sequence)):
            yield self.sequence[int(index)]

    def on_epoch_end(self) -> None:
        self.sequence.on_epoch_end()


def _weights_per_output(sample_weight: Any) -> bool:
    """Whether ``sample_weight`` gives each output its own weights, as Keras takes them: a
    dict by output name, or a list of arrays (None for an output without weights). A list
    of numbers is one weight per sample."""
    if isinstance(sample_weight, dict):
        return True
    if not isinstance(sample_weight, (list, tuple)):
        return False
    return any(is_array(w) for w in sample_weight) and all(w is None or is_array(w) for w in sample_weight)


def _sample_weights(sample_weight: Any) -> Any:
    """``sample_weight`` as float32 arrays: one, or one per output in its list or dict."""

    def as_array(weights: Any) -> Any:
        if weights is None:
            return None
        return np.asarray(weights.numpy() if isinstance(weights, Tensor) else weights, np.float32)

    if isinstance(sample_weight, dict):
        return {name: as_array(w) for name, w in sample_weight.items()}
    if _weights_per_output(sample_weight):
        return [as_array(w) for w in sample_weight]
    return as_array(sample_weight)


def _labelled_leaves(part: Any, name: str) -> list[tuple[str, Any]]:
    """``(what, array)`` for each array of ``y`` or ``sample_weight``, named for errors
    (``sample_weight['out_a']``, ``y[1]``)."""
    if isinstance(part, dict):
        return [(f"{name}[{key!r}]", leaf) for key, value in part.items() for leaf in tree.leaves(value)]
    if isinstance(part, (list, tuple)):
        return [(f"{name}[{i}]", leaf) for i, value in enumerate(part) for leaf in tree.leaves(value)]
    return [(name, part)]


def _arrays(x: Any, y: Any, sample_weight: Any, caller: str) -> Any:
    """The packed structure of arrays, checked for one sample count."""
    if y is None and sample_weight is not None:
        raise ValueError(f"{caller}: sample_weight needs targets y")
    if sample_weight is not None:
        sample_weight = _sample_weights(sample_weight)
    inputs = {len(leaf) for leaf in tree.leaves(x)}
    if len(inputs) > 1:
        raise ValueError(f"{caller}: the inputs have different numbers of samples: {sorted(inputs)}")
    for name, part in (("y", y), ("sample_weight", sample_weight)):
        for what, leaf in _labelled_leaves(part, name) if part is not None else ():
            if leaf is not None and (np.ndim(leaf) == 0 or len(leaf) not in inputs):
                rows = "a single value" if np.ndim(leaf) == 0 else f"{len(leaf)}"
                raise ValueError(
                    f"{caller}: x has {min(inputs)} samples but {what} has {rows}; it must have one row per sample"
                )
    return pack(x, y, sample_weight)


def _source(x: Any, y: Any, sample_weight: Any, caller: str, allow_no_targets: bool = True) -> Any:
    """The arrays of ``x, y`` (or of an ``(x, y[, w])`` tuple given as ``x``), or None for a
    source of batches."""
    x = _texts_as_array(x)
    if y is None and sample_weight is None and isinstance(x, tuple) and len(x) in (2, 3) and all(map(is_arrays, x)):
        x, y, sample_weight = unpack(x)
    if not is_arrays(x):
        if y is not None:
            raise ValueError(f"{caller}: y must not be given when x yields batches ({type(x).__name__})")
        return None
    if y is None and not allow_no_targets:
        raise ValueError(f"{caller}: x is an array of inputs but y (the targets) is missing")
    return _arrays(x, y, sample_weight, caller)


def batches(x: Any, y: Any, batch_size: int | None, caller: str, sample_weight: Any = None) -> Batches:
    """The batches of ``evaluate`` or of ``fit``'s validation data."""
    if x is None:
        raise ValueError(f"{caller}: no data: give x and y arrays, an (x, y) pair or a loader of batches")
    found = _source(x, y, sample_weight, caller)
    return Batches(x if found is None else _ArrayBatches(found, batch_size, False), caller)


def _split(structure: Any, fraction: float) -> tuple[Any, Any]:
    """Keras's ``validation_split``: the last ``fraction`` of the samples, before shuffling."""
    count = len(tree.leaves(structure)[0])
    split = int(count * (1.0 - fraction))
    if split == 0 or split == count:
        raise ValueError(f"fit: validation_split={fraction} of {count} samples leaves a part empty")
    head = tree.map_leaves(lambda a: None if a is None else a[:split], structure)
    return head, tree.map_leaves(lambda a: None if a is None else a[split:], structure)


def training_batches(
    x: Any,
    y: Any,
    batch_size: int | None,
    shuffle: bool,
    validation_split: float,
    validation_data: Any,
    sample_weight: Any = None,
    class_weight: Any = None,
    validation_batch_size: int | None = None,
    needs_targets: bool = False,
) -> tuple[Batches, Batches | None]:
    """``fit``'s training batches and validation batches (or None); ``needs_targets``: arrays
    of inputs must come with targets (a compiled loss and Keras's own ``train_step``)."""
    if not 0 <= validation_split < 1:
        raise ValueError(f"fit: validation_split must be in [0, 1), got {validation_split}")
    if class_weight is not None and sample_weight is not None:
        raise ValueError("fit: give class_weight or sample_weight, not both")
    validation = None
    if validation_data is not None:
        validation = batches(validation_data, None, validation_batch_size or batch_size, "fit (validation_data)")
    if x is None:
        raise ValueError("fit: no data: give x and y arrays, an (x, y) pair or a loader of batches")
    found = _source(x, y, sample_weight, "fit", allow_no_targets=not needs_targets)
    if found is None:
        if validation_split:
            raise ValueError("fit: validation_split needs arrays; give a loader validation_data instead")
        if shuffle and isinstance(x, Sequence):
            x = _ShuffledSequence(x)
        return Batches(x, "fit", class_weight=class_weight), validation
    if validation_split and validation is None:
        found, held_out = _split(found, validation_split)
        validation = Batches(_ArrayBatches(held_out, validation_batch_size or batch_size, False), "fit (validation)")
    return Batches(_ArrayBatches(found, batch_size, shuffle), "fit", class_weight=class_weight), validation


def prediction_batches(x: Any, batch_size: int | None) -> Batches:
    if x is None:
        raise ValueError("predict: no data: give an array of inputs or a loader of batches")
    x = _texts_as_array(x)
    if is_arrays(x):
        return Batches(_ArrayBatches(pack(x), batch_size, False), "predict", inputs_only=True)
    return Batches(x, "predict", inputs_only=True)
