"""``BatchNormalization`` with Keras's training and inference behaviour.

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

from typing import Any

from braze import ops
from braze.autodiff import no_grad
from braze.nn import regularizers
from braze.nn.layer import Layer
from braze.nn.layers import reject_constraints
from braze.tensor import Tensor


class BatchNormalization(Layer):
    """Keras's batch normalization: batch statistics while training (and moving averages of
    them updated in place), the moving statistics in inference; see the module's text."""

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

    def call(self, x: Tensor, training: bool = False) -> Tensor:
        axis = self.axis % x.ndim
        reduced = tuple(d for d in range(x.ndim) if d != axis)
        broadcast = tuple(x.shape[d] if d == axis else 1 for d in range(x.ndim))

        def feature(t: Tensor) -> Tensor:
            return t if axis == x.ndim - 1 else t.reshape(broadcast)

        if training and self.trainable:
            mean = ops.mean(x, axis=reduced, keepdims=True)
            centered = x - mean
            variance = ops.mean(centered * centered, axis=reduced, keepdims=True)
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
