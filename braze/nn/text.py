"""Keras's preprocessing layers for text: ``StringLookup`` (strings to their indices in a
vocabulary) and ``TextVectorization`` (text to sequences of token indices, or to
multi-hot, count or TF-IDF vectors).

braze tensors hold numbers, so these layers take text as NumPy arrays of ``str`` (or
lists of them; see :mod:`braze.ops.strings`) and give tensors of indices or vectors.
They run eagerly, in a ``tf.data`` map (``dataset.map(lambda text, label:
(vectorize(text), label))``), or in a model of a text input (``keras.Input(dtype=
"string")``), where they run on the host on each batch before the rest of the model.

As in Keras: ``adapt`` learns the ``max_tokens`` most frequent tokens, ties broken by
the tokens in decreasing order; index 0 is the mask token's where there is one (in
``"int"`` mode), then the out-of-vocabulary token's, then the vocabulary's; a TF-IDF
weight is ``log(1 + documents / (1 + documents holding the token))``, and the
out-of-vocabulary index weighs the mean of the vocabulary's.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from braze import ops
from braze.nn import symbolic
from braze.nn.categorical import KERAS_2_MODES, encode_categories
from braze.nn.layer import Layer
from braze.ops import strings
from braze.runtime.device import default_device
from braze.tensor import Tensor

__all__ = ["StringLookup", "TextVectorization"]

_OUTPUT_MODES = ("int", "one_hot", "multi_hot", "count", "tf_idf")
_STRIP = r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']'  # Keras's punctuation, stripped by default
_STANDARDIZE = ("lower_and_strip_punctuation", "lower", "strip_punctuation")
_SPLIT = ("whitespace", "character")


def _batches(data: Any, steps: int | None) -> Iterable[Any]:
    """What ``adapt`` reads: an array or list is one batch; a dataset or other iterable
    gives its first ``steps`` batches."""
    if isinstance(data, (np.ndarray, list, tuple, str, bytes)):
        return [data]
    return itertools.islice(data, steps)


class StringLookup(Layer):
    """Strings to their indices in a vocabulary (``vocabulary``, a list or a file of one
    token a line, or learned by ``adapt``), as int64 tensors; ``output_mode`` ``"one_hot"``,
    ``"multi_hot"``, ``"count"`` or ``"tf_idf"`` encodes the indices as vectors (float32);
    ``invert=True`` maps indices back to strings (a NumPy array)."""

    reads_text = True  # a model's text input may feed it

    def __init__(
        self,
        max_tokens: int | None = None,
        num_oov_indices: int = 1,
        mask_token: str | None = None,
        oov_token: str = "[UNK]",
        vocabulary: Any = None,
        idf_weights: Any = None,
        invert: bool = False,
        output_mode: str = "int",
        pad_to_max_tokens: bool = False,
        sparse: bool = False,
        encoding: str = "utf-8",
        **kwargs: Any,
    ) -> None:
        kind = type(self).__name__
        output_mode = KERAS_2_MODES.get(output_mode, output_mode)
        if num_oov_indices not in (0, 1):
            raise NotImplementedError(
                f"{kind}: num_oov_indices of 0 or 1 (more hash unknown strings over several indices, which braze "
                "does not)"
            )
        if output_mode not in _OUTPUT_MODES:
            raise ValueError(f"{kind}: output_mode must be one of {_OUTPUT_MODES}, got {output_mode!r}")
        if sparse:
            raise NotImplementedError(f"{kind}: sparse=True is not supported (braze tensors are dense)")
        if invert and output_mode != "int":
            raise ValueError(f"{kind}: invert=True maps indices back to strings, with output_mode='int' only")
        if pad_to_max_tokens and max_tokens is None:
            raise ValueError(f"{kind}: pad_to_max_tokens=True needs max_tokens")
        if idf_weights is not None and output_mode != "tf_idf":
            raise ValueError(f"{kind}: idf_weights are read only with output_mode='tf_idf'")
        super().__init__(**kwargs)
        self.max_tokens, self.num_oov_indices = max_tokens, int(num_oov_indices)
        self.mask_token, self.oov_token, self.encoding = mask_token, oov_token, encoding
        self.invert, self.output_mode, self.pad_to_max_tokens = invert, output_mode, pad_to_max_tokens
        self._tokens: list[str] | None = None
        self._idf_weights: list[float] | None = None
        self._counts: Counter[str] = Counter()
        self._documents: Counter[str] = Counter()
        self._document_count = 0
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)
        elif idf_weights is not None:
            raise ValueError(f"{kind}: idf_weights come with a vocabulary")

    # The vocabulary -------------------------------------------------------------------

    def _token_start(self) -> int:
        """The first vocabulary token's index: after the mask token's (in ``"int"`` mode)
        and the out-of-vocabulary one's."""
        return (self.mask_token is not None and self.output_mode == "int") + self.num_oov_indices

    def _specials(self) -> list[str]:
        mask = [self.mask_token] if self.mask_token is not None and self.output_mode == "int" else []
        return mask + [self.oov_token] * self.num_oov_indices

    def set_vocabulary(self, vocabulary: Any, idf_weights: Any = None) -> None:
        """Use ``vocabulary`` (its special tokens first, or none of them), with
        ``idf_weights`` (one per token) in ``"tf_idf"`` mode."""
        if isinstance(vocabulary, (str, os.PathLike)):
            with open(vocabulary, encoding=self.encoding) as file:
                vocabulary = [line.rstrip("\n") for line in file]
        if not len(vocabulary):
            raise ValueError(f"{self.name}: the vocabulary is empty")
        given = [str(t) for t in strings.as_strings(list(vocabulary), self.name).reshape(-1)]
        specials = self._specials()
        with_specials = given[: len(specials)] == specials
        tokens = given[len(specials) :] if with_specials else given
        repeated = sorted(t for t, n in Counter(tokens).items() if n > 1)
        if repeated:
            raise ValueError(f"{self.name}: the vocabulary repeats {repeated}")
        if self.mask_token is not None and self.mask_token in tokens:
            raise ValueError(
                f"{self.name}: the mask token {self.mask_token!r} is in the vocabulary; give it first, before the "
                "out-of-vocabulary token, or not at all"
            )
        if self.max_tokens is not None and self._token_start() + len(tokens) > self.max_tokens:
            raise ValueError(
                f"{self.name}: a vocabulary of {self._token_start() + len(tokens)} tokens with the special ones, "
                f"more than max_tokens={self.max_tokens}"
            )
        if self.output_mode == "tf_idf":
            if idf_weights is None:
                raise ValueError(f"{self.name}: output_mode='tf_idf' with a vocabulary needs its idf_weights")
            weights = [float(w) for w in np.asarray(idf_weights, np.float64).reshape(-1)]
            if len(weights) != len(given):
                raise ValueError(f"{self.name}: {len(weights)} idf_weights for a vocabulary of {len(given)}")
            if not with_specials:  # the special tokens weigh the mean, as in Keras
                weights = [float(np.mean(weights))] * len(specials) + weights
            self._idf_weights = weights
        self._tokens = tokens

    def get_vocabulary(self, include_special_tokens: bool = True) -> list[str]:
        """Every index's token, from index 0 (without the special tokens when
        ``include_special_tokens`` is False)."""
        tokens = self._tokens or []
        return [*self._specials(), *tokens] if include_special_tokens else list(tokens)

    def vocabulary_size(self) -> int:
        return len(self.get_vocabulary())

    def get_config(self) -> dict[str, Any]:
        """The arguments, with the vocabulary (and TF-IDF weights) it has."""
        return {
            **super().get_config(),
            **self._vocabulary_config(),
        }

    def _vocabulary_config(self) -> dict[str, Any]:
        """The vocabulary without its special tokens, and the TF-IDF weights of its tokens:
        what ``set_vocabulary`` takes back."""
        weights = self._idf_weights
        if self._tokens is None or weights is None:
            return {"vocabulary": self._tokens, "idf_weights": None}
        return {"vocabulary": self._tokens, "idf_weights": weights[self._token_start() :]}

    # Learning it ----------------------------------------------------------------------

    def adapt(self, data: Any, batch_size: int | None = None, steps: int | None = None) -> None:
        """Learn the vocabulary from ``data``: strings, or a dataset of batches of them
        (each element of a 1-D array is a document, each row of a 2-D one)."""
        self._count_rows(_rows(batch, self.name) for batch in _batches(data, steps))
        self._finish_adapting()

    def _count_rows(self, batches: Iterable[list[list[str]]]) -> None:
        self._counts.clear()
        self._documents.clear()
        self._document_count = 0
        for rows in batches:
            for row in rows:
                self._counts.update(row)
                self._documents.update(set(row))
            self._document_count += len(rows)

    def _finish_adapting(self) -> None:
        if not self._document_count:
            raise ValueError(f"{self.name}.adapt: the data holds no strings")
        for special in (self.mask_token, self.oov_token):
            self._counts.pop(special, None)
        ranked = sorted(self._counts.items(), key=lambda item: (item[1], item[0]), reverse=True)
        kept = None if self.max_tokens is None else max(self.max_tokens - self._token_start(), 0)
        self._tokens = [token for token, _ in ranked[:kept]]
        if self.output_mode == "tf_idf":
            documents = self._document_count
            weights = [float(np.log1p(documents / (1 + self._documents[t]))) for t in self._tokens]
            mean = float(np.mean(weights)) if weights else 0.0
            self._idf_weights = [mean] * self._token_start() + weights
        self._counts.clear()
        self._documents.clear()

    # Calling --------------------------------------------------------------------------

    def _ready(self) -> list[str]:
        if self._tokens is None:
            raise ValueError(f"{self.name}: give a vocabulary or adapt the layer to data before calling it")
        return self._tokens

    def _indices(self, tokens: np.ndarray) -> np.ndarray:
        """Each token's index (int64); in modes other than ``"int"`` the mask token's is -1,
        which encodes to nothing."""
        start = self._token_start()
        table = {token: start + k for k, token in enumerate(self._ready())}
        oov = start - self.num_oov_indices if self.num_oov_indices else None
        if self.mask_token is not None:
            table[self.mask_token] = 0 if self.output_mode == "int" else -1
        found = [table.get(token, oov) for token in tokens.reshape(-1)]
        if oov is None and None in found and symbolic.shapes_only():  # a model's made-up text: only shapes count
            found = [0 if k is None else k for k in found]
        if oov is None and None in found:
            unknown = sorted({t for t, k in zip(tokens.reshape(-1), found, strict=True) if k is None})
            raise ValueError(f"{self.name}: {unknown[:5]} are not in the vocabulary and num_oov_indices is 0")
        return np.array(found, np.int64).reshape(tokens.shape)

    def _encoded(self, indices: np.ndarray) -> Tensor:
        """The indices as the layer's output: a tensor of them in ``"int"`` mode, else the
        vectors ``output_mode`` names."""
        device = self.device or default_device()
        index = ops.as_tensor(indices, device=device)
        if self.output_mode == "int":
            return index
        depth = self.max_tokens if self.pad_to_max_tokens else self.vocabulary_size()
        mode = "count" if self.output_mode == "tf_idf" else self.output_mode
        encoded = encode_categories(index, depth, mode, who=self.name)
        if self.output_mode != "tf_idf":
            return encoded
        weights = np.zeros(depth, np.float32)
        weights[: len(self._idf_weights or [])] = self._idf_weights or []
        return encoded * ops.as_tensor(weights, device=device)

    def call(self, inputs: Any) -> Any:
        if self.invert:
            return self._inverted(inputs)
        return self._encoded(self._indices(strings.as_strings(inputs, self.name)))

    def _inverted(self, inputs: Any) -> np.ndarray:
        self._ready()
        indices = np.asarray(inputs.numpy() if isinstance(inputs, Tensor) else inputs)
        if indices.dtype.kind not in "iu":
            raise TypeError(f"{self.name}: invert=True maps integer indices to strings, got {indices.dtype}")
        table = np.array(self.get_vocabulary(), dtype=str)
        unknown = (indices < 0) | (indices >= len(table))
        found = table[np.where(unknown, 0, indices)]
        return np.where(unknown, self.oov_token, found)


