"""TensorFlow's ``tf.strings`` for text held as NumPy arrays of ``str``.

braze tensors hold numbers, so text stays on the host: where TensorFlow has a string
tensor, braze has a NumPy array of ``str`` (bytes are decoded as UTF-8), and where it has
a ragged tensor of tokens (``tf.strings.split``), a list of lists of ``str``. These are
the functions a Keras program passes to ``TextVectorization`` as its ``standardize`` or
``split``, or calls in a ``tf.data`` map; TextVectorization uses them too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from braze.ir.dtypes import as_dtype
from braze.ops.core import as_tensor
from braze.tensor import Tensor

__all__ = [
    "as_strings",
    "is_text",
    "join",
    "length",
    "lower",
    "ngrams",
    "reduce_join",
    "regex_replace",
    "split",
    "strip",
    "to_number",
    "unicode_split",
    "upper",
]

# TensorFlow's lower and upper change ASCII letters only, unless told the encoding.
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_ASCII_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def is_text(value: Any) -> bool:
    """Text, as braze holds it: a str or bytes, a list of them, or a NumPy array of them
    (a pandas column of text is an array of objects)."""
    if isinstance(value, (str, bytes)):
        return True
    if isinstance(value, (list, tuple)):
        return bool(value) and is_text(value[0])
    if not isinstance(value, np.ndarray):
        return False
    return value.dtype.kind in "US" or (value.dtype == object and value.size > 0 and is_text(value.flat[0]))


def as_strings(value: Any, who: str = "tf.strings") -> np.ndarray:
    """``value`` (a str, bytes, or a list, tuple or NumPy array of them) as a NumPy array of
    ``str``; a tensor, which holds numbers, is refused."""
    if isinstance(value, Tensor):
        raise TypeError(f"{who}: expected strings, got a {value.dtype.name} tensor (braze tensors hold numbers)")
    array = np.asarray(value)
    if array.dtype.kind == "U":
        return array
    if array.dtype.kind not in "SO":
        raise TypeError(f"{who}: expected strings, got an array of {array.dtype}")
    flat = [_decoded(item, who) for item in array.reshape(-1)]
    return np.array(flat, dtype=str).reshape(array.shape) if flat else np.zeros(array.shape, dtype=str)


def _decoded(item: Any, who: str) -> str:
    if isinstance(item, (bytes, np.bytes_)):
        return bytes(item).decode("utf-8")
    if isinstance(item, str):
        return str(item)
    raise TypeError(f"{who}: expected strings, got {type(item).__name__} {item!r}")


def _each(value: Any, fn: Any, who: str) -> np.ndarray:
    array = as_strings(value, who)
    out = [fn(s) for s in array.reshape(-1)]
    return np.array(out, dtype=str).reshape(array.shape) if out else array


def lower(input: Any, encoding: str = "", name: str | None = None) -> np.ndarray:
    """Each string in lower case: ASCII letters only, as TensorFlow, unless ``encoding`` is
    ``"utf-8"``."""
    if encoding.lower().replace("-", "") == "utf8":
        return _each(input, str.lower, "tf.strings.lower")
    return _each(input, lambda s: s.translate(_ASCII_LOWER), "tf.strings.lower")


def upper(input: Any, encoding: str = "", name: str | None = None) -> np.ndarray:
    """Each string in upper case: ASCII letters only, as TensorFlow, unless ``encoding`` is
    ``"utf-8"``."""
    if encoding.lower().replace("-", "") == "utf8":
        return _each(input, str.upper, "tf.strings.upper")
    return _each(input, lambda s: s.translate(_ASCII_UPPER), "tf.strings.upper")


def regex_replace(
    input: Any, pattern: str, rewrite: str, replace_global: bool = True, name: str | None = None
) -> np.ndarray:
    """Each string with the matches of ``pattern`` replaced by ``rewrite`` (``\\0`` the match,
    ``\\1`` a group, as RE2 writes them), every match or the first (``replace_global=False``).
    Python's ``re`` reads the pattern; RE2's syntax, which TensorFlow reads, is nearly all
    the same."""
    compiled = re.compile(pattern)
    count = 0 if replace_global else 1
    template = _python_template(rewrite)
    return _each(input, lambda s: compiled.sub(template, s, count=count), "tf.strings.regex_replace")


def _python_template(rewrite: str) -> str:
    """RE2's rewrite string as Python's: ``\\0`` is the whole match, ``\\1``-``\\9`` the
    groups, ``\\\\`` a backslash; any other escape is an error, as in RE2."""
    parts, k = [], 0
    while k < len(rewrite):
        char = rewrite[k]
        if char != "\\":
            parts.append(char)
            k += 1
            continue
        following = rewrite[k + 1 : k + 2]
        if following.isdigit():
            parts.append(f"\\g<{following}>")
        elif following == "\\":
            parts.append("\\\\")
        else:
            raise ValueError(f"tf.strings.regex_replace: rewrite {rewrite!r} has an invalid escape \\{following}")
        k += 2
    return "".join(parts)


def strip(input: Any, name: str | None = None) -> np.ndarray:
    """Each string without its leading and trailing whitespace."""
    return _each(input, str.strip, "tf.strings.strip")


def to_number(string_tensor: Any, out_type: Any = "float32", name: str | None = None) -> Tensor:
    """Each string read as a number, a tensor of ``out_type`` (float32 by default):
    ``tf.strings.to_number``."""
    array = as_strings(string_tensor, "tf.strings.to_number")
    dtype = as_dtype(out_type, "tf.strings.to_number")
    try:
        values = [float(s) if dtype.is_float else int(s) for s in array.reshape(-1)]
    except ValueError as error:
        raise ValueError(f"tf.strings.to_number: {error}") from None
    # dtype.compute: bfloat16's NumPy twin is its uint16 storage; its values go through float32
    return as_tensor(np.array(values, dtype=dtype.compute.numpy).reshape(array.shape), dtype=dtype)


def length(input: Any, unit: str = "BYTE", name: str | None = None) -> np.ndarray:
    """Each string's length (int32) in UTF-8 bytes, or in characters (``unit="UTF8_CHAR"``)."""
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError(f"tf.strings.length: unit must be 'BYTE' or 'UTF8_CHAR', got {unit!r}")
    array = as_strings(input, "tf.strings.length")
    size = (lambda s: len(s.encode("utf-8"))) if unit == "BYTE" else len
    return np.array([size(s) for s in array.reshape(-1)], np.int32).reshape(array.shape)


