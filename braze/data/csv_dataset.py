"""``tf.data.experimental.make_csv_dataset``: CSV files as a ``Dataset`` of batches of
``(features, label)``, the features a dict of columns.

As TensorFlow reads them: the header names the columns (or ``column_names`` does); a
column is int32 where every value of the first ``num_rows_for_inference`` rows is an
integer, float32 where every one is a number, text otherwise (or the types of
``column_defaults``); an empty field (``na_value``) takes its column's default (0, or ""
for text); ``num_epochs=None`` repeats the rows forever, shuffled by a buffer of
``shuffle_buffer_size``.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from typing import Any

import numpy as np

from braze.data.dataset import AUTOTUNE, Dataset, matching_files
from braze.data.errors import DataError

__all__ = ["experimental", "make_csv_dataset"]


def _kind(values: list[str], na_value: str) -> type:
    """int, float or str: what every value of a column (but the missing ones) reads as; a
    column of none is text, as TensorFlow infers it."""
    present = [v for v in values if v and v != na_value]
    for kind in (int, float):
        try:
            for value in present:
                kind(value)
            return kind if present else str
        except ValueError:
            continue
    return str


def _default(default: Any) -> tuple[type, Any]:
    """The type and the fill of a column from its ``column_defaults`` entry: a value (0,
    0.0, "") or a one-element list of one, TensorFlow's ``[0.0]``."""
    if isinstance(default, (list, tuple, np.ndarray)):
        default = default[0] if len(default) else ""
    if isinstance(default, (str, bytes)):
        return str, default.decode() if isinstance(default, bytes) else default
    return (float, float(default)) if isinstance(default, (float, np.floating)) else (int, int(default))


def _column(texts: list[str], kind: type, fill: Any, na_value: str) -> np.ndarray:
    values = [fill if text in ("", na_value) else kind(text) for text in texts]
    if kind is str:
        return np.array(values, dtype=str)
    if kind is float:
        return np.array(values, dtype=np.float32)
    wide = any(abs(v) > np.iinfo(np.int32).max for v in values)  # TensorFlow infers int64 past int32's range
    return np.array(values, dtype=np.int64 if wide else np.int32)


def make_csv_dataset(
    file_pattern: Any,
    batch_size: int,
    column_names: Sequence[str] | None = None,
    column_defaults: Sequence[Any] | None = None,
    label_name: str | None = None,
    select_columns: Sequence[Any] | None = None,
    field_delim: str = ",",
    use_quote_delim: bool = True,
    na_value: str = "",
    header: bool = True,
    num_epochs: int | None = None,
    shuffle: bool = True,
    shuffle_buffer_size: int = 10000,
    shuffle_seed: int | None = None,
    prefetch_buffer_size: Any = None,
    num_parallel_reads: Any = None,
    sloppy: bool = False,
    num_rows_for_inference: int = 100,
    compression_type: str | None = None,
    ignore_errors: bool = False,
    encoding: str = "utf-8",
) -> Dataset:
    """The rows of the CSV files ``file_pattern`` (a glob or a list of paths) in batches of
    ``batch_size`` ``(features, label)`` (``features`` alone without ``label_name``)."""
    if compression_type:
        raise NotImplementedError("make_csv_dataset: compressed files are not supported; decompress them first")
    paths = matching_files(file_pattern, "make_csv_dataset")
    rows, names = [], list(column_names) if column_names is not None else None
    for path in paths:
        with open(path, newline="", encoding=encoding) as file:
            quoting = csv.QUOTE_MINIMAL if use_quote_delim else csv.QUOTE_NONE
            lines = list(csv.reader(file, delimiter=field_delim, quoting=quoting))
        if header and lines:
            first, lines = lines[0], lines[1:]
            names = names or first
        rows += [line for line in lines if line]
    if names is None:
        raise ValueError("make_csv_dataset: give column_names for files without a header")
    bad = [k for k, row in enumerate(rows) if len(row) != len(names)]
    if bad and not ignore_errors:
        raise DataError(f"make_csv_dataset: row {bad[0] + 1} has {len(rows[bad[0]])} fields, not {len(names)}")
    dropped = set(bad)
    rows = [row for k, row in enumerate(rows) if k not in dropped]
    kept = [names[c] if isinstance(c, int) else c for c in select_columns] if select_columns else list(names)
    if label_name is not None and label_name not in names:
        raise ValueError(f"make_csv_dataset: label_name {label_name!r} is not a column of {names}")
    described = list(kept) if select_columns else names  # what column_defaults go with, one each
    if column_defaults is not None and len(column_defaults) != len(described):
        raise ValueError(
            f"make_csv_dataset: {len(column_defaults)} column_defaults for {len(described)} columns (one per "
            "selected column, as TensorFlow takes them)"
        )
    given = dict(zip(described, column_defaults or [], strict=False))
    if label_name is not None and label_name not in kept:
        kept.append(label_name)
    sample = rows[:num_rows_for_inference]
    columns = {}
    for name in kept:
        texts = [row[names.index(name)] for row in rows]
        if name in given:
            kind, fill = _default(given[name])
        else:
            kind = _kind([row[names.index(name)] for row in sample], na_value)
            fill = kind()
        columns[name] = _column(texts, kind, fill, na_value)
    labels = columns.pop(label_name) if label_name is not None else None
    data = Dataset.from_tensor_slices((columns, labels) if labels is not None else columns)
    if shuffle:
        data = data.shuffle(shuffle_buffer_size, seed=shuffle_seed)
    return data.repeat(num_epochs).batch(batch_size)


class _Experimental:
    """``tf.data.experimental``: ``make_csv_dataset`` and ``AUTOTUNE``."""

    make_csv_dataset = staticmethod(make_csv_dataset)
    AUTOTUNE = AUTOTUNE


experimental = _Experimental()
"""``tf.data.experimental``: ``make_csv_dataset`` and ``AUTOTUNE``."""
