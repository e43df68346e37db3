"""Mini-batches from in-memory arrays or a dataset, prefetched on a background thread.

Training loops spend their time in the model; assembling the next batch (gathering
shuffled rows, decoding) on a background thread overlaps that work with the step. The
queue is bounded so prefetching never holds more than ``prefetch`` batches, and the
thread stops as soon as the consumer abandons the iteration, so an early ``break``
leaks neither a thread nor memory.
"""

from __future__ import annotations

import functools
import math
import queue
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import numpy as np

from braze.data.errors import DataError
from braze.data.mnist import MNIST, load_mnist
from braze.runtime.collectives import joined, launched_rank, rank_and_size

_POLL_S = 0.05  # how often a blocked producer checks whether it should stop
_DONE = object()


class Dataset(Protocol):
    """Anything with a length whose ``[i]`` is one sample (a tuple of arrays, or an array)."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> Any: ...


class _ProducerError:
    """Carries an exception from the producer thread to the consumer."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def shard_position() -> tuple[int, int]:
    """This process's rank and the job's size, for a sharded loader ((0, 1) in a process of
    its own). A process an MPI launcher started that has not joined the job yet is refused:
    every rank would take every sample, silently."""
    if joined() is None and launched_rank() is not None:
        raise DataError(
            "shard=True in a process started by mpiexec: call braze.distributed.init() before making "
            "the loader, or every rank takes every sample"
        )
    return rank_and_size()


Maker = Callable[[np.ndarray], Any]
# What the producer hands over: fields (arrays) and what makes each a tensor, or None for a
# dataset's sample given as it is.
_Fields = tuple[Any, tuple[Maker | None, ...] | None]


def _maker(value: Any) -> Maker | None:
    """What makes a batch of rows of ``value`` the kind of thing ``value`` is: a tensor's
    class (found on it: this package imports no tensor), or None for arrays."""
    make, device = getattr(type(value), "from_numpy", None), getattr(value, "device", None)
    return functools.partial(make, device=device) if make is not None and device is not None else None


def _made(values: tuple[Any, ...], makers: tuple[Maker | None, ...]) -> tuple[Any, ...]:
    """Each of ``values`` (arrays, or a row's NumPy scalar) made by its maker, if any."""
    return tuple(
        v if make is None else make(np.require(v, requirements="C")) for v, make in zip(values, makers, strict=True)
    )


class TensorDataset:
    """PyTorch's ``TensorDataset``: sample ``i`` is the tuple of row ``i`` of every array (or
    tensor) given, which must share their first dimension; ``tensors`` holds them as given.
    A DataLoader over it gathers each batch's rows at once, as it does for a tuple of arrays."""

    def __init__(self, *tensors: Any) -> None:
        self.tensors = tensors
        self.arrays = tuple(np.asarray(t) for t in tensors)
        # A sample or batch of a tensor comes back as a tensor of its class and device, as in
        # PyTorch (``data.to(device)`` in the loop), one of an array as an array.
        self.makers = tuple(_maker(t) for t in tensors)
        if not self.arrays or any(t.ndim == 0 for t in self.arrays):
            raise DataError("TensorDataset: needs one or more arrays with a first dimension")
        sizes = [len(t) for t in self.arrays]
        if len(set(sizes)) != 1:
            raise DataError(f"TensorDataset: the arrays must share their first dimension, got {sizes}")

    def __len__(self) -> int:
        return len(self.arrays[0])

    def __getitem__(self, index: Any) -> tuple[Any, ...]:
        return _made(tuple(a[index] for a in self.arrays), self.makers)


