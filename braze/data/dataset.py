"""``tf.data.Dataset`` for in-memory arrays: ``from_tensor_slices`` then ``shuffle``,
``batch``, ``map``, ``repeat``, ``take``, ``skip``; elements are NumPy arrays (or tuples
and dicts of them), which ``fit`` and a model take as they are, and which answer
``numpy()`` as TensorFlow's tensors do (``as_numpy_iterator`` gives plain arrays).

``shuffle(buffer_size)`` shuffles as TensorFlow does: each element is drawn at random from
a buffer of the next ``buffer_size`` elements (``buffer_size`` at least the dataset's size
shuffles it uniformly). Without a ``seed`` the order is drawn from NumPy's global
generator, so ``np.random.seed`` (or ``keras.utils.set_random_seed``) makes a run
repeatable; with ``reshuffle_each_iteration`` every pass has a new order. ``prefetch``
and ``cache`` return the same dataset: elements are made on demand in this process, which
changes no value. A ``map`` function runs on the eager CPU device, whatever the default
device, so that preparing data never records ops into a lazy training trace.
"""

from __future__ import annotations

import glob
import itertools
import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from braze.data.errors import DataError
from braze.runtime.device import CPU, default_device, set_default_device

AUTOTUNE = -1
"""``tf.data.AUTOTUNE``: the buffer size that lets the pipeline choose (elements here are
made on demand, so every size reads the same)."""


def _leaves(structure: Any) -> list[Any]:
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in _leaves(item)]
    if isinstance(structure, dict):
        return [leaf for item in structure.values() for leaf in _leaves(item)]
    return [structure]


def _map(fn: Callable[[Any], Any], structure: Any) -> Any:
    if isinstance(structure, (list, tuple)):
        return type(structure)(_map(fn, item) for item in structure)
    if isinstance(structure, dict):
        return {key: _map(fn, item) for key, item in structure.items()}
    return fn(structure)


def _normalized(structure: Any) -> Any:
    """A dataset's tensors as TensorFlow reads them: tuples and dicts are structures, and
    anything else (a list of numbers too) one array."""
    if isinstance(structure, tuple):
        return type(structure)(_normalized(item) for item in structure)
    if isinstance(structure, dict):
        return {key: _normalized(item) for key, item in structure.items()}
    array = _as_array(structure)
    if array.dtype == object and array.size and all(isinstance(v, (str, bytes)) for v in array.reshape(-1)):
        # Text (a pandas column of it is of objects), held as str.
        return np.array([v.decode("utf-8") if isinstance(v, bytes) else v for v in array.reshape(-1)]).reshape(
            array.shape
        )
    return array


def _as_array(value: Any) -> np.ndarray:
    """An array, or a tensor's values, as NumPy's (an element's text stays ``str``)."""
    return np.asarray(value if isinstance(value, np.ndarray) or not hasattr(value, "numpy") else value.numpy())


def matching_files(file_pattern: Any, who: str) -> list[str]:
    """The paths, sorted, that match ``file_pattern`` (a glob, or a list of them); a
    DataError naming ``who`` where none does."""
    patterns = [file_pattern] if isinstance(file_pattern, (str, os.PathLike)) else list(file_pattern)
    paths = sorted({path for pattern in patterns for path in glob.glob(os.fspath(pattern))})
    if not paths:
        raise DataError(f"{who}: no file matches {[os.fspath(p) for p in patterns]}")
    return paths


def _padded(elements: list[Any], shapes: Any, values: Any) -> Any:
    """``elements`` stacked, each component padded to the shape ``shapes`` gives it (None
    dimensions, or no shape, to the largest among them) with ``values``' fill."""
    first = elements[0]
    if isinstance(first, (list, tuple)):
        parts = [_padded([e[i] for e in elements], _part(shapes, i), _part(values, i)) for i in range(len(first))]
        return type(first)(parts)
    if isinstance(first, dict):
        return {k: _padded([e[k] for e in elements], _part(shapes, k), _part(values, k)) for k in first}
    arrays = [np.asarray(e) for e in elements]
    largest = np.max([a.shape for a in arrays], axis=0) if arrays[0].ndim else ()
    target = [int(d) if d is not None and d != -1 else int(m) for d, m in zip(shapes or largest, largest, strict=True)]
    text = arrays[0].dtype.kind in "US"
    fill = values if values is not None else ("" if text else 0)
    out = np.full((len(arrays), *target), fill, dtype=object if text else np.result_type(*arrays))
    for k, a in enumerate(arrays):
        if any(s > t for s, t in zip(a.shape, target, strict=True)):
            raise ValueError(f"Dataset.padded_batch: an element of shape {a.shape} is larger than {tuple(target)}")
        out[(k, *(slice(0, s) for s in a.shape))] = a
    return out.astype(str) if text else out


