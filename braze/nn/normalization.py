"""``BatchNormalization`` with Keras's training and inference behaviour, and Keras's
``Normalization`` preprocessing layer (at the end).

Training (``training=True``, as inside ``fit``): each feature (the ``axis``, by default the
channels) is normalised by the batch's mean and biased variance over every other axis,
then scaled by ``gamma`` and shifted by ``beta``; the moving statistics take
``moving = moving * momentum + batch * (1 - momentum)``. Inference: the moving statistics
normalise instead. A layer set to ``trainable = False`` runs in inference mode, as in Keras.

The moving statistics are buffers (non-trainable weights): moved by ``to()``, saved and
loaded with the parameters, and updated in place by the step that computes them, eagerly,
on a lazy device and under ``@jit``/``jit_compile`` alike.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from braze import ops
from braze.autodiff import no_grad
from braze.nn import masks, regularizers
from braze.nn.layer import Layer
from braze.nn.layers import reject_constraints
from braze.tensor import Tensor


def adapt_array(data: Any, steps: int | None, who: str, vectors_are_samples: bool = False) -> np.ndarray:
    """What a preprocessing layer's ``adapt`` learns from, as one float64 array: an array,
    a tensor, a list, or the first ``steps`` batches of an iterable (a ``tf.data.Dataset``).
    With ``vectors_are_samples``, an iterable of 1-D arrays (a dataset not batched, such as
    one of ``expand_dims(scalar, -1)``) gives one sample each, as Keras batches such a
    dataset before it adapts."""
    if isinstance(data, (np.ndarray, Tensor, list)):
        return np.asarray(data.numpy() if isinstance(data, Tensor) else data, np.float64)
    batches = [np.asarray(b.numpy() if isinstance(b, Tensor) else b, np.float64) for b in itertools.islice(data, steps)]
    if not batches:
        raise ValueError(f"{who}.adapt: the data holds no batch")
    if vectors_are_samples and all(b.ndim == 1 and b.shape == batches[0].shape for b in batches):
        return np.stack(batches)
    return np.concatenate(batches)


class BatchNormalization(Layer):
    """Keras's batch normalization: batch statistics while training (and moving averages of
    them updated in place), the moving statistics in inference; see the module's text. With
    a mask (a padded sequence's), the statistics are the kept steps' alone."""

    supports_masking = True

    def __init__(
        self,
        axis: int = -1,
        momentum: float = 0.99,
        epsilon: float = 1e-3,
        center: bool = True,
        scale: bool = True,
        beta_initializer: Any = "zeros",
        gamma_initializer: Any = "ones",
        moving_mean_initializer: Any = "zeros",
        moving_variance_initializer: Any = "ones",
        beta_regularizer: Any = None,
        gamma_regularizer: Any = None,
        synchronized: bool = False,
        **kwargs: Any,
    ) -> None:
        reject_constraints("BatchNormalization", kwargs)
        kwargs.pop("fused", None)  # TensorFlow's choice of kernel for the same arithmetic
        for unsupported in ("renorm", "virtual_batch_size", "adjustment"):
            if kwargs.pop(unsupported, None):
                raise NotImplementedError(f"BatchNormalization: {unsupported} is not supported")
        if synchronized:
            raise NotImplementedError(
                "BatchNormalization(synchronized=True) is not supported: each process normalises by its own batch"
            )
        if not 0 <= momentum <= 1 or epsilon <= 0:
            raise ValueError(f"BatchNormalization: invalid momentum={momentum} or epsilon={epsilon}")
        super().__init__(**kwargs)
        self.axis, self.momentum, self.epsilon = int(axis), float(momentum), float(epsilon)
        self.center, self.scale = center, scale
        self.initializers = {
            "beta": beta_initializer,
            "gamma": gamma_initializer,
            "moving_mean": moving_mean_initializer,
            "moving_variance": moving_variance_initializer,
        }
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self._build_if_known()

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        features = input_shape[self.axis]
        if features is None:
            raise ValueError(f"{self.name}: axis {self.axis} of its inputs {input_shape} must have a known size")
        shape = (int(features),)
        init = self.initializers
        if self.scale:
            self.gamma = self.add_weight(shape=shape, initializer=init["gamma"], regularizer=self.gamma_regularizer)
        if self.center:
            self.beta = self.add_weight(shape=shape, initializer=init["beta"], regularizer=self.beta_regularizer)
        self.moving_mean = self.add_weight(shape=shape, initializer=init["moving_mean"], trainable=False)
        self.moving_variance = self.add_weight(shape=shape, initializer=init["moving_variance"], trainable=False)

    def call(self, x: Tensor, training: bool = False, mask: Tensor | None = None) -> Tensor:
        axis = self.axis % x.ndim
        reduced = tuple(d for d in range(x.ndim) if d != axis)
        broadcast = tuple(x.shape[d] if d == axis else 1 for d in range(x.ndim))

        def feature(t: Tensor) -> Tensor:
            return t if axis == x.ndim - 1 else t.reshape(broadcast)

        if training and self.trainable and mask is not None:
            mean, variance = _masked_moments(x, masks.as_bool(mask, x), reduced)
            centered = x - mean
            self._update_moving(mean.reshape(-1), variance.reshape(-1))
        elif training and self.trainable:
            mean = ops.mean(x, axis=reduced, keepdims=True)
            centered = x - mean
            # The variance as mean((x - c)^2) - (mean - c)^2 about c, the mean detached: the
            # second term is zero in value and carries the variance's dependence on the mean
            # (so second derivatives are exact), and the backward's per-feature sums over the
            # batch then depend on none of each other: one pass over the cotangent and the
            # inputs computes them all.
            anchor = mean.detach()
            deviation, shift = x - anchor, mean - anchor
            variance = ops.mean(deviation * deviation, axis=reduced, keepdims=True) - shift * shift
            self._update_moving(mean.reshape(-1), variance.reshape(-1))
        else:
            centered = x - feature(self.moving_mean)
            variance = feature(self.moving_variance)
        y = centered * ops.rsqrt(variance + self.epsilon)
        if self.scale:
            y = y * feature(self.gamma)
        if self.center:
            y = y + feature(self.beta)
        return y

    def _update_moving(self, mean: Tensor, variance: Tensor) -> None:
        momentum = self.momentum
        with no_grad():
            self.moving_mean._assign(self.moving_mean * momentum + mean.detach() * (1.0 - momentum))
            self.moving_variance._assign(self.moving_variance * momentum + variance.detach() * (1.0 - momentum))


def _masked_moments(x: Tensor, mask: Tensor, reduced: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    """The mean and variance over ``reduced`` of the kept steps of ``x`` (Keras's: the
    counts offset by 1e-7, so an all-masked batch gives zeros)."""
    weight = mask.astype(x.dtype).reshape(*mask.shape, *([1] * (x.ndim - mask.ndim)))
    count = ops.sum(ops.broadcast_to(weight, x.shape), axis=reduced, keepdims=True) + _EPSILON
    mean = ops.sum(x * weight, axis=reduced, keepdims=True) / count
    deviation = x - mean
    return mean, ops.sum(deviation * deviation * weight, axis=reduced, keepdims=True) / count


_EPSILON = 1e-7  # Keras's backend.epsilon(): the smallest standard deviation divided by


class Normalization(Layer):
    """Keras's ``Normalization`` preprocessing layer: ``(x - mean) / sqrt(variance)`` per
    feature along ``axis`` (an int, a tuple of them, or None for one mean and variance), the
    standard deviation at least 1e-7; ``invert=True`` undoes it. The statistics are given
    (``mean=``, ``variance=``: constants, saved in the layer's config) or learned from data
    by ``adapt`` over every other axis (non-trainable weights, saved with the model, never
    changed by training)."""

    def __init__(
        self,
        axis: int | Sequence[int] | None = -1,
        mean: Any = None,
        variance: Any = None,
        invert: bool = False,
        **kwargs: Any,
    ) -> None:
        if (mean is None) != (variance is None):
            raise ValueError("Normalization: give both mean and variance, or neither (and call adapt)")
        super().__init__(**kwargs)
        self.axis = () if axis is None else ((int(axis),) if isinstance(axis, int) else tuple(int(a) for a in axis))
        self.invert = bool(invert)
        self._given = None if mean is None else (np.asarray(mean, np.float64), np.asarray(variance, np.float64))
        if self._given is not None:  # saved as numbers, as Keras saves them
            self._config.update(mean=self._given[0].tolist(), variance=self._given[1].tolist())
        self._build_if_known()

    def _kept(self, rank: int) -> tuple[int, ...]:
        kept = tuple(sorted(a % rank for a in self.axis))
        if any(not -rank <= a < rank for a in self.axis) or 0 in kept:
            raise ValueError(f"{self.name}: axis {self.axis} must name feature axes of inputs of rank {rank}")
        return kept

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        kept = self._kept(len(input_shape))
        shape = tuple(input_shape[a] for a in kept)
        if None in shape:
            raise ValueError(f"{self.name}: axis {self.axis} of its inputs {input_shape} must have known sizes")
        self._broadcast = tuple(input_shape[a] if a in kept else 1 for a in range(len(input_shape)))
        if self._given is not None:  # constants, as Keras's: no weights
            self._given = tuple(np.broadcast_to(v, shape).copy() for v in self._given)
            return
        self.adapt_mean = self.add_weight(shape=shape, initializer="zeros", trainable=False)
        self.adapt_variance = self.add_weight(shape=shape, initializer="ones", trainable=False)

    def _statistics(self, dtype: Any = "float32", device: Any = None) -> tuple[Tensor, Tensor]:
        """The mean and variance in ``dtype`` (on ``device``, for given ones), unshaped."""
        if self._given is not None:
            return tuple(ops.tensor(v, dtype=dtype, device=device) for v in self._given)
        return self.adapt_mean.astype(dtype), self.adapt_variance.astype(dtype)

    @property
    def mean(self) -> Tensor:
        """The mean, shaped to broadcast against an input (Keras's ``mean``, ``(1, features)``)."""
        return self._statistics()[0].reshape(self._broadcast)

    @property
    def variance(self) -> Tensor:
        return self._statistics()[1].reshape(self._broadcast)

    def _store(self, mean: np.ndarray, variance: np.ndarray) -> None:
        with no_grad():
            for weight, value in ((self.adapt_mean, mean), (self.adapt_variance, variance)):
                weight._assign(ops.tensor(value, dtype=weight.dtype, device=weight.device))

    def adapt(self, data: Any, batch_size: int | None = None, steps: int | None = None) -> None:
        """Learn the mean and variance of ``data`` (an array, a tensor, or an iterable of
        batches such as a ``tf.data.Dataset``; ``steps`` of them at most) over every axis
        but ``axis``, in float64."""
        if self._given is not None:
            raise ValueError(f"{self.name}.adapt: the layer was given its mean and variance; adapt learns them")
        array = adapt_array(data, steps, self.name, vectors_are_samples=True)
        if not self.built:  # built by its data, whose shape a Sequential model then starts from
            self._declared_shape = self._declared_shape or array.shape[1:]
            self.build(array.shape)
            self.built = True
        kept = self._kept(array.ndim)
        if tuple(array.shape[a] for a in kept) != tuple(self.adapt_mean.shape):
            raise ValueError(
                f"{self.name}.adapt: data of shape {array.shape} has features {tuple(array.shape[a] for a in kept)}, "
                f"the layer {tuple(self.adapt_mean.shape)}"
            )
        reduced = tuple(a for a in range(array.ndim) if a not in kept)
        mean = array.mean(axis=reduced)
        self._store(mean, ((array - array.mean(axis=reduced, keepdims=True)) ** 2).mean(axis=reduced))

    def call(self, x: Tensor) -> Tensor:
        x = x if x.dtype.is_float else x.astype("float32")
        kept = self._kept(x.ndim)
        shape = tuple(x.shape[a] if a in kept else 1 for a in range(x.ndim))
        mean, variance = self._statistics(x.dtype, x.device)
        mean, deviation = mean.reshape(shape), ops.maximum(ops.sqrt(variance), _EPSILON).reshape(shape)
        return mean + x * deviation if self.invert else (x - mean) / deviation
