"""``keras.layers.Masking``: the steps whose every feature equals ``mask_value`` are
masked (and zeroed); the layers after it skip them."""

from __future__ import annotations

from typing import Any

from braze import ops
from braze.nn import symbolic
from braze.nn.layer import Layer
from braze.tensor import Tensor

__all__ = ["Masking"]


class Masking(Layer):
    """``Masking(mask_value=0.0)`` over (batch, steps, features) inputs: a step is kept
    where any feature differs from ``mask_value``."""

    supports_masking = True

    def __init__(self, mask_value: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mask_value = float(mask_value)

    def _kept(self, x: Tensor) -> Tensor:
        """1 where a step is kept, else 0, over (batch, steps, 1)."""
        return ops.max((x != self.mask_value).astype(x.dtype), axis=-1, keepdims=True)

    def call(self, x: Tensor) -> Tensor:
        kept = self._kept(x)
        y = x * kept
        y._keras_mask = kept.reshape(kept.shape[:-1]) > 0
        return y

    def compute_mask(self, inputs: Any, mask: Any = None) -> Tensor:
        if isinstance(inputs, symbolic.KerasTensor):
            return symbolic.call_symbolic(self.compute_mask, (inputs,), {})
        return self._kept(ops.as_tensor(inputs)).reshape(inputs.shape[:-1]) > 0
