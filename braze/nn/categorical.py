"""Keras's preprocessing layers for numbers that stand for categories:
``CategoryEncoding`` (integer tokens to one-hot, multi-hot or count vectors),
``Discretization`` (values to the index of their bin) and ``IntegerLookup`` (values to
their index in a vocabulary)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from braze import lazy, ops
from braze.ir.errors import ShapeError
from braze.nn import symbolic
from braze.nn.layer import Layer
from braze.nn.normalization import adapt_array
from braze.tensor import Tensor, user_error

__all__ = ["CategoryEncoding", "Discretization", "IntegerLookup", "KERAS_2_MODES", "encode_categories"]

_MODES = ("one_hot", "multi_hot", "count")
KERAS_2_MODES = {"binary": "multi_hot", "tf-idf": "tf_idf"}  # output modes by their older names, as Keras takes them


class CategoryEncoding(Layer):
    """Integer tokens in [0, ``num_tokens``) to vectors of ``num_tokens``: ``"one_hot"``
    (each token its own vector; a trailing axis of 1 is the token's), ``"multi_hot"`` (1
    for each token a row holds) or ``"count"`` (how many times, weighted by
    ``count_weights``). A row is the last axis; a 1-D input is one row, as in Keras. A
    value outside the range counts in no position."""

    def __init__(
        self, num_tokens: int | None = None, output_mode: str = "multi_hot", sparse: bool = False, **kwargs: Any
    ) -> None:
        num_tokens = kwargs.pop("max_tokens", num_tokens)  # its older name, which Keras still takes
        if num_tokens is None:
            raise ValueError("CategoryEncoding: give num_tokens, the number of categories")
        output_mode = KERAS_2_MODES.get(output_mode, output_mode)
        if output_mode not in _MODES:
            raise ValueError(f"CategoryEncoding: output_mode must be one of {_MODES}, got {output_mode!r}")
        if sparse:
            raise NotImplementedError("CategoryEncoding: sparse=True is not supported (braze tensors are dense)")
        super().__init__(**kwargs)
        self.num_tokens, self.output_mode = int(num_tokens), output_mode

    def call(self, inputs: Tensor, count_weights: Any = None) -> Tensor:
        return encode_categories(inputs, self.num_tokens, self.output_mode, count_weights, self.name)


def encode_categories(
    inputs: Any, num_tokens: int, output_mode: str, count_weights: Any = None, who: str = "CategoryEncoding"
) -> Tensor:
    """``CategoryEncoding``'s vectors of ``inputs`` (see the class), for the lookup layers too."""
    x = ops.as_tensor(inputs)
    if x.ndim > 2:
        raise user_error(ShapeError, f"{who}: inputs of rank 1 or 2, got {x.shape}")
    if x.ndim == 0:
        x = x.reshape(1)
    if output_mode == "one_hot" and x.ndim == 2 and x.shape[-1] == 1:
        x = x.reshape(x.shape[0])
    tokens = ops.arange(num_tokens, dtype=x.dtype, device=x.device)
    hot = (ops.expand_dims(x, -1) == tokens).astype("float32")
    if count_weights is not None and output_mode != "count":
        raise ValueError(f"{who}: count_weights counts only with output_mode='count'")
    if output_mode == "one_hot":
        return hot
    if output_mode == "multi_hot":
        return ops.max(hot, axis=-2)
    if count_weights is not None:
        hot = hot * ops.expand_dims(ops.as_tensor(count_weights, dtype="float32", device=x.device), -1)
    return ops.sum(hot, axis=-2)


