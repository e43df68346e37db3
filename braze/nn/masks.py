"""Keras's masks: a bool tensor over a tensor's leading axes (batch, steps), True where a
step holds data, carried by the tensor itself (``tensor._keras_mask``, Keras's
attribute) from the layer that made it to the layers that read it.

A layer that computes a mask (``Embedding(mask_zero=True)``, ``Masking``) or passes one on
(``supports_masking``) sets it on its outputs through ``compute_mask``; a layer whose
``call`` takes ``mask`` receives its input's; a layer that does neither drops it, with
Keras's warning. Losses weight the masked steps out (``weigh``)."""

from __future__ import annotations

from typing import Any

from braze import ops
from braze.nn import tree
from braze.tensor import Tensor


def of(value: Any) -> Any:
    """The mask of ``value`` (a tensor, or a list, tuple or dict of them: the structure of
    their masks), or None when nothing in it has one."""
    if isinstance(value, Tensor):
        return value._keras_mask
    if isinstance(value, (list, tuple, dict)):
        found = tree.map_leaves(lambda t: t._keras_mask if isinstance(t, Tensor) else None, value)
        return found if any(m is not None for m in tree.leaves(found)) else None
    return None


def attach(outputs: Any, output_masks: Any) -> None:
    """Set ``output_masks`` (one mask, or a structure of them) on the outputs that have
    none, pairing them in order as Keras does."""
    if output_masks is None:
        return
    masks = output_masks if isinstance(output_masks, Tensor) else tree.leaves(output_masks)
    pairs = zip(tree.leaves(outputs), [masks] if isinstance(masks, Tensor) else masks, strict=False)
    for output, mask in pairs:
        if isinstance(output, Tensor) and output._keras_mask is None and mask is not None:
            output._keras_mask = as_bool(mask, output)


MASKED_SCORE = 1e9  # what Keras's softmax takes from a masked entry (its large negative number)


def lowered(scores: Tensor, allowed: Tensor) -> Tensor:
    """``scores`` lowered by ``MASKED_SCORE`` where ``allowed`` is False, as Keras masks a
    softmax: a row masked whole comes out even, not NaN."""
    return scores - MASKED_SCORE * ops.logical_not(allowed).astype(scores.dtype)


def as_bool(mask: Any, like: Tensor) -> Tensor:
    """``mask`` as a bool tensor on ``like``'s device."""
    mask = ops.as_tensor(mask, device=like.device)
    return mask if mask.dtype.kind == "b" else mask != 0


def both(a: Tensor | None, b: Tensor | None) -> Tensor | None:
    """The steps both masks keep (either one where the other is missing)."""
    if a is None or b is None:
        return b if a is None else a
    return ops.logical_and(a, b)


def weigh(sample_weight: Any, mask: Tensor, values: Tensor, rescale: bool) -> Tensor:
    """``sample_weight`` times ``mask`` (Keras's ``apply_mask``): the masked steps weigh
    nothing. With ``rescale`` (a loss reduced to a mean) the kept steps weigh
    total / kept, so that the mean is over the kept steps only."""
    weight = mask.astype(values.dtype)
    if rescale:
        weight = weight * (weight.size / (ops.sum(weight) + 1e-7))
    return weight if sample_weight is None else ranked_weight(sample_weight, weight) * weight


def ranked_weight(sample_weight: Any, values: Tensor) -> Tensor:
    """``sample_weight`` as a tensor of ``values``'s dtype and rank, to broadcast over it:
    a trailing axis of 1 dropped, trailing axes added (Keras's rule for weights)."""
    weight = ops.as_tensor(sample_weight, dtype=values.dtype, device=values.device)
    while weight.ndim > values.ndim and weight.shape[-1] == 1:
        weight = weight.reshape(weight.shape[:-1])
    while weight.ndim < values.ndim:
        weight = ops.expand_dims(weight, -1)
    return weight
