"""PyTorch's ``torch.nn.functional``: the transformer's pieces here (``gelu``,
``layer_norm``, ``embedding``, ``scaled_dot_product_attention``), the losses
(``torch_losses.py``, ``torch_elementwise_losses.py``), the convolution, pooling and batch
norm (``torch_convolution.py``), and the activations, dropout,
``pad``, ``one_hot``, ``normalize`` and ``cosine_similarity`` (``torch_functional.py``).
The layers of ``braze.nn`` (``GELU``, ``LayerNorm``, ``Embedding``, ``MultiHeadAttention``,
``torch_layers.py``'s) call these, so each computation is written once. ``standardize`` is
braze's: the normalization over given axes that layer and group norms share."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from braze import ops
from braze.function_replay import replaying
from braze.ir.errors import DTypeError, ShapeError
from braze.nn.torch_convolution import adaptive_avg_pool2d, avg_pool2d, batch_norm, conv2d, max_pool2d
from braze.nn.torch_elementwise_losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    smooth_l1_loss,
)
from braze.nn.torch_functional import (
    cosine_similarity,
    dropout,
    elu,
    hardtanh,
    leaky_relu,
    linear,
    log_softmax,
    normalize,
    one_hot,
    pad,
    relu,
    sigmoid,
    silu,
    softmax,
    softplus,
    tanh,
)
from braze.nn.torch_losses import cross_entropy, nll_loss
from braze.ops.core import rounded_once
from braze.ops.indexing import rows
from braze.ops.linalg import matmul_transposed
from braze.ops.random import Generator
from braze.tensor import Tensor, user_error

__all__ = [
    "adaptive_avg_pool2d",
    "avg_pool2d",
    "batch_norm",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "causal_mask",
    "conv2d",
    "cosine_similarity",
    "cross_entropy",
    "dropout",
    "elu",
    "embedding",
    "gelu",
    "hardtanh",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "max_pool2d",
    "mse_loss",
    "nll_loss",
    "normalize",
    "one_hot",
    "pad",
    "relu",
    "scaled_dot_product_attention",
    "sigmoid",
    "silu",
    "smooth_l1_loss",
    "softmax",
    "softplus",
    "standardize",
    "tanh",
]

_SQRT_HALF = math.sqrt(0.5)
_TANH_SCALE = math.sqrt(2.0 / math.pi)


def gelu_approximation(approximate: str) -> str:
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return approximate


@replaying
def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """``x * Phi(x)``, Phi the standard normal's distribution function: exactly,
    ``0.5 x (1 + erf(x / sqrt 2))`` (``approximate="none"``, PyTorch's default), or by the
    tanh approximation ``0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`` (``"tanh"``,
    GPT-2's)."""
    if gelu_approximation(approximate) == "none":
        return x * (ops.erf(x * _SQRT_HALF) + 1.0) * 0.5
    return x * (ops.tanh((x + x * x * x * 0.044715) * _TANH_SCALE) + 1.0) * 0.5


def layer_norm(
    x: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last axes (as many as
    ``normalized_shape`` has), the variance biased (divided by the count), as PyTorch's."""
    shape = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) else tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(shape) :]) != tuple(shape):
        raise user_error(
            ShapeError, f"layer_norm: input of shape {tuple(x.shape)} does not end in the normalized shape {shape}"
        )
    return standardize(x, tuple(range(x.ndim - len(shape), x.ndim)), weight, bias, eps)


def centered_moments(x: Tensor, axes: tuple[int, ...]) -> tuple[Tensor, Tensor, Tensor]:
    """``x``'s mean over ``axes``, ``x`` minus it, and the biased variance (divided by the
    count), the reduced axes kept: what layer, group and batch norms normalize by (batch
    norm's running statistics too, so the step computes them once)."""
    mean = ops.mean(x, axis=axes, keepdims=True)
    centered = x - mean
    return mean, centered, ops.mean(centered * centered, axis=axes, keepdims=True)


