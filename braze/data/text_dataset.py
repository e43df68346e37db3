"""Keras's ``text_dataset_from_directory``: a folder with one sub-folder of ``.txt`` files
per class as a ``tf.data.Dataset`` of batches of text (see
:mod:`braze.data.directory_dataset`). Each file is one element: its text, decoded as
UTF-8, as a ``str`` (a batch is a NumPy array of them; braze tensors hold numbers).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from braze.data.dataset import Dataset
from braze.data.directory_dataset import Source, from_directory
from braze.data.errors import DataError


def text_dataset_from_directory(
    directory: str | os.PathLike,
    labels: Any = "inferred",
    label_mode: str | None = "int",
    class_names: Any = None,
    batch_size: int | None = 32,
    max_length: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    validation_split: float | None = None,
    subset: str | None = None,
    follow_links: bool = False,
    verbose: bool = True,
) -> Dataset | tuple[Dataset, Dataset]:
    """The text files under ``directory`` as batches ``(texts, labels)`` (``texts`` alone
    with ``label_mode=None``), each text cut to its first ``max_length`` characters."""
    arguments = dict(locals())
    if max_length is not None and max_length < 0:
        raise ValueError(f"text_dataset_from_directory: max_length must be at least 0, got {max_length}")
    load = functools.partial(_text, max_length)
    return from_directory(Source.of("text_dataset_from_directory", (".txt",), load, arguments))


def _text(max_length: int | None, path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise DataError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    return text if max_length is None else text[:max_length]
