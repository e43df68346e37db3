"""Multi-head attention with Keras's signature: ``MultiHeadAttention(num_heads, key_dim)``
called as ``layer(query, value, key=None, attention_mask=None, use_causal_mask=False)``;
self-attention is ``layer(x, x)``, causal self-attention ``layer(x, x,
use_causal_mask=True)``, a GPT block's."""

from __future__ import annotations

import math
from typing import Any

from braze import ops
from braze.ir.errors import ShapeError
from braze.nn import functional, initializers, masks
from braze.nn.layer import Layer
from braze.nn.module import Module
from braze.ops.random import Generator
from braze.tensor import Tensor, user_error

__all__ = ["MultiHeadAttention"]


class _Projection(Module):
    """Keras's ``EinsumDense`` of an attention layer: a kernel of shape ``(*inputs,
    *outputs)`` (per head), a bias of the outputs' shape."""

    def __init__(self, inputs: tuple[int, ...], outputs: tuple[int, ...], use_bias: bool, generator) -> None:
        self.kernel = initializers.make_weight("glorot_uniform", (*inputs, *outputs), generator=generator)
        if use_bias:
            self.bias = initializers.make_weight("zeros", outputs)
        self.inputs, self.outputs = inputs, outputs

    def forward(self, x: Tensor) -> Tensor:
        """``x``'s last ``len(inputs)`` axes contracted with the kernel's first ones."""
        lead = tuple(x.shape[: x.ndim - len(self.inputs)])
        flat = x.reshape(*lead, math.prod(self.inputs)) @ self.kernel.reshape(math.prod(self.inputs), -1)
        y = flat.reshape(*lead, *self.outputs)
        return y + self.bias if hasattr(self, "bias") else y


class MultiHeadAttention(Layer):
    """Attention of ``num_heads`` heads, each projecting the query and key to ``key_dim``
    values and the value to ``value_dim`` (``key_dim`` by default); the heads' results are
    projected back to the query's size (or ``output_shape``). Inputs are ``(batch, length,
    features)``. ``attention_mask`` (``(batch, query length, value length)``, bool or
    0/1) is True where a query position may attend; the inputs' masks (from
    ``Embedding(mask_zero=True)``, or ``query_mask``, ``value_mask``, ``key_mask``) keep
    padded keys out, and the query's is the output's; ``use_causal_mask`` lets position
    ``i`` attend to positions up to ``i``; ``dropout`` drops attention weights while
    training. The weights (``query``, ``key``, ``value``, ``attention_output``, each a ``kernel`` and a
    ``bias``) are made on the first call, as Keras makes them."""

    supports_masking = True

    def __init__(
        self,
        num_heads: int,
        key_dim: int,
        value_dim: int | None = None,
        dropout: float = 0.0,
        use_bias: bool = True,
        output_shape: int | None = None,
        generator: Generator | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not 0 <= dropout < 1:
            raise ValueError(f"MultiHeadAttention: dropout must be in [0, 1), got {dropout}")
        self.num_heads, self.key_dim = int(num_heads), int(key_dim)
        self.value_dim = int(value_dim) if value_dim is not None else self.key_dim
        self.dropout, self.use_bias, self.output_shape = float(dropout), use_bias, output_shape
        self._generator = generator

    def build(
        self,
        query_shape: tuple[int, ...],
        value_shape: tuple[int, ...] | None = None,
        key_shape: tuple[int, ...] | None = None,
    ) -> None:
        value_shape = query_shape if value_shape is None else value_shape
        key_shape = value_shape if key_shape is None else key_shape
        heads, bias, generator = self.num_heads, self.use_bias, self._generator
        self.query = _Projection((query_shape[-1],), (heads, self.key_dim), bias, generator)
        self.key = _Projection((key_shape[-1],), (heads, self.key_dim), bias, generator)
        self.value = _Projection((value_shape[-1],), (heads, self.value_dim), bias, generator)
        out = int(self.output_shape) if self.output_shape is not None else query_shape[-1]
        self.attention_output = _Projection((heads, self.value_dim), (out,), bias, generator)

    def __call__(self, query: Any, value: Any, key: Any = None, **kwargs: Any) -> Tensor:
        """Keras's call: the weights are made from the three inputs' sizes on the first
        call (the layer protocol alone would see the query's)."""
        key = value if key is None else key
        for name, x in (("query", query), ("value", value), ("key", key)):
            if len(x.shape) != 3:
                raise user_error(
                    ShapeError, f"MultiHeadAttention: {name} must be (batch, length, features), got {tuple(x.shape)}"
                )
        if not self.built:
            self.build(tuple(query.shape), tuple(value.shape), tuple(key.shape))
            self.built = True
            if isinstance(query, Tensor) and query.device != self.device:
                self.to(query.device)
        return super().__call__(query, value, key, **kwargs)

    def forward(
        self,
        query: Tensor,
        value: Tensor,
        key: Tensor | None = None,
        attention_mask: Tensor | None = None,
        use_causal_mask: bool = False,
        training: bool | None = None,
        query_mask: Tensor | None = None,
        value_mask: Tensor | None = None,
        key_mask: Tensor | None = None,
    ) -> Tensor:
        key = value if key is None else key
        heads_first = (0, 2, 1, 3)  # (batch, heads, length, per head)
        q = ops.transpose(self.query(query), heads_first)
        k = ops.transpose(self.key(key), heads_first)
        v = ops.transpose(self.value(value), heads_first)
        padding = None  # (batch, query length, key length): True where attending is allowed
        if attention_mask is not None:
            padding = masks.as_bool(attention_mask, query)  # Keras casts it: nonzero attends
        if query_mask is not None:
            padding = masks.both(padding, ops.expand_dims(masks.as_bool(query_mask, query), -1))
        for steps in (value_mask, key_mask):
            if steps is not None:
                padding = masks.both(padding, ops.expand_dims(masks.as_bool(steps, query), 1))
        mask = None if not use_causal_mask else functional.causal_mask(query.shape[1], key.shape[1], query.device)
        if padding is not None:
            # Keras's softmax adds -1e9 where masked: a row masked whole (a padded query)
            # attends evenly instead of giving NaN.
            allowed = ops.expand_dims(padding, 1) if mask is None else ops.expand_dims(padding, 1) & mask
            mask = ops.where(allowed, 0.0, -masks.MASKED_SCORE).astype(q.dtype)
        rate = self.dropout if (self.training if training is None else training) else 0.0
        y = functional.scaled_dot_product_attention(q, k, v, mask, rate, generator=self._generator)
        return self.attention_output(ops.transpose(y, heads_first))
