"""What Keras's ``image_dataset_from_directory`` and ``text_dataset_from_directory`` share:
a folder with one sub-folder of files per class as a ``tf.data.Dataset`` of batches.

As in Keras: the classes are the sub-folders in sorted order (or ``class_names``); the
files are listed per class in sorted order, then shuffled with ``seed``; a
``validation_split`` keeps the last fraction for ``subset="validation"`` (``"both"``
returns both datasets, which share one shuffled order, so they never overlap); each epoch
draws batches from a buffer of eight batches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from braze.data.dataset import Dataset
from braze.data.errors import DataError
from braze.data.image_folder import list_files

LABEL_MODES = ("int", "categorical", "binary", None)
SUBSETS = ("training", "validation", "both")


@dataclass(frozen=True)
class Source:
    """Where the files are and how they are read: ``load(path)`` gives one element."""

    who: str  # the Keras function's name, for messages
    directory: Any
    extensions: tuple[str, ...]
    load: Callable[[Path], Any]
    labels: Any = "inferred"
    label_mode: str | None = "int"
    class_names: Sequence[str] | None = None
    batch_size: int | None = 32
    shuffle: bool = True
    seed: int | None = None
    validation_split: float | None = None
    subset: str | None = None
    follow_links: bool = False
    verbose: bool = True

    @classmethod
    def of(cls, who: str, extensions: tuple[str, ...], load: Callable[[Path], Any], arguments: dict) -> Source:
        """The source a Keras function's ``arguments`` (its ``locals()``) describe: the
        fields they name alike."""
        named = {f.name for f in fields(cls)} - {"who", "extensions", "load"}
        return cls(who=who, extensions=extensions, load=load, **{name: arguments[name] for name in named})


def from_directory(source: Source) -> Dataset | tuple[Dataset, Dataset]:
    """The dataset (or the training and validation datasets) of ``source``'s files."""
    who = source.who
    if source.labels not in ("inferred", None):
        raise NotImplementedError(f"{who}: labels must be 'inferred' or None (a list is not supported)")
    if source.label_mode not in LABEL_MODES:
        raise ValueError(f"{who}: label_mode {source.label_mode!r} is not one of {LABEL_MODES}")
    _check_split(source)
    root = Path(source.directory)
    if not root.is_dir():
        raise DataError(f"{who}: {root} is not a directory")
    found = sorted(p.name for p in root.iterdir() if p.is_dir() and (source.follow_links or not p.is_symlink()))
    names = list(source.class_names) if source.class_names is not None else found
    if source.class_names is not None and sorted(source.class_names) != found:
        raise ValueError(f"{who}: class_names {list(source.class_names)} are not the sub-folders {found}")
    if source.labels is None:
        files = [p for p in sorted(root.rglob("*")) if p.suffix.lower() in source.extensions and p.is_file()]
        classes = np.zeros(len(files), np.int64)
    else:
        per_class = [list_files(root / name, source.extensions) for name in names]
        files = [path for paths in per_class for path in paths]
        classes = np.concatenate([np.full(len(paths), k, np.int64) for k, paths in enumerate(per_class)] or [[]])
    if not files:
        raise DataError(f"{who}: no files ({', '.join(source.extensions)}) under {root}")
    if source.label_mode == "binary" and len(names) != 2:
        raise ValueError(f"{who}: label_mode 'binary' needs 2 classes, found {len(names)}")
    seed = source.seed
    if source.shuffle:
        seed = np.random.randint(1_000_000) if seed is None else seed
        order = np.random.RandomState(seed).permutation(len(files))
        files, classes = [files[i] for i in order], classes[order]
    say = print if source.verbose else (lambda *_: None)
    say(f"Found {len(files)} files belonging to {len(names)} classes.")
    batches = _Batches(source, len(names), seed)
    if source.validation_split:
        cut = len(files) - int(source.validation_split * len(files))
        parts = {"training": (files[:cut], classes[:cut]), "validation": (files[cut:], classes[cut:])}
        for part, (paths, _) in parts.items():
            say(f"Using {len(paths)} files for {part}.")
        if source.subset == "both":
            return tuple(batches.dataset(*parts[part], names) for part in ("training", "validation"))
        return batches.dataset(*parts[source.subset], names)
    return batches.dataset(files, classes, names)


def _check_split(source: Source) -> None:
    who, split, subset = source.who, source.validation_split, source.subset
    if split and not 0 < split < 1:
        raise ValueError(f"{who}: validation_split must be in (0, 1), got {split}")
    if bool(split) != (subset is not None) or (subset is not None and subset not in SUBSETS):
        raise ValueError(
            f"{who}: give validation_split with subset 'training', 'validation' or 'both' "
            f"(got validation_split={split!r}, subset={subset!r})"
        )
    if split and source.shuffle and source.seed is None:
        raise ValueError(f"{who}: a validation_split of shuffled files needs a seed")


@dataclass(frozen=True)
class _Batches:
    """How files become batches, shared by the training and validation datasets."""

    source: Source
    classes: int
    seed: int | None

    def label(self, k: int) -> np.ndarray:
        mode = self.source.label_mode
        if mode == "categorical":
            return np.eye(self.classes, dtype=np.float32)[k]
        if mode == "binary":
            return np.array([k], np.float32)
        return np.int32(k)

    def dataset(self, files: list[Path], classes: np.ndarray, names: list[str]) -> Dataset:
        source = self.source
        labelled = source.labels is not None and source.label_mode is not None

        def generate() -> Iterator[Any]:
            for path, k in zip(files, classes, strict=True):
                yield (source.load(path), self.label(int(k))) if labelled else source.load(path)

        data = Dataset(generate, len(files))
        if source.shuffle and source.batch_size:
            data = data.shuffle(source.batch_size * 8, seed=self.seed)
        if source.batch_size:
            data = data.batch(source.batch_size)
        data.class_names = names
        data.file_paths = [str(p) for p in files]
        return data