class Discretization(Layer):
    """Each value to the index of its bin (int64): ``bin_boundaries`` [b0, b1, ...] make the
    bins (-inf, b0), [b0, b1), ..., [bn, inf); or ``adapt(data)`` places ``num_bins`` - 1
    boundaries at the data's quantiles (exact ones, where Keras approximates within
    ``epsilon``)."""

    def __init__(
        self,
        bin_boundaries: Sequence[float] | None = None,
        num_bins: int | None = None,
        epsilon: float = 0.01,
        output_mode: str = "int",
        sparse: bool = False,
        **kwargs: Any,
    ) -> None:
        if output_mode != "int" or sparse:
            raise NotImplementedError(
                "Discretization: only output_mode='int' (dense); follow it with CategoryEncoding for one-hot vectors"
            )
        if bin_boundaries is None and num_bins is None:
            raise ValueError("Discretization: give bin_boundaries, or num_bins and adapt the layer")
        if bin_boundaries is not None and num_bins is not None and len(bin_boundaries) != num_bins - 1:
            raise ValueError(
                f"Discretization: {len(bin_boundaries)} bin_boundaries make {len(bin_boundaries) + 1} bins, "
                f"not num_bins={num_bins}"
            )
        super().__init__(**kwargs)
        self.num_bins, self.epsilon = num_bins, float(epsilon)
        self.bin_boundaries = None if bin_boundaries is None else [float(b) for b in bin_boundaries]

    def get_config(self) -> dict[str, Any]:
        """The arguments, with the boundaries that ``adapt`` placed."""
        return {**super().get_config(), "bin_boundaries": self.bin_boundaries}

    def adapt(self, data: Any, batch_size: int | None = None, steps: int | None = None) -> None:
        """Boundaries at the quantiles 1/num_bins, 2/num_bins, ... of ``data``'s values."""
        if self.num_bins is None:
            raise ValueError(f"{self.name}.adapt: the layer was given its bin_boundaries")
        values = adapt_array(data, steps, self.name).reshape(-1)
        quantiles = np.quantile(values, np.linspace(0, 1, self.num_bins + 1)[1:-1])
        self.bin_boundaries = [float(q) for q in quantiles]

    def call(self, x: Tensor) -> Tensor:
        x = ops.as_tensor(x)
        if self.bin_boundaries is None:
            if symbolic.shapes_only():  # a model built before adapt: only the shape counts
                return ops.zeros(x.shape, "int64", x.device)
            raise ValueError(f"{self.name}: adapt the layer to data before calling it")
        x = x if x.dtype.is_float else x.astype("float64")
        boundaries = ops.as_tensor(np.asarray(self.bin_boundaries, np.float64), dtype=x.dtype, device=x.device)
        return ops.sum((ops.expand_dims(x, -1) >= boundaries).astype("int64"), axis=-1)