def _part(structure: Any, key: Any) -> Any:
    """A structured argument's part for one component; a plain one (a fill) for every one."""
    return structure[key] if isinstance(structure, (list, tuple, dict)) else structure


def _stack(elements: list[Any]) -> Any:
    first = elements[0]
    if isinstance(first, (list, tuple)):
        return type(first)(_stack([e[i] for e in elements]) for i in range(len(first)))
    if isinstance(first, dict):
        return {key: _stack([e[key] for e in elements]) for key in first}
    return np.stack([np.asarray(e) for e in elements])


class TextDType:
    """The dtype of text elements as TensorFlow code compares it (``x.dtype == "string"``,
    ``x.dtype == tf.string``): NumPy's ``str`` or ``bytes`` dtype otherwise, whose
    attributes it answers and which ``np.dtype`` of it gives."""

    _is_numeric = False  # what NumPy asks of a dtype's class (its testing functions do)

    def __init__(self, numpy: np.dtype) -> None:
        self.dtype = numpy

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str) and other in ("string", "str"):
            return True
        try:
            return self.dtype == (other.dtype if isinstance(other, TextDType) else other)
        except TypeError:
            return False

    def __hash__(self) -> int:
        return hash(self.dtype)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.dtype, name)

    def __repr__(self) -> str:
        return repr(self.dtype)


class Element(np.ndarray):
    """A NumPy array that also answers ``numpy()``, as TensorFlow's eager tensors do, so that
    a loop over a dataset can write ``images[0].numpy()`` (its views are elements too); a
    text element's dtype equals ``"string"`` and its ``numpy()`` is bytes, as a TensorFlow
    string tensor's."""

    def numpy(self) -> Any:
        """The values as NumPy's; text as TensorFlow gives it, UTF-8 bytes (a ``bytes``
        for one string, an array of them otherwise)."""
        array = np.asarray(self)
        if array.dtype.kind != "U":
            return array
        encoded = np.array([s.encode("utf-8") for s in array.reshape(-1)], dtype=object).reshape(array.shape)
        return encoded[()] if array.ndim == 0 else encoded

    @property
    def dtype(self) -> Any:  # type: ignore[override]
        numpy = np.ndarray.dtype.__get__(self)
        return TextDType(numpy) if numpy.kind in "US" else numpy


def _answering_numpy(value: Any) -> Any:
    """A NumPy array or scalar as an :class:`Element`; anything else (a tensor) as it is."""
    return np.asarray(value).view(Element) if isinstance(value, (np.ndarray, np.generic)) else value


