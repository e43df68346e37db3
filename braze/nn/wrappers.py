"""``keras.layers.TimeDistributed``: one layer applied to every step of a sequence."""

from __future__ import annotations

from typing import Any

from braze.ir.errors import ShapeError
from braze.nn import tree
from braze.nn.layer import Layer
from braze.tensor import Tensor, user_error

__all__ = ["TimeDistributed"]


class TimeDistributed(Layer):
    """``layer`` applied alike (one set of weights) to every step of (batch, steps, ...)
    inputs: the steps folded into the batch, and unfolded from its outputs. A mask on the
    input passes on to the output."""

    supports_masking = True

    def __init__(self, layer: Layer, **kwargs: Any) -> None:
        if not isinstance(layer, Layer):
            raise TypeError(f"TimeDistributed: wraps a layer, got {type(layer).__name__}")
        super().__init__(**kwargs)
        self.layer = layer
        self._build_if_known()

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> TimeDistributed:
        """A new wrapper around a copy (new weights) of the layer the config holds."""
        layer = config["layer"]
        return cls(**{**config, "layer": type(layer).from_config(layer.get_config())})

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        if len(input_shape) < 3:
            raise user_error(ShapeError, f"{self.name}: inputs are (batch, steps, ...), got {input_shape}")
        self.layer._ensure_built((input_shape[0], *input_shape[2:]))

    def call(self, x: Tensor) -> Any:
        if x.ndim < 3:
            raise user_error(ShapeError, f"{self.name}: inputs are (batch, steps, ...), got {x.shape}")
        batch, steps = x.shape[:2]
        folded = self.layer(x.reshape(batch * steps, *x.shape[2:]))
        return tree.map_leaves(lambda y: y.reshape(batch, steps, *y.shape[1:]), folded)
