"""The transformer's layers with PyTorch's names and initial values: ``Embedding``,
``LayerNorm`` and ``GELU``. Each calls ``braze.nn.functional``; Keras's spellings
(``keras_spellings.py``) subclass these.

Weight tying is one parameter held by two layers (``decoder.weight = encoder.weight``, or
``embedding.attend(x)`` for the logits of a head tied to its table): a module lists a
parameter once, under its first name, so an optimizer updates it once with the sum of
both uses' gradients, and a checkpoint holds it once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from braze import ops
from braze.nn import functional, initializers
from braze.nn.layer import Layer
from braze.ops.random import Generator
from braze.tensor import Tensor

__all__ = ["GELU", "Embedding", "LayerNorm"]


class Embedding(Layer):
    """A table of ``num_embeddings`` rows of ``embedding_dim`` values; ``layer(indices)``
    is the rows at the integer ``indices`` (as ``torch.nn.Embedding``, whose table,
    ``weight``, starts normal with standard deviation 1). ``padding_idx`` (PyTorch's third
    argument; negative counts from the end) names a row that starts as zeros and takes no
    gradient; ``generator`` is braze's, by keyword only."""

    table = "weight"  # the attribute the table is held in, and its checkpoint name

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        *,
        generator: Generator | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        self.padding_idx = self._padding_row(padding_idx)
        table = self.initial((self.num_embeddings, self.embedding_dim), generator)
        if self.padding_idx is not None:  # PyTorch zeroes the row when it makes the table
            values = table.numpy().copy()
            values[self.padding_idx] = 0
            table._load(values)
        setattr(self, self.table, table)

    def _padding_row(self, padding_idx: Any) -> int | None:
        """``padding_idx`` as a row of the table, or None; PyTorch's checks."""
        if padding_idx is None:
            return None
        if isinstance(padding_idx, bool) or not isinstance(padding_idx, (int, np.integer)):
            raise TypeError(f"Embedding: padding_idx must be an int row of the table or None, got {padding_idx!r}")
        if not -self.num_embeddings <= padding_idx < self.num_embeddings:
            raise ValueError(
                f"Embedding: padding_idx must be within [-{self.num_embeddings}, {self.num_embeddings}), "
                f"got {padding_idx}"
            )
        return int(padding_idx) % self.num_embeddings

    def initial(self, shape: tuple[int, int], generator: Generator | None) -> Tensor:
        return initializers.make_weight(initializers.RandomNormal(stddev=1.0), shape, generator=generator)

    @property
    def weights_table(self) -> Tensor:
        """The table, whatever its attribute is called."""
        return getattr(self, self.table)

    def forward(self, indices: Any) -> Tensor:
        found = functional.embedding(indices, self.weights_table)
        if self.padding_idx is None:
            return found
        # The padding row's lookups, detached, add nothing to its gradient (PyTorch's rule);
        # their value is the row's as it is, zero unless it was changed.
        padding = ops.expand_dims(ops.as_tensor(indices, device=found.device) == self.padding_idx, -1)
        return ops.where(padding, found.detach(), found)

    def attend(self, x: Tensor) -> Tensor:
        """``x @ table.T``: the similarity of ``x`` to every row, the logits of an output
        layer tied to this table (GPT-2's head)."""
        return x @ self.weights_table.T


class LayerNorm(Layer):
    """Normalization over the last axes (``normalized_shape``) to mean 0 and variance 1,
    then a learned scale (``weight``, ones) and shift (``bias``, zeros; none when
    ``bias=False``), as ``torch.nn.LayerNorm``."""

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        shape = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) else normalized_shape
        self.normalized_shape = tuple(int(s) for s in shape)
        self.eps = float(eps)
        if elementwise_affine:
            self.weight = initializers.make_weight("ones", self.normalized_shape)
            if bias:
                self.bias = initializers.make_weight("zeros", self.normalized_shape)

    def forward(self, x: Tensor) -> Tensor:
        weight, bias = getattr(self, "weight", None), getattr(self, "bias", None)
        return functional.layer_norm(x, self.normalized_shape, weight, bias, self.eps)


class GELU(Layer):
    """The Gaussian error linear unit ``x * Phi(x)``: exact (``approximate="none"``) or by
    its tanh approximation (``"tanh"``), as ``torch.nn.GELU``."""

    def __init__(self, approximate: str = "none", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.approximate = functional.gelu_approximation(approximate)

    def forward(self, x: Tensor) -> Tensor:
        return functional.gelu(x, self.approximate)