class Dataset:
    """A re-iterable sequence of elements, each pass made by ``generate``."""

    def __init__(self, generate: Callable[[], Iterator[Any]], length: int | None) -> None:
        self._generate, self._length = generate, length

    @staticmethod
    def from_tensor_slices(tensors: Any) -> Dataset:
        """One element per row of ``tensors`` (an array, or a tuple, list or dict of arrays
        with the same number of rows)."""
        arrays = _normalized(tensors)
        if any(a.ndim == 0 for a in _leaves(arrays)):
            raise ValueError("Dataset.from_tensor_slices: a scalar has no rows to slice")
        rows = {len(a) for a in _leaves(arrays)}
        if len(rows) != 1:
            raise ValueError(f"Dataset.from_tensor_slices: the arrays have different numbers of rows: {sorted(rows)}")
        (count,) = rows

        def generate() -> Iterator[Any]:
            for i in range(count):
                yield _map(lambda a, i=i: a[i], arrays)

        return Dataset(generate, count)

    @staticmethod
    def from_tensors(tensors: Any) -> Dataset:
        element = _normalized(tensors)
        return Dataset(lambda: iter([element]), 1)

    @staticmethod
    def range(*args: int) -> Dataset:
        values = range(*args)
        return Dataset(lambda: (np.int64(v) for v in values), len(values))

    @staticmethod
    def list_files(file_pattern: Any, shuffle: bool | None = None, seed: int | None = None) -> Dataset:
        """The paths that match ``file_pattern`` (a glob, or a list of them), in a shuffled
        order unless ``shuffle=False`` (then sorted): ``tf.data.Dataset.list_files``."""
        found = Dataset.from_tensor_slices(np.array(matching_files(file_pattern, "Dataset.list_files")))
        return found if shuffle is False else found.shuffle(len(found), seed=seed)

    def __iter__(self) -> Iterator[Any]:
        return (_map(_answering_numpy, element) for element in self._generate())

    def __len__(self) -> int:
        if self._length is None:
            raise TypeError("this dataset repeats forever: it has no length")
        return self._length

    def cardinality(self) -> int:
        return -1 if self._length is None else self._length

    def as_numpy_iterator(self) -> Iterator[Any]:
        return (_map(np.asarray, element) for element in self._generate())

    def batch(self, batch_size: int, drop_remainder: bool = False, num_parallel_calls: Any = None, **kwargs) -> Dataset:
        if batch_size < 1:
            raise ValueError(f"Dataset.batch: batch_size must be at least 1, got {batch_size}")

        def chunks() -> Iterator[list[Any]]:
            elements = iter(self)
            while True:
                chunk = list(itertools.islice(elements, batch_size))
                if not chunk or (drop_remainder and len(chunk) < batch_size):
                    return
                yield chunk

        length = None
        if self._length is not None:
            length = self._length // batch_size if drop_remainder else -(-self._length // batch_size)
        batched = Dataset(lambda: (_stack(chunk) for chunk in chunks()), length)
        batched._chunks = chunks
        return batched

    def padded_batch(
        self,
        batch_size: int,
        padded_shapes: Any = None,
        padding_values: Any = None,
        drop_remainder: bool = False,
        name: str | None = None,
    ) -> Dataset:
        """Batches whose elements are padded, at the end of each axis, to the batch's
        largest (or to ``padded_shapes``, where a None dimension is the batch's largest)
        with ``padding_values`` (0, or "" for text): ``Dataset.padded_batch``."""
        batched = self.batch(batch_size, drop_remainder)

        def generate() -> Iterator[Any]:
            for chunk in batched._chunks():
                yield _padded(chunk, padded_shapes, padding_values)

        return Dataset(generate, batched._length)

    def shuffle(self, buffer_size: int, seed: int | None = None, reshuffle_each_iteration: bool = True) -> Dataset:
        if buffer_size < 1:
            raise ValueError(f"Dataset.shuffle: buffer_size must be at least 1, got {buffer_size}")
        base = np.random.default_rng(seed if seed is not None else np.random.randint(0, 2**62))
        fixed = base.integers(2**63)

        def generate() -> Iterator[Any]:
            rng = np.random.default_rng(base.integers(2**63) if reshuffle_each_iteration else fixed)
            elements, buffer = iter(self), []
            for element in elements:
                buffer.append(element)
                if len(buffer) == buffer_size:
                    break
            for element in elements:
                i = int(rng.integers(len(buffer)))
                yield buffer[i]
                buffer[i] = element
            rng.shuffle(buffer)
            yield from buffer

        return Dataset(generate, self._length)

    def map(self, map_func: Callable[..., Any], num_parallel_calls: Any = None, deterministic: Any = None) -> Dataset:
        """Elements ``map_func(*element)`` (a tuple is spread into arguments, as in TF)."""

        def apply(element: Any) -> Any:
            previous = default_device()
            set_default_device(CPU)
            try:
                result = map_func(*element) if isinstance(element, tuple) else map_func(element)
            finally:
                set_default_device(previous)
            return _map(_as_array, result)

        return Dataset(lambda: (apply(e) for e in self), self._length)

    def repeat(self, count: int | None = None) -> Dataset:
        def generate() -> Iterator[Any]:
            passes = itertools.count() if count is None or count < 0 else range(count)
            for _ in passes:
                yield from self

        forever = count is None or count < 0
        return Dataset(generate, None if forever or self._length is None else self._length * count)

    def take(self, count: int) -> Dataset:
        """The first ``count`` elements; every element for a negative count (TensorFlow's)."""
        if count < 0:
            return Dataset(lambda: iter(self), self._length)
        length = count if self._length is None else min(count, self._length)
        return Dataset(lambda: itertools.islice(self, count), length)

    def skip(self, count: int) -> Dataset:
        """The elements after the first ``count``; none for a negative count (TensorFlow's)."""
        if count < 0:
            return Dataset(lambda: iter(()), 0)
        length = None if self._length is None else max(self._length - count, 0)
        return Dataset(lambda: itertools.islice(self, count, None), length)

    def prefetch(self, buffer_size: int = AUTOTUNE) -> Dataset:
        return self

    def cache(self, filename: str = "") -> Dataset:
        return self


def TextLineDataset(  # noqa: N802 - TensorFlow's name
    filenames: Any, compression_type: str | None = None, buffer_size: int | None = None, num_parallel_reads: Any = None
) -> Dataset:
    """Each line of the text files ``filenames`` (one, or a list), without its line ending,
    as an element: ``tf.data.TextLineDataset``."""
    if compression_type:
        raise NotImplementedError("TextLineDataset: compressed files are not supported; decompress them first")
    names = [filenames] if isinstance(filenames, (str, bytes, os.PathLike)) else list(np.asarray(filenames).reshape(-1))
    paths = [os.fsdecode(name) if isinstance(name, (bytes, np.bytes_)) else os.fspath(str(name)) for name in names]

    def generate() -> Iterator[Any]:
        for path in paths:
            try:
                with open(path, encoding="utf-8", newline="\n") as file:  # lines end at "\n" only
                    for line in file:
                        yield np.str_(line.rstrip("\r\n"))
            except (OSError, UnicodeDecodeError) as error:
                raise DataError(f"TextLineDataset: {path}: {error}") from None

    return Dataset(generate, None)