class DataLoader:
    """Iterate over ``data`` in batches, each a tuple of NumPy arrays (of tensors for the
    tensor fields of a ``TensorDataset``).

    ``data`` is a tuple (or list) of arrays sharing their first dimension, a single
    array, a ``TensorDataset``, or a dataset: any object with ``len()`` whose ``[i]``
    returns one sample (a tuple of arrays or tensors, or one) - samples are stacked into
    batches, a field of tensors into a tensor. ``batch_size`` is 1 unless given, as
    PyTorch's; ``None`` yields the samples one at a time, unbatched, as PyTorch's does (a
    dataset's ``[i]`` as it is, row ``i`` of each array). Each ``for`` loop is one
    epoch; with ``shuffle`` each epoch takes a new permutation from a generator seeded by
    ``seed``, so two loaders with the same seed yield the same batches. ``drop_last``
    skips a final partial batch. ``prefetch`` > 0 builds up to that many batches ahead on
    a daemon thread; 0 builds them in the consumer's thread. PyTorch's ``num_workers`` sets
    it (0, or two batches per worker on that one thread); ``pin_memory`` has no effect and
    says so.

    ``shard=True`` (data-parallel training, after ``braze.distributed.init()``) gives rank
    r of N the samples r, r + N, r + 2N, ... of each epoch's order, as PyTorch's
    DistributedSampler does: the ranks' batches b together are the one-process batch b of
    N times the size. Every rank gets as many samples (the order wraps around to fill the
    last ranks' share, or ``drop_last`` drops the remainder), so all ranks take the same
    number of steps and meet at every all-reduce; shuffling needs a ``seed``, the same on
    every rank.
    """

    def __init__(
        self,
        data: Sequence[np.ndarray] | np.ndarray | Dataset,
        batch_size: int | None = 1,
        shuffle: bool = False,
        seed: int | None = None,
        drop_last: bool = False,
        prefetch: int = 2,
        shard: bool = False,
        *,
        num_workers: int | None = None,
        pin_memory: bool = False,
    ) -> None:
        _check_batch_size(batch_size, drop_last)
        if num_workers is not None:
            prefetch = _prefetch_of_workers(num_workers)
        if pin_memory:
            warnings.warn(
                "DataLoader: pin_memory has no effect: braze's batches are host arrays, which a device copies from "
                "as they are",
                stacklevel=2,
            )
        if prefetch < 0:
            raise DataError(f"prefetch must be >= 0, got {prefetch}")
        self.dataset = data  # PyTorch's name for what the loader reads
        if isinstance(data, np.ndarray):
            data = (data,)
        makers: tuple[Maker | None, ...] | None = None
        if isinstance(data, TensorDataset):
            data, makers = data.arrays, data.makers
        self._arrays: tuple[np.ndarray, ...] | None = None
        self._makers: tuple[Maker | None, ...] = ()
        if isinstance(data, (tuple, list)):
            self._arrays = tuple(np.asarray(a) for a in data)
            self._makers = makers or (None,) * len(self._arrays)
            sizes = {len(a) for a in self._arrays}
            if len(sizes) != 1:
                shapes = [a.shape for a in self._arrays]
                raise DataError(f"arrays must share their first dimension, got shapes {shapes}")
            self._n = sizes.pop()
        else:
            self._n = len(data)
        self.data = data
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.prefetch = prefetch
        self._rng = np.random.default_rng(seed)
        if shard and shuffle and seed is None:
            raise DataError("shard=True with shuffle=True needs a seed, the same on every rank")
        self.rank, self.ranks = shard_position() if shard else (0, 1)
        # Samples per rank and epoch: the whole epoch's order has ranks * share entries.
        self._share = self._n // self.ranks if drop_last else math.ceil(self._n / self.ranks)

    def __len__(self) -> int:
        """Batches per epoch (on this rank, when sharded); samples, unbatched."""
        if self.drop_last:
            return self._share // self.batch_size
        return math.ceil(self._share / (self.batch_size or 1))

    def _batch(self, indices: np.ndarray) -> _Fields:
        """The batch of the samples at ``indices`` as arrays, with what makes each field
        the kind of thing its samples are (a tensor's class), in the consumer's thread."""
        if self._arrays is not None:
            return tuple(a[indices] for a in self._arrays), self._makers
        samples = [self.data[int(i)] for i in indices]
        if isinstance(samples[0], dict):
            raise DataError(
                f"DataLoader: sample {int(indices[0])} is a dict; a dataset's __getitem__ returns one array or a "
                "tuple of them, such as (inputs, label)"
            )
        if isinstance(samples[0], list):  # a list of fields, as a tuple of them
            samples = [tuple(sample) for sample in samples]
        if not isinstance(samples[0], tuple):  # one array (or tensor) a sample
            return (_stacked(samples, "samples"),), (_maker(samples[0]),)
        fields = list(zip(*samples, strict=True))
        makers = [_maker(f[0]) for f in fields]
        # A sample holding a tensor is PyTorch's: its numbers and arrays (a label) are made
        # tensors too, on that tensor's device, as PyTorch's collation makes them.
        made = next((make for make in makers if make is not None), None)
        return tuple(_stacked(f, f"field {k}") for k, f in enumerate(fields)), tuple(m or made for m in makers)

    def _sample(self, index: int) -> _Fields:
        """Sample ``index`` alone (``batch_size=None``): a dataset's as it gives it."""
        if self._arrays is not None:
            return tuple(a[index] for a in self._arrays), self._makers
        return self.data[index], None

    def _batches(self, order: np.ndarray) -> Iterator[_Fields]:
        if self.batch_size is None:
            for i in order:
                yield self._sample(int(i))
            return
        for b in range(len(self)):
            yield self._batch(order[b * self.batch_size : (b + 1) * self.batch_size])

    def __iter__(self) -> Iterator[Any]:
        # The permutation is drawn here, in the caller's thread, so it is reproducible.
        order = self._rng.permutation(self._n) if self.shuffle else np.arange(self._n)
        if self.ranks > 1:
            order = np.resize(order, self._share * self.ranks)[self.rank :: self.ranks]
        return self._made(self._batches(order) if self.prefetch == 0 else self._prefetched(order))

    def _made(self, batches: Iterator[_Fields]) -> Iterator[Any]:
        """The batches with their tensor fields made tensors, in the consumer's thread (a
        lazy device's tensors belong to it)."""
        try:
            for fields, makers in batches:
                yield fields if makers is None else _made(fields, makers)
        finally:
            batches.close()  # an abandoned loop stops the producer thread at once

    def _prefetched(self, order: np.ndarray) -> Iterator[_Fields]:
        """Consume batches built by a producer thread; stop it when abandoned."""
        buffer: queue.Queue = queue.Queue(maxsize=self.prefetch)
        stop = threading.Event()

        def put(item: object) -> bool:
            while not stop.is_set():
                try:
                    buffer.put(item, timeout=_POLL_S)
                    return True
                except queue.Full:
                    continue
            return False

        def produce() -> None:
            try:
                for batch in self._batches(order):
                    if not put(batch):
                        return
            except Exception as e:  # re-raised in the consumer's thread
                put(_ProducerError(e))
                return
            put(_DONE)

        thread = threading.Thread(target=produce, name="braze-data-prefetch", daemon=True)
        thread.start()
        try:
            while (item := buffer.get()) is not _DONE:
                if isinstance(item, _ProducerError):
                    raise item.error
                yield item
        finally:
            # Runs on normal end, on an exception, and when the consumer abandons the
            # generator (break / close / garbage collection).
            stop.set()
            thread.join()


