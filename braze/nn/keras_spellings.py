"""Keras's spellings of the transformer's layers, for ``braze.keras``: ``Embedding``
(``input_dim``, ``output_dim``; its table, ``embeddings``, starts uniform in [-0.05,
0.05); ``mask_zero`` masks the steps whose index is 0) and ``LayerNormalization``
(``axis``, ``epsilon``, ``center``, ``scale``; ``gamma`` and ``beta``, made on the first
call); also ``LeakyReLU``, whose slope is Keras's 0.3 where ``braze.nn.LeakyReLU``'s is
PyTorch's 0.01. Each subclasses or calls its PyTorch-named twin;
only the names and defaults differ."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from braze import ops
from braze.ir.errors import ShapeError
from braze.nn import functional, initializers, layers, regularizers, symbolic, transformer
from braze.nn.layer import Layer
from braze.ops.random import Generator
from braze.tensor import Tensor, user_error

__all__ = ["Embedding", "LayerNormalization", "LeakyReLU"]


class Embedding(transformer.Embedding):
    """``keras.layers.Embedding(input_dim, output_dim)``."""

    table = "embeddings"

    def __init__(
        self,
        input_dim: int,
        output_dim: int,
        embeddings_initializer: Any = "uniform",
        embeddings_regularizer: Any = None,
        generator: Generator | None = None,
        mask_zero: bool = False,
        **kwargs: Any,
    ) -> None:
        for option in ("embeddings_constraint", "lora_rank"):
            if kwargs.pop(option, None) is not None:
                raise NotImplementedError(f"Embedding: {option} is not supported")
        if kwargs.pop("sparse", False):
            raise NotImplementedError("Embedding: sparse=True is not supported (braze tensors are dense)")
        if kwargs.pop("input_length", None) is not None:
            warnings.warn("Embedding: input_length is deprecated (as in Keras 3) and changes nothing", stacklevel=2)
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        super().__init__(input_dim, output_dim, generator=generator, **kwargs)
        self.mask_zero = self.supports_masking = bool(mask_zero)
        regularizer = regularizers.get(embeddings_regularizer)
        if regularizer is not None:  # its penalty joins the layer's losses, as add_weight's
            self._penalize(self.embeddings, regularizer)

    def initial(self, shape: tuple[int, int], generator: Generator | None) -> Tensor:
        return initializers.make_weight(self.embeddings_initializer, shape, generator=generator)

    def forward(self, indices: Any) -> Tensor:
        """Rows of the table; float indices (a ``keras.Input``'s default dtype) are cast to
        int32 first, as Keras casts them."""
        indices = ops.as_tensor(indices)
        return super().forward(indices.astype("int32") if indices.dtype.is_float else indices)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Tensor | None:
        """With ``mask_zero``, True where the index is not 0 (the padding); a symbolic mask
        for a ``keras.Input``."""
        if not self.mask_zero:
            return None
        if isinstance(inputs, symbolic.KerasTensor):
            return symbolic.call_symbolic(self.compute_mask, (inputs,), {})
        return ops.as_tensor(inputs) != 0


class LayerNormalization(Layer):
    """``keras.layers.LayerNormalization``: normalization over ``axis`` (an axis or several,
    of the whole input, batch included, as Keras counts them), then ``gamma`` (when
    ``scale``) and ``beta`` (when ``center``) of those axes' sizes."""

    supports_masking = True

    def __init__(
        self,
        axis: int | Sequence[int] = -1,
        epsilon: float = 1e-3,
        center: bool = True,
        scale: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.axis = (axis,) if isinstance(axis, int) else tuple(axis)
        self.epsilon, self.center, self.scale = float(epsilon), center, scale
        self._build_if_known()

    def _axes(self, rank: int) -> tuple[int, ...]:
        axes = sorted(a % rank for a in self.axis)
        if not all(-rank <= a < rank for a in self.axis) or 0 in axes:
            raise user_error(ShapeError, f"LayerNormalization: axis {self.axis} does not fit inputs of rank {rank}")
        return tuple(axes)

    def build(self, input_shape: tuple[int, ...]) -> None:
        """Weights of the normalized axes' sizes (``input_shape`` batch first, as Keras's)."""
        shape = tuple(input_shape[a] for a in self._axes(len(input_shape)))
        if self.scale:
            self.gamma = self.add_weight(shape=shape, initializer="ones", name="gamma")
        if self.center:
            self.beta = self.add_weight(shape=shape, initializer="zeros", name="beta")

    def forward(self, x: Tensor) -> Tensor:
        axes = self._axes(x.ndim)
        weight, bias = getattr(self, "gamma", None), getattr(self, "beta", None)
        return functional.standardize(x, axes, weight, bias, self.epsilon)


class LeakyReLU(layers.LeakyReLU):
    """``keras.layers.LeakyReLU(negative_slope=0.3)``: Keras's default slope, where PyTorch's
    (``braze.nn.LeakyReLU``) is 0.01."""

    def __init__(self, negative_slope: float = 0.3, **kwargs: Any) -> None:
        super().__init__(negative_slope, **kwargs)
