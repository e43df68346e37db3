"""Keras's spellings of the transformer's layers, for ``braze.keras``: ``Embedding``
(``input_dim``, ``output_dim``; its table, ``embeddings``, starts uniform in [-0.05,
0.05)), ``LayerNormalization`` (``axis``, ``epsilon``, ``center``, ``scale``; ``gamma``
and ``beta``, made on the first call) and ``gelu`` (``approximate=False``: exact). Each
subclasses or calls its PyTorch-named twin; only the names and defaults differ."""

from __future__ import annotations

from collections.abc import Sequence

from braze.ir.errors import ShapeError
from braze.nn import functional, init, transformer
from braze.nn.layers import Layer
from braze.ops.random import Generator
from braze.tensor import Tensor, user_error

__all__ = ["Embedding", "LayerNormalization", "gelu"]

_EMBEDDING_LIMIT = 0.05  # Keras's "uniform" initializer


def gelu(x: Tensor, approximate: bool = False) -> Tensor:
    """``keras.activations.gelu``: exact, or by the tanh approximation."""
    return functional.gelu(x, "tanh" if approximate else "none")


class Embedding(transformer.Embedding):
    """``keras.layers.Embedding(input_dim, output_dim)``."""

    table = "embeddings"

    def __init__(
        self,
        input_dim: int,
        output_dim: int,
        embeddings_initializer: str = "uniform",
        generator: Generator | None = None,
    ) -> None:
        if embeddings_initializer != "uniform":
            raise ValueError(f"Embedding: embeddings_initializer {embeddings_initializer!r} is not 'uniform'")
        super().__init__(input_dim, output_dim, generator)

    def initial(self, shape: tuple[int, int], generator: Generator | None) -> Tensor:
        return init.uniform_parameter(shape, -_EMBEDDING_LIMIT, _EMBEDDING_LIMIT, generator)


class LayerNormalization(Layer):
    """``keras.layers.LayerNormalization``: normalization over ``axis`` (an axis or several,
    of the whole input, batch included, as Keras counts them), then ``gamma`` (when
    ``scale``) and ``beta`` (when ``center``) of those axes' sizes."""

    def __init__(
        self,
        axis: int | Sequence[int] = -1,
        epsilon: float = 1e-3,
        center: bool = True,
        scale: bool = True,
        input_shape: Sequence[int] | None = None,
    ) -> None:
        self.axis = (axis,) if isinstance(axis, int) else tuple(axis)
        self.epsilon, self.center, self.scale = float(epsilon), center, scale
        self._build_if_known(input_shape)

    def _axes(self, rank: int) -> tuple[int, ...]:
        axes = sorted(a % rank for a in self.axis)
        if not all(-rank <= a < rank for a in self.axis) or 0 in axes:
            raise user_error(ShapeError, f"LayerNormalization: axis {self.axis} does not fit inputs of rank {rank}")
        return tuple(axes)

    def build(self, input_shape: tuple[int, ...]) -> None:
        shape = tuple(input_shape[a - 1] for a in self._axes(len(input_shape) + 1))
        if self.scale:
            self.gamma = init.ones_parameter(shape)
        if self.center:
            self.beta = init.zeros_parameter(shape)

    def forward(self, x: Tensor) -> Tensor:
        axes = self._axes(x.ndim)
        weight, bias = getattr(self, "gamma", None), getattr(self, "beta", None)
        return functional.normalize(x, axes, weight, bias, self.epsilon)