def _rows(batch: Any, who: str) -> list[list[str]]:
    """A batch of strings as documents of tokens: each element of a 1-D array (or a string
    alone) one document of one token, each row of a 2-D array one document."""
    array = strings.as_strings(batch.numpy() if hasattr(batch, "numpy") else batch, who)
    if array.ndim > 2:
        raise ValueError(f"{who}: strings of rank at most 2 (documents of tokens), got shape {array.shape}")
    return [[str(t) for t in row] for row in array.reshape(-1, 1 if array.ndim < 2 else array.shape[-1])]


class TextVectorization(Layer):
    """Text to token indices (``"int"``: a sequence a string, padded with 0 to
    ``output_sequence_length`` or to the batch's longest, and cut to it) or to
    ``"multi_hot"``, ``"count"`` or ``"tf_idf"`` vectors of ``max_tokens``: each string
    standardized (``standardize``: lower-cased and stripped of punctuation, by default, or a
    function of a NumPy array of strings), split (on whitespace, into characters, or by a
    function giving each string's list of tokens), and joined into ``ngrams``."""

    reads_text = True  # a model's text input may feed it

    def __init__(
        self,
        max_tokens: int | None = None,
        standardize: str | Callable[[np.ndarray], Any] | None = "lower_and_strip_punctuation",
        split: str | Callable[[np.ndarray], Any] | None = "whitespace",
        ngrams: int | Sequence[int] | None = None,
        output_mode: str = "int",
        output_sequence_length: int | None = None,
        pad_to_max_tokens: bool = False,
        vocabulary: Any = None,
        idf_weights: Any = None,
        sparse: bool = False,
        ragged: bool = False,
        encoding: str = "utf-8",
        **kwargs: Any,
    ) -> None:
        if not (standardize is None or callable(standardize) or standardize in _STANDARDIZE):
            raise ValueError(
                f"TextVectorization: standardize must be None, a function or one of {_STANDARDIZE}, got {standardize!r}"
            )
        if not (split is None or callable(split) or split in _SPLIT):
            raise ValueError(f"TextVectorization: split must be None, a function or one of {_SPLIT}, got {split!r}")
        if output_mode not in ("int", "multi_hot", "count", "tf_idf"):
            raise ValueError(
                f"TextVectorization: output_mode must be 'int', 'multi_hot', 'count' or 'tf_idf', got {output_mode!r}"
            )
        if output_sequence_length is not None and output_mode != "int":
            raise ValueError("TextVectorization: output_sequence_length is for output_mode='int' only")
        if sparse:
            raise NotImplementedError("TextVectorization: sparse=True is not supported (braze tensors are dense)")
        if ragged:
            raise NotImplementedError(
                "TextVectorization: ragged=True is not supported (braze tensors are dense): sequences are padded with 0"
            )
        if isinstance(ngrams, int) and ngrams < 1:
            raise ValueError(f"TextVectorization: ngrams must be positive, got {ngrams}")
        super().__init__(**kwargs)
        self.standardize, self.split, self.ngrams = standardize, split, ngrams
        self.output_mode, self.output_sequence_length = output_mode, output_sequence_length
        self._widths = tuple(range(1, ngrams + 1)) if isinstance(ngrams, int) else ngrams
        self.lookup = StringLookup(
            max_tokens=max_tokens,
            mask_token="",
            vocabulary=vocabulary,
            idf_weights=idf_weights,
            output_mode=output_mode,
            pad_to_max_tokens=pad_to_max_tokens,
            encoding=encoding,
            name=f"{self.name}_lookup",
        )

    def get_vocabulary(self, include_special_tokens: bool = True) -> list[str]:
        """Every index's token: ``""`` (padding) and ``"[UNK]"`` first in ``"int"`` mode."""
        return self.lookup.get_vocabulary(include_special_tokens)

    def vocabulary_size(self) -> int:
        return self.lookup.vocabulary_size()

    def set_vocabulary(self, vocabulary: Any, idf_weights: Any = None) -> None:
        self.lookup.set_vocabulary(vocabulary, idf_weights)

    def get_config(self) -> dict[str, Any]:
        lookup = self.lookup
        return {
            **super().get_config(),
            "max_tokens": lookup.max_tokens,
            "pad_to_max_tokens": lookup.pad_to_max_tokens,
            **lookup._vocabulary_config(),
        }

    def adapt(self, data: Any, batch_size: int | None = None, steps: int | None = None) -> None:
        """Learn the vocabulary (and the TF-IDF weights) from ``data``: strings, or a
        dataset of batches of them; each string is a document."""
        self.lookup._count_rows(self._tokens(batch) for batch in _batches(data, steps))
        self.lookup._finish_adapting()

    def _tokens(self, inputs: Any) -> list[list[str]]:
        """Each string of ``inputs`` (1-D, or 2-D of one column) as its tokens."""
        text = strings.as_strings(inputs.numpy() if hasattr(inputs, "numpy") else inputs, self.name)
        if self.split is not None:
            if text.ndim == 2 and text.shape[-1] == 1:
                text = text[:, 0]
            if text.ndim > 1:
                raise ValueError(
                    f"{self.name}: strings to split come in a 1-D array or one column, got shape {text.shape}"
                )
            text = text.reshape(-1)
        standardized = self._standardized(text)
        if self.split is None:
            rows = _rows(standardized, self.name)
        elif self.split == "whitespace":
            rows = [s.split() for s in standardized.reshape(-1)]
        elif self.split == "character":
            rows = [list(s) for s in standardized.reshape(-1)]
        else:
            pieces = self.split(standardized)
            rows = [[str(t) for t in strings.as_strings(row, self.name).reshape(-1)] for row in pieces]
        return strings.ngrams(rows, self._widths) if self._widths else rows

    def _standardized(self, text: np.ndarray) -> np.ndarray:
        if callable(self.standardize):
            return strings.as_strings(self.standardize(text), self.name)
        if self.standardize in ("lower", "lower_and_strip_punctuation"):
            text = strings.lower(text)
        if self.standardize in ("strip_punctuation", "lower_and_strip_punctuation"):
            text = strings.regex_replace(text, _STRIP, "")
        return text

    def call(self, inputs: Any) -> Tensor:
        scalar = np.ndim(inputs.numpy() if hasattr(inputs, "numpy") else inputs) == 0
        rows = self._tokens(inputs)
        longest = max((len(row) for row in rows), default=0)
        width = self.output_sequence_length if self.output_mode == "int" and self.output_sequence_length else longest
        # Padded with the mask token "": index 0 in "int" mode, encoded to nothing in the others.
        padded = np.full((len(rows), max(width, 1) if self.output_mode != "int" else width), "", dtype=object)
        for k, row in enumerate(rows):
            kept = row[: padded.shape[1]]
            padded[k, : len(kept)] = kept
        out = self.lookup._encoded(self.lookup._indices(padded))
        return out[0] if scalar else out