def join(inputs: Sequence[Any], separator: str = "", name: str | None = None) -> np.ndarray:
    """The strings of ``inputs`` (arrays of one shape, or strings) joined element by element."""
    arrays = np.broadcast_arrays(*[as_strings(x, "tf.strings.join") for x in inputs])
    out = [separator.join(parts) for parts in zip(*(a.reshape(-1) for a in arrays), strict=True)]
    return np.array(out, dtype=str).reshape(arrays[0].shape) if out else arrays[0]


def reduce_join(
    inputs: Any, axis: int | None = None, keepdims: bool = False, separator: str = "", name: str | None = None
) -> np.ndarray:
    """The strings of ``inputs`` joined along ``axis`` (all of them when None), as
    ``tf.strings.reduce_join``."""
    array = as_strings(inputs, "tf.strings.reduce_join")
    if axis is None:
        return np.array(separator.join(array.reshape(-1)), dtype=str)
    rows = np.moveaxis(array, axis, -1)
    joined = np.array([separator.join(row) for row in rows.reshape(-1, rows.shape[-1])], dtype=str)
    joined = joined.reshape(rows.shape[:-1])
    return np.expand_dims(joined, axis) if keepdims else joined


def split(input: Any, sep: str | None = None, maxsplit: int = -1, name: str | None = None) -> Any:
    """Each string's pieces between ``sep`` (runs of whitespace, with none at the ends, when
    ``sep`` is None): a list of ``str`` for one string, a list of such lists for a 1-D
    array (TensorFlow's ragged tensor)."""
    array = as_strings(input, "tf.strings.split")
    if array.ndim > 1:
        raise ValueError(f"tf.strings.split: a string or a 1-D array of them, got shape {array.shape}")
    pieces = [s.split(sep or None, maxsplit) for s in array.reshape(-1)]  # TensorFlow's "" is whitespace too
    return pieces[0] if array.ndim == 0 else pieces


def unicode_split(input: Any, input_encoding: str = "UTF-8", name: str | None = None) -> Any:
    """Each string's characters: a list for one string, a list of lists for a 1-D array."""
    array = as_strings(input, "tf.strings.unicode_split")
    if array.ndim > 1:
        raise ValueError(f"tf.strings.unicode_split: a string or a 1-D array of them, got shape {array.shape}")
    pieces = [list(s) for s in array.reshape(-1)]
    return pieces[0] if array.ndim == 0 else pieces


def ngrams(
    data: Any, ngram_width: int | Sequence[int], separator: str = " ", name: str | None = None
) -> list[list[str]]:
    """The n-grams of each row of tokens (a list of lists of ``str``, or a 2-D array): for
    each width in ``ngram_width`` in turn, every run of that many tokens joined by
    ``separator``."""
    widths = (ngram_width,) if isinstance(ngram_width, int) else tuple(ngram_width)
    if not widths or any(int(w) < 1 for w in widths):
        raise ValueError(f"tf.strings.ngrams: ngram_width must be positive, got {ngram_width!r}")
    rows = [list(row) for row in data]
    return [
        [separator.join(row[i : i + width]) for width in widths for i in range(len(row) - width + 1)] for row in rows
    ]
