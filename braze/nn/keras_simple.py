"""Small Keras layers: ``Identity``, ``ActivityRegularization``, ``PReLU``,
``UnitNormalization`` and ``GroupNormalization``, with Keras's arguments and weights."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from braze import ops
from braze.ir.errors import ShapeError
from braze.nn import functional
from braze.nn.keras_ops import FUNCTIONS
from braze.nn.layer import Layer
from braze.nn.regularizers import L1L2
from braze.tensor import Tensor, user_error

__all__ = ["ActivityRegularization", "GroupNormalization", "Identity", "PReLU", "UnitNormalization"]

normalize = FUNCTIONS["normalize"]  # keras.ops.normalize: x over its norm along an axis
NORM_EPSILON = 1e-6  # the smallest norm divided by: Keras's 1e-12 on the squared norm


class Identity(Layer):
    """Its input, unchanged (a placeholder in a list of layers)."""

    supports_masking = True

    def call(self, x: Any) -> Any:
        return x


class ActivityRegularization(Identity):
    """Its input, unchanged, adding ``l1 * sum(|x|) + l2 * sum(x**2)`` (over the batch's
    size, as every activity regularizer) to the losses."""

    def __init__(self, l1: float = 0.0, l2: float = 0.0, **kwargs: Any) -> None:
        super().__init__(activity_regularizer=L1L2(l1, l2), **kwargs)
        self.l1, self.l2 = float(l1), float(l2)


class PReLU(Layer):
    """``x`` where positive, else ``alpha * x``, with a learned ``alpha`` per input value
    (shared along ``shared_axes``, counted from 1 after the batch)."""

    supports_masking = True

    def __init__(
        self,
        alpha_initializer: Any = "zeros",
        alpha_regularizer: Any = None,
        alpha_constraint: Any = None,
        shared_axes: int | Sequence[int] | None = None,
        **kwargs: Any,
    ) -> None:
        if alpha_regularizer is not None or alpha_constraint is not None:
            raise NotImplementedError("PReLU: alpha_regularizer and alpha_constraint are not supported")
        super().__init__(**kwargs)
        self.alpha_initializer = alpha_initializer
        shared = () if shared_axes is None else (shared_axes,) if isinstance(shared_axes, int) else shared_axes
        self.shared_axes = tuple(int(a) for a in shared)
        self._build_if_known()

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        shape = [1 if axis in self.shared_axes else size for axis, size in enumerate(input_shape) if axis > 0]
        if None in shape:
            raise user_error(ShapeError, f"{self.name}: the axes of unknown size {input_shape} must be shared_axes")
        self.alpha = self.add_weight(shape=tuple(shape), initializer=self.alpha_initializer, name="alpha")

    def call(self, x: Tensor) -> Tensor:
        return ops.relu(x) - self.alpha * ops.relu(-x)


class UnitNormalization(Layer):
    """Each vector along ``axis`` divided by its Euclidean norm (at least 1e-6: Keras's
    epsilon of 1e-12 on the squared norm)."""

    supports_masking = True

    def __init__(self, axis: int | Sequence[int] = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = axis if isinstance(axis, int) else tuple(axis)

    def call(self, x: Tensor) -> Tensor:
        return normalize(x, self.axis, epsilon=NORM_EPSILON)


class GroupNormalization(Layer):
    """Normalization of each example over groups of channels: the ``axis`` channels (the
    last) split into ``groups``, each normalized over its channels and every other axis
    but the batch; then ``gamma`` and ``beta`` per channel (Wu and He, 2018)."""

    supports_masking = True

    def __init__(
        self,
        groups: int = 32,
        axis: int = -1,
        epsilon: float = 1e-3,
        center: bool = True,
        scale: bool = True,
        beta_initializer: Any = "zeros",
        gamma_initializer: Any = "ones",
        **kwargs: Any,
    ) -> None:
        for option in ("beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"):
            if kwargs.pop(option, None) is not None:
                raise NotImplementedError(f"GroupNormalization: {option} is not supported")
        super().__init__(**kwargs)
        if axis != -1:
            raise NotImplementedError("GroupNormalization: axis other than -1 (the channels last) is not supported")
        self.groups, self.epsilon, self.center, self.scale = int(groups), float(epsilon), center, scale
        self.beta_initializer, self.gamma_initializer = beta_initializer, gamma_initializer
        self._build_if_known()

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        channels = input_shape[-1]
        if channels is None or channels % self.groups:
            raise user_error(ShapeError, f"{self.name}: {channels} channels do not split into {self.groups} groups")
        if self.scale:
            self.gamma = self.add_weight(shape=(channels,), initializer=self.gamma_initializer, name="gamma")
        if self.center:
            self.beta = self.add_weight(shape=(channels,), initializer=self.beta_initializer, name="beta")

    def call(self, x: Tensor) -> Tensor:
        grouped = x.reshape(*x.shape[:-1], self.groups, x.shape[-1] // self.groups)
        axes = (*range(1, x.ndim - 1), x.ndim)  # every axis but the batch and the group
        y = functional.standardize(grouped, axes, None, None, self.epsilon).reshape(x.shape)
        if self.scale:
            y = y * self.gamma
        return y + self.beta if self.center else y
