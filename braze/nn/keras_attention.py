"""Keras's ``Dot`` merge and its attention layers over (batch, steps, features) inputs:
``Attention`` (Luong-style, dot-product scores) and ``AdditiveAttention`` (Bahdanau-style),
called on ``[query, value]`` or ``[query, value, key]``, with the masks of ``query`` and
``value`` (passed on from a masking layer, or ``mask=[query_mask, value_mask]``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from braze import ops
from braze.ir.errors import ShapeError
from braze.nn import functional, keras_random, masks
from braze.nn.keras_simple import NORM_EPSILON, normalize
from braze.nn.layer import Layer, new_generator
from braze.ops.random import Generator
from braze.tensor import Tensor, user_error

__all__ = ["AdditiveAttention", "Attention", "Dot", "dot"]


class Dot(Layer):
    """The dot product of two inputs along ``axes`` (an axis of each, the batch being axis
    0; one int for both), per example; ``normalize`` divides each by its norm along its axis
    first (the cosine). Two (batch, n) vectors give (batch, 1)."""

    def __init__(self, axes: int | Sequence[int], normalize: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        pair = (axes, axes) if isinstance(axes, int) else tuple(axes)
        if len(pair) != 2:
            raise ValueError(f"Dot: axes is an int or a pair, got {axes!r}")
        self.axes, self.normalize = tuple(int(a) for a in pair), normalize

    def call(self, inputs: Sequence[Tensor]) -> Tensor:
        if len(inputs) != 2:
            raise ValueError(f"{self.name}: expects a list of 2 inputs, got {len(inputs)}")
        a, b = inputs
        axes = [axis % x.ndim for axis, x in zip(self.axes, (a, b), strict=True)]
        if 0 in axes or a.shape[axes[0]] != b.shape[axes[1]]:
            raise user_error(ShapeError, f"{self.name}: axes {self.axes} of inputs {a.shape} and {b.shape}")
        if self.normalize:
            a, b = normalize(a, axes[0], epsilon=NORM_EPSILON), normalize(b, axes[1], epsilon=NORM_EPSILON)
        a = ops.transpose(a, (*(d for d in range(a.ndim) if d != axes[0]), axes[0]))  # (batch, ..., k)
        b = ops.transpose(b, (0, axes[1], *(d for d in range(1, b.ndim) if d != axes[1])))  # (batch, k, ...)
        rest_a, rest_b = a.shape[1:-1], b.shape[2:]
        flat = a.reshape(a.shape[0], -1, a.shape[-1]) @ b.reshape(b.shape[0], b.shape[1], -1)
        out = flat.reshape(a.shape[0], *rest_a, *rest_b)
        return out.reshape(out.shape[0], 1) if out.ndim == 1 else out


class _BaseAttention(Layer):
    """The scores of a query against keys, softmax over the unmasked keys, the weighted
    sum of the values; the output is zero at masked query steps and carries their mask."""

    supports_masking = True

    def __init__(self, dropout: float = 0.0, seed: int | None = None, *, generator: Generator | None = None, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= dropout < 1:
            raise ValueError(f"{type(self).__name__}: dropout must be in [0, 1), got {dropout}")
        self.dropout = float(dropout)
        self._generator = new_generator(seed, generator)

    def build(self, input_shape: Any) -> None:
        self.make_weights(input_shape[0][-1])

    def make_weights(self, features: int) -> None:
        """The scoring's own weights, for queries of ``features`` values."""

    def scores(self, query: Tensor, key: Tensor) -> Tensor:
        raise NotImplementedError

    def call(
        self,
        inputs: Sequence[Tensor],
        mask: Sequence[Tensor | None] | None = None,
        training: bool = False,
        return_attention_scores: bool = False,
        use_causal_mask: bool = False,
    ) -> Any:
        if not 2 <= len(inputs) <= 3:
            raise ValueError(f"{self.name}: call it on [query, value] or [query, value, key], got {len(inputs)}")
        query, value = inputs[0], inputs[1]
        key = inputs[2] if len(inputs) == 3 else value
        query_mask, value_mask = self._masks(mask)
        scores = self.scores(query, key)
        allowed = None if value_mask is None else ops.expand_dims(masks.as_bool(value_mask, scores), 1)
        if use_causal_mask:
            allowed = masks.both(allowed, functional.causal_mask(query.shape[1], key.shape[1], query.device))
        if allowed is not None:
            scores = masks.lowered(scores, allowed)
        weights = ops.softmax(scores, -1)
        if training and self.dropout > 0:
            weights = keras_random.dropout(weights, self.dropout, seed=self._generator)
        result = weights @ value
        if query_mask is not None:
            result = result * ops.expand_dims(masks.as_bool(query_mask, result).astype(result.dtype), -1)
        return (result, weights) if return_attention_scores else result

    def _masks(self, mask: Any) -> tuple[Tensor | None, Tensor | None]:
        """The query's and the value's masks from Keras's ``mask=[query_mask, value_mask]``
        (a key's mask, a third, is the value's)."""
        if mask is None:
            return None, None
        if not isinstance(mask, (list, tuple)) or not 2 <= len(mask) <= 3:
            raise ValueError(
                f"{self.name}: mask must be a list [query_mask, value_mask] (or with a key_mask), got "
                f"{type(mask).__name__}{f' of {len(mask)}' if isinstance(mask, (list, tuple)) else ''}"
            )
        return mask[0], mask[1]

    def compute_mask(self, inputs: Any, mask: Any = None) -> Tensor | None:
        return self._masks(mask)[0]