def mnist_loaders(
    batch_size: int = 128, data: MNIST | None = None, seed: int = 0, shard: bool = False
) -> tuple[DataLoader, DataLoader]:
    """Train and test loaders for MNIST as float32 NHWC ``[B, 28, 28, 1]`` in [0, 1].

    Labels are int32. The train loader shuffles (seeded) and drops the last partial
    batch, as the X10 tutorial does (468 batches of 128 = 59904 images per epoch); the
    test loader keeps order and every one of the 10000 images. ``data`` defaults to
    :func:`load_mnist`. ``shard``: each rank of a data-parallel job gets its share of both.
    """
    if data is None:
        data = load_mnist()

    def arrays(images: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = (images.astype(np.float32) / np.float32(255.0))[..., None]
        return x, labels.astype(np.int32)

    train = DataLoader(
        arrays(data.train_images, data.train_labels),
        batch_size,
        shuffle=True,
        seed=seed,
        drop_last=True,
        shard=shard,
    )
    test = DataLoader(arrays(data.test_images, data.test_labels), batch_size, shard=shard)
    return train, test


def _prefetch_of_workers(num_workers: Any) -> int:
    """PyTorch's ``num_workers`` as braze's ``prefetch``: 0 builds each batch in the loop's
    thread, as PyTorch's 0 does; n builds 2 n batches ahead (PyTorch's two per worker) on
    the loader's one background thread (braze starts no worker processes)."""
    if isinstance(num_workers, bool) or not isinstance(num_workers, (int, np.integer)) or num_workers < 0:
        raise DataError(f"num_workers must be a whole number >= 0, got {num_workers!r}")
    return 2 * int(num_workers)


def _check_batch_size(batch_size: Any, drop_last: bool) -> None:
    """PyTorch's refusals: a batch size that is not a whole number of 1 or more, and
    ``drop_last`` without batches (``None``)."""
    if batch_size is None:
        if drop_last:
            raise DataError("batch_size=None yields samples one at a time: drop_last has no partial batch to drop")
        return
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise DataError(f"batch_size must be a whole number >= 1 (or None: no batches), got {batch_size!r}")


def _stacked(values: Any, what: str) -> np.ndarray:
    """One batch of ``values``, which must share a shape (looked at only when stacking fails)."""
    try:
        return np.stack(values)
    except ValueError:
        shapes = {np.shape(v) for v in values}
        if len(shapes) > 1:
            raise DataError(f"DataLoader: the {what} of one batch have different shapes {sorted(shapes)}") from None
        raise