@rounded_once
@replaying
def standardize(x: Tensor, axes: tuple[int, ...], weight: Tensor | None, bias: Tensor | None, eps: float) -> Tensor:
    """``x`` normalized over ``axes`` (increasing) to mean 0 and variance 1 (biased, divided
    by the count), then scaled by ``weight`` and shifted by ``bias``, each of the shape of
    those axes. (PyTorch's ``normalize`` is another function: x over its p-norm.)"""
    _, centered, variance = centered_moments(x, axes)
    y = centered * ops.rsqrt(variance + eps)
    spread = tuple(x.shape[d] if d in axes else 1 for d in range(x.ndim))
    if weight is not None:
        y = y * (weight if axes[0] == x.ndim - len(axes) else weight.reshape(spread))
    if bias is not None:
        y = y + (bias if axes[0] == x.ndim - len(axes) else bias.reshape(spread))
    return y


def embedding(indices: Any, weight: Tensor) -> Tensor:
    """The rows of ``weight`` at ``indices`` (integers in ``[0, rows)``; an eager index
    outside raises an ``IndexError``, compiled code clamps it): ``weight[indices]``, whose
    gradient adds up the rows' cotangents where indices repeat."""
    return rows(weight, indices)


def causal_mask(length: int, source: int, device: Any) -> Tensor:
    """``(length, source)`` bools, True where query position ``i`` may attend to key
    position ``j``: ``j <= i`` (the lower triangle from the top left, as PyTorch's)."""
    rows = ops.arange(length, dtype="int32", device=device).reshape(length, 1)
    return ops.arange(source, dtype="int32", device=device) <= rows


@replaying
def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    *,
    causal: bool | None = None,
    generator: Generator | None = None,
) -> Tensor:
    """``softmax(query @ key^T * scale + mask) @ value`` over the last two axes (``(...,
    L, E)``, ``(..., S, E)``, ``(..., S, Ev)``: any leading batch and head axes), as
    PyTorch's. ``causal=True`` (PyTorch's ``is_causal``) lets position ``i`` attend to
    positions up to ``i`` only; ``attn_mask`` is a bool tensor (True: attend) or a float one
    added to the scores, broadcast to ``(..., L, S)``; ``scale`` defaults to ``1 /
    sqrt(E)``; ``dropout_p`` drops attention weights (draws from ``generator``)."""
    causal = bool(is_causal) if causal is None else bool(causal)
    if query.ndim < 2 or key.ndim != query.ndim or value.ndim != query.ndim:
        raise user_error(
            ShapeError,
            "scaled_dot_product_attention: query, key and value need one rank of at least 2, got "
            f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}",
        )
    if key.shape[-1] != query.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise user_error(
            ShapeError,
            f"scaled_dot_product_attention: query {tuple(query.shape)}, key {tuple(key.shape)} and value "
            f"{tuple(value.shape)} do not fit: key needs the query's last size and the value's length",
        )
    if causal and attn_mask is not None:
        raise user_error(ValueError, "scaled_dot_product_attention: give attn_mask or causal=True, not both")
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    # Scaled as scores (a multiply in the product's epilogue) and contracted with the key
    # as it is laid out: no scaled or transposed copy of query or key, in either pass.
    scores = matmul_transposed(query, key) * factor
    if causal:
        attn_mask = causal_mask(query.shape[-2], key.shape[-2], query.device)
    if attn_mask is not None:
        if attn_mask.dtype.kind == "b":
            scores = ops.where(attn_mask, scores, -math.inf)
        elif attn_mask.dtype == scores.dtype:
            scores = scores + attn_mask
        else:
            raise user_error(
                DTypeError,
                f"scaled_dot_product_attention: attn_mask must be bool or {scores.dtype.name}, got "
                f"{attn_mask.dtype.name}",
            )
    if attn_mask is not None and not causal:
        # A row that may attend to nothing gives zeros, as PyTorch's does, not NaN (a softmax
        # of -inf only): a padded sequence's NaN would reach every gradient of key and value.
        attends = ops.max(scores.detach(), axis=-1, keepdims=True) > -math.inf
        weights = ops.where(attends, ops.softmax(ops.where(attends, scores, 0.0), axis=-1), 0.0)
    else:
        weights = ops.softmax(scores, axis=-1)
    if dropout_p:
        if not 0 <= dropout_p < 1:
            raise ValueError(f"scaled_dot_product_attention: dropout_p must be in [0, 1), got {dropout_p}")
        keep = ops.rand(weights.shape, weights.dtype, generator=generator, device=weights.device) >= dropout_p
        weights = ops.where(keep, weights / (1 - dropout_p), 0.0)
    return ops.matmul(weights, value)