class IntegerLookup(Layer):
    """Integer values to indices in a vocabulary (``vocabulary``, or learned by
    ``adapt``: the ``max_tokens`` most frequent values, ties in decreasing order). Index 0
    is the out-of-vocabulary one (1, after the ``mask_token``'s 0, when there is one); the
    vocabulary follows. ``output_mode`` ``"one_hot"``, ``"multi_hot"`` or ``"count"``
    encodes the indices as ``CategoryEncoding`` does; ``invert=True`` maps indices back to
    values (``oov_token`` for the out-of-vocabulary one)."""

    def __init__(
        self,
        max_tokens: int | None = None,
        num_oov_indices: int = 1,
        mask_token: int | None = None,
        oov_token: int = -1,
        vocabulary: Sequence[int] | None = None,
        vocabulary_dtype: str = "int64",
        invert: bool = False,
        output_mode: str = "int",
        sparse: bool = False,
        **kwargs: Any,
    ) -> None:
        if num_oov_indices not in (0, 1):
            raise NotImplementedError(
                "IntegerLookup: num_oov_indices of 0 or 1 (more hash unknown values over several indices, which braze "
                "does not)"
            )
        output_mode = KERAS_2_MODES.get(output_mode, output_mode)
        if output_mode not in ("int", *_MODES):
            raise ValueError(f"IntegerLookup: output_mode must be 'int' or one of {_MODES}, got {output_mode!r}")
        if sparse or (invert and output_mode != "int"):
            raise NotImplementedError("IntegerLookup: sparse outputs, and invert with an output_mode but 'int'")
        for option in ("idf_weights", "pad_to_max_tokens"):
            if kwargs.pop(option, None):
                raise NotImplementedError(f"IntegerLookup: {option} is not supported")
        super().__init__(**kwargs)
        self.max_tokens, self.mask_token, self.oov_token = max_tokens, mask_token, int(oov_token)
        self.num_oov_indices = int(num_oov_indices)
        self.vocabulary_dtype, self.invert, self.output_mode = vocabulary_dtype, invert, output_mode
        self.vocabulary = None if vocabulary is None else [int(v) for v in vocabulary]

    def get_config(self) -> dict[str, Any]:
        """The arguments, with the vocabulary that ``adapt`` learned."""
        return {**super().get_config(), "vocabulary": self.vocabulary}

    def adapt(self, data: Any, batch_size: int | None = None, steps: int | None = None) -> None:
        values = adapt_array(data, steps, self.name).reshape(-1).astype(np.int64)
        if self.mask_token is not None:
            values = values[values != self.mask_token]
        tokens, counts = np.unique(values, return_counts=True)
        order = np.lexsort((-tokens, -counts))  # the most frequent first, ties by decreasing value (Keras's)
        kept = None if self.max_tokens is None else self.max_tokens - self._offset()
        self.vocabulary = [int(t) for t in tokens[order][:kept]]

    def _offset(self) -> int:
        return self.num_oov_indices + (self.mask_token is not None)

    def get_vocabulary(self) -> list[int]:
        """Every index's value: the mask token, the out-of-vocabulary token, the vocabulary."""
        head = [] if self.mask_token is None else [self.mask_token]
        return [*head, *[self.oov_token] * self.num_oov_indices, *(self.vocabulary or [])]

    def vocabulary_size(self) -> int:
        return len(self.get_vocabulary())

    def call(self, x: Any) -> Tensor:
        vocabulary = self.vocabulary
        if vocabulary is None:
            if not symbolic.shapes_only():  # a model built before adapt needs only the shapes
                raise ValueError(f"{self.name}: give a vocabulary or adapt the layer to data before calling it")
            vocabulary = []
        x = ops.as_tensor(x)
        x = x.astype("int64") if x.dtype.is_float else x
        if self.invert:
            table = ops.as_tensor(np.asarray(self.get_vocabulary(), np.int64), device=x.device)
            return ops.take(table, ops.clip(x, 0, len(table) - 1).astype("int32"))
        values = ops.as_tensor(np.asarray(vocabulary, np.int64), dtype=x.dtype, device=x.device)
        matches = (ops.expand_dims(x, -1) == values).astype("int64")  # one match at most
        offset = self._offset()
        positions = ops.arange(offset, offset + len(vocabulary), dtype="int64", device=x.device)
        unknown = 1 - ops.sum(matches, axis=-1)
        if not self.num_oov_indices and not symbolic.shapes_only():
            self._refuse_unknown(x, unknown)
        index = ops.sum(matches * positions, axis=-1) + unknown * (offset - 1)
        if self.mask_token is not None:
            index = ops.where(x == self.mask_token, ops.zeros_like(index), index)
        if self.output_mode == "int":
            return index
        return encode_categories(index, offset + len(vocabulary), self.output_mode, who=self.name)

    def _refuse_unknown(self, x: Tensor, unknown: Tensor) -> None:
        """Keras's error for a value outside a vocabulary without an out-of-vocabulary
        index: the values are read, which a traced or lazy call cannot do."""
        if lazy.is_recording() or x.device.is_lazy:
            raise NotImplementedError(
                f"{self.name}: num_oov_indices=0 reads every value to refuse unknown ones, which a compiled or lazy "
                "call cannot: apply the layer to the data (in a dataset's map) or keep an out-of-vocabulary index"
            )
        found = np.asarray(x.numpy())[np.asarray(unknown.numpy()) > 0]
        if found.size:
            raise ValueError(
                f"{self.name}: {sorted(set(found.tolist()))[:5]} are not in the vocabulary and num_oov_indices is 0"
            )