class Attention(_BaseAttention):
    """Dot-product attention: scores ``query @ key^T`` (times a learned ``scale`` with
    ``use_scale``); ``score_mode="concat"``: ``sum(tanh(query + key))`` per pair, times a
    learned ``concat_score_weight``."""

    def __init__(self, use_scale: bool = False, score_mode: str = "dot", dropout: float = 0.0, **kwargs: Any):
        if score_mode not in ("dot", "concat"):
            raise ValueError(f"Attention: score_mode must be 'dot' or 'concat', got {score_mode!r}")
        super().__init__(dropout, **kwargs)
        self.use_scale, self.score_mode = use_scale, score_mode

    def make_weights(self, features: int) -> None:
        if self.use_scale:
            self.scale = self.add_weight(shape=(), initializer="ones", name="scale")
        if self.score_mode == "concat":
            self.concat_score_weight = self.add_weight(shape=(), initializer="ones", name="concat_score_weight")

    def scores(self, query: Tensor, key: Tensor) -> Tensor:
        if self.score_mode == "dot":
            scores = query @ ops.transpose(key, (0, 2, 1))
            return scores * self.scale if self.use_scale else scores
        pairs = ops.expand_dims(query, 2) + ops.expand_dims(key, 1)
        if self.use_scale:
            pairs = pairs * self.scale
        return self.concat_score_weight * ops.sum(ops.tanh(pairs), -1)


class AdditiveAttention(_BaseAttention):
    """Additive attention: scores ``sum(scale * tanh(query + key))`` per pair, ``scale`` a
    learned vector of the features (with ``use_scale``, Keras's default)."""

    def __init__(self, use_scale: bool = True, dropout: float = 0.0, **kwargs: Any) -> None:
        super().__init__(dropout, **kwargs)
        self.use_scale = use_scale

    def make_weights(self, features: int) -> None:
        if self.use_scale:
            self.scale = self.add_weight(shape=(features,), initializer="glorot_uniform", name="scale")

    def scores(self, query: Tensor, key: Tensor) -> Tensor:
        pairs = ops.tanh(ops.expand_dims(query, 2) + ops.expand_dims(key, 1))
        return ops.sum(pairs * self.scale if self.use_scale else pairs, -1)


def dot(inputs: Sequence[Any], axes: int | Sequence[int], normalize: bool = False, **kwargs: Any) -> Any:
    """``Dot(axes, normalize, **kwargs)(inputs)``: the layer made and called at once."""
    return Dot(axes, normalize, **kwargs)(list(inputs))
