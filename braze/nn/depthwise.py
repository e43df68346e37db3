"""Keras's depthwise and separable convolutions over NHWC images (and, one row high,
(batch, steps, channels) sequences: ``DepthwiseConv1D``, ``SeparableConv1D``): ``DepthwiseConv2D``
filters each input channel on its own (``depthwise_kernel`` of shape (height, width,
channels, depth_multiplier)); ``SeparableConv2D`` follows that with a 1x1 convolution
mixing the channels (``pointwise_kernel`` of shape (1, 1, channels * depth_multiplier,
filters)), the cheaper stand-in for a full convolution that Xception and MobileNet use."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from braze import ops
from braze.ir.errors import ShapeError
from braze.nn import activations, regularizers
from braze.nn.conv import channels_last, int_tuple
from braze.nn.layer import Layer
from braze.nn.layers import reject_constraints
from braze.ops.random import Generator
from braze.tensor import Tensor, user_error

__all__ = ["DepthwiseConv1D", "DepthwiseConv2D", "SeparableConv1D", "SeparableConv2D"]


class DepthwiseConv2D(Layer):
    """``keras.layers.DepthwiseConv2D``: each channel convolved with ``depth_multiplier``
    filters of its own, then the bias and the activation."""

    rank = 2

    def __init__(
        self,
        kernel_size: int | Sequence[int],
        strides: int | Sequence[int] = 1,
        padding: str = "valid",
        depth_multiplier: int = 1,
        data_format: str | None = None,
        dilation_rate: int | Sequence[int] = 1,
        activation: str | Callable | None = None,
        use_bias: bool = True,
        depthwise_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        depthwise_regularizer: Any = None,
        bias_regularizer: Any = None,
        *,
        generator: Generator | None = None,
        **kwargs: Any,
    ) -> None:
        kind = type(self).__name__
        reject_constraints(kind, kwargs)
        channels_last(kind, data_format)
        if int(depth_multiplier) < 1:
            raise ValueError(f"{kind}: depth_multiplier must be a positive integer, got {depth_multiplier!r}")
        super().__init__(**kwargs)
        self.kernel_size, self.strides = int_tuple(kernel_size, self.rank), int_tuple(strides, self.rank)
        self.padding, self.dilation_rate = padding.lower(), int_tuple(dilation_rate, self.rank)
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer)
        self.activation, self.use_bias = activations.get(activation), bool(use_bias)
        self.depthwise_initializer, self.bias_initializer = depthwise_initializer, bias_initializer
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self._generator = generator
        self._build_if_known()

    def _layout(self) -> str:
        return "NHWC images" if self.rank == 2 else "(batch, steps, channels) sequences"

    def _channels(self, input_shape: tuple[int | None, ...]) -> int:
        if len(input_shape) != self.rank + 2 or input_shape[-1] is None:
            raise user_error(ShapeError, f"{self.name}: expected {self._layout()} of known channels, got {input_shape}")
        return int(input_shape[-1])

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        channels = self._channels(input_shape)
        self.depthwise_kernel = self.add_weight(
            shape=(*self.kernel_size, channels, self.depth_multiplier),
            initializer=self.depthwise_initializer,
            regularizer=self.depthwise_regularizer,
        )
        width = self._add_pointwise(channels * self.depth_multiplier)
        if self.use_bias:
            self.bias = self.add_weight(
                shape=(width,), initializer=self.bias_initializer, regularizer=self.bias_regularizer
            )

    def _add_pointwise(self, channels: int) -> int:
        """The weights after the depthwise filters, if any; the output channels."""
        return channels

    def _pointwise(self, y: Tensor) -> Tensor:
        return y

    def _depthwise(self, x: Tensor) -> Tensor:
        if x.ndim != self.rank + 2:
            raise user_error(ShapeError, f"{self.name}: expected {self._layout()}, got inputs of shape {x.shape}")
        if self.rank == 2:
            return ops.depthwise_conv2d(x, self.depthwise_kernel, self.strides, self.padding, self.dilation_rate)
        # A sequence as an image one row high.
        kernel = self.depthwise_kernel.reshape(1, *self.depthwise_kernel.shape)
        row = x.reshape(x.shape[0], 1, *x.shape[1:])
        y = ops.depthwise_conv2d(row, kernel, (1, *self.strides), self.padding, (1, *self.dilation_rate))
        return y.reshape(y.shape[0], *y.shape[2:])

    def call(self, x: Tensor) -> Tensor:
        y = self._pointwise(self._depthwise(x))
        return self.activation(y + self.bias if self.use_bias else y)


class SeparableConv2D(DepthwiseConv2D):
    """``keras.layers.SeparableConv2D``: a depthwise convolution, then a 1x1 convolution
    into ``filters`` channels, then the bias and the activation."""

    def __init__(
        self,
        filters: int,
        kernel_size: int | Sequence[int],
        strides: int | Sequence[int] = 1,
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: int | Sequence[int] = 1,
        depth_multiplier: int = 1,
        activation: str | Callable | None = None,
        use_bias: bool = True,
        depthwise_initializer: Any = "glorot_uniform",
        pointwise_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        depthwise_regularizer: Any = None,
        pointwise_regularizer: Any = None,
        bias_regularizer: Any = None,
        *,
        generator: Generator | None = None,
        **kwargs: Any,
    ) -> None:
        self.filters = int(filters)
        self.pointwise_initializer = pointwise_initializer
        self.pointwise_regularizer = regularizers.get(pointwise_regularizer)
        super().__init__(
            kernel_size,
            strides,
            padding,
            depth_multiplier,
            data_format,
            dilation_rate,
            activation,
            use_bias,
            depthwise_initializer,
            bias_initializer,
            depthwise_regularizer,
            bias_regularizer,
            generator=generator,
            **kwargs,
        )

    def _add_pointwise(self, channels: int) -> int:
        self.pointwise_kernel = self.add_weight(
            shape=(*([1] * self.rank), channels, self.filters),
            initializer=self.pointwise_initializer,
            regularizer=self.pointwise_regularizer,
        )
        return self.filters

    def _pointwise(self, y: Tensor) -> Tensor:
        # A 1x1 convolution: a product over the channels.
        return y @ self.pointwise_kernel.reshape(self.pointwise_kernel.shape[-2:])


class DepthwiseConv1D(DepthwiseConv2D):
    """``keras.layers.DepthwiseConv1D`` over (batch, steps, channels): a (width, channels,
    depth_multiplier) ``depthwise_kernel``."""

    rank = 1


class SeparableConv1D(SeparableConv2D):
    """``keras.layers.SeparableConv1D`` over (batch, steps, channels): a depthwise convolution
    along the steps, then a (1, channels, filters) pointwise one."""

    rank = 1
