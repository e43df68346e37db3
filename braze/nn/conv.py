"""Convolution and pooling layers over channels-last inputs, as Keras's: ``Conv2D`` on NHWC
images with HWIO kernels, ``Conv1D`` on (batch, steps, channels) sequences with (width,
in, out) kernels, their pooling layers and the global poolings.

A 1-D layer runs its 2-D op on a height of 1, so its gradient, fusion and native kernels
are the 2-D convolution's and pooling's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from braze import ops
from braze.ir.errors import ShapeError
from braze.nn import masks
from braze.nn.layer import Layer
from braze.nn.layers import KernelAndBias, reject_constraints
from braze.ops.random import Generator
from braze.tensor import Tensor, user_error

__all__ = [
    "AveragePooling1D",
    "AveragePooling2D",
    "AvgPool1D",
    "AvgPool2D",
    "Conv1D",
    "Conv2D",
    "Convolution1D",
    "Convolution2D",
    "GlobalAveragePooling1D",
    "GlobalAveragePooling2D",
    "GlobalAvgPool1D",
    "GlobalAvgPool2D",
    "GlobalMaxPool1D",
    "GlobalMaxPool2D",
    "GlobalMaxPooling1D",
    "GlobalMaxPooling2D",
    "MaxPool1D",
    "MaxPool2D",
    "MaxPooling1D",
    "MaxPooling2D",
]


def channels_last(layer: str, data_format: str | None) -> None:
    if data_format not in (None, "channels_last"):
        raise NotImplementedError(f"{layer}: data_format={data_format!r}: braze's layers are channels_last")


def int_tuple(value: int | Sequence[int], n: int) -> tuple[int, ...]:
    return (int(value),) * n if isinstance(value, int) else tuple(int(v) for v in value)


class _Conv(KernelAndBias):
    """What Conv1D and Conv2D share: arguments, weights and the bias and activation."""

    rank = 2

    def __init__(
        self,
        filters: int,
        kernel_size: int | Sequence[int],
        strides: int | Sequence[int] = 1,
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: int | Sequence[int] = 1,
        groups: int = 1,
        activation: str | Callable | None = None,
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        *,
        generator: Generator | None = None,
        **kwargs: Any,
    ) -> None:
        kind = type(self).__name__
        reject_constraints(kind, kwargs)
        channels_last(kind, data_format)
        if groups != 1:
            raise NotImplementedError(f"{kind}: groups={groups} is not supported (grouped convolutions)")
        super().__init__(**kwargs)
        self.filters = int(filters)
        self.kernel_size = int_tuple(kernel_size, self.rank)
        self.strides, self.dilation_rate = int_tuple(strides, self.rank), int_tuple(dilation_rate, self.rank)
        self.padding = padding.lower() if isinstance(padding, str) else padding
        self._weights_options(
            activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer, generator
        )
        self._build_if_known()

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        if len(input_shape) != self.rank + 2:
            layout = {1: "(batch, steps, channels) sequences", 2: "NHWC images", 3: "NDHWC volumes"}[self.rank]
            raise user_error(ShapeError, f"{self.name}: expected {layout}, got inputs of shape {input_shape}")
        self._add_kernel_and_bias((*self.kernel_size, input_shape[-1], self.filters))


class Conv2D(_Conv):
    """2-D convolution over NHWC inputs with an HWIO kernel, as ``keras.layers.Conv2D``;
    a subclass may override ``convolution_op`` (Keras's hook) to change the convolution."""

    def convolution_op(self, inputs: Tensor, kernel: Tensor) -> Tensor:
        return ops.conv2d(inputs, kernel, stride=self.strides, padding=self.padding, dilation=self.dilation_rate)

    def call(self, x: Tensor) -> Tensor:
        return self._finish(self.convolution_op(x, self.kernel))


class Conv1D(_Conv):
    """1-D convolution over (batch, steps, channels) with a (width, in, out) kernel;
    ``padding="causal"`` pads on the left only, so step t sees only steps up to t."""

    rank = 1

    def convolution_op(self, inputs: Tensor, kernel: Tensor) -> Tensor:
        if inputs.ndim != 3:
            raise user_error(ShapeError, f"{self.name}: expected (batch, steps, channels), got {inputs.shape}")
        (width,), (dilation,) = self.kernel_size, self.dilation_rate
        padding: Any = self.padding
        if padding == "causal":
            padding = ((0, 0), ((width - 1) * dilation, 0))
        y = ops.conv2d(
            inputs.reshape(inputs.shape[0], 1, *inputs.shape[1:]),
            kernel.reshape(1, *kernel.shape),
            stride=(1, self.strides[0]),
            padding=padding,
            dilation=(1, dilation),
        )
        return y.reshape(y.shape[0], *y.shape[2:])

    def call(self, x: Tensor) -> Tensor:
        return self._finish(self.convolution_op(x, self.kernel))


Convolution1D = Conv1D
"""Keras's long name of ``Conv1D``."""
Convolution2D = Conv2D
"""Keras's long name of ``Conv2D``."""


class _Pooling(Layer):
    rank = 2
    reduce: Callable = staticmethod(ops.max_pool2d)

    def __init__(
        self,
        pool_size: int | Sequence[int] = 2,
        strides: int | Sequence[int] | None = None,
        padding: str = "valid",
        data_format: str | None = None,
        **kwargs: Any,
    ) -> None:
        channels_last(type(self).__name__, data_format)
        super().__init__(**kwargs)
        self.pool_size = int_tuple(pool_size, self.rank)
        self.strides = self.pool_size if strides is None else int_tuple(strides, self.rank)
        self.padding = padding

    def call(self, x: Tensor) -> Tensor:
        if self.rank == 2:
            return self.reduce(x, self.pool_size, self.strides, self.padding)
        y = self.reduce(x.reshape(x.shape[0], 1, *x.shape[1:]), (1, *self.pool_size), (1, *self.strides), self.padding)
        return y.reshape(y.shape[0], *y.shape[2:])


class MaxPooling2D(_Pooling):
    """Max pooling over ``pool_size`` windows of NHWC images (``strides`` defaults to
    ``pool_size``; padding ``"valid"`` or ``"same"``)."""


class AveragePooling2D(_Pooling):
    """Average pooling over ``pool_size`` windows of NHWC images (padded pixels not counted)."""

    reduce = staticmethod(ops.avg_pool2d)


class MaxPooling1D(_Pooling):
    """Max pooling over ``pool_size`` steps of (batch, steps, channels) sequences."""

    rank = 1


class AveragePooling1D(_Pooling):
    """Average pooling over ``pool_size`` steps of (batch, steps, channels) sequences."""

    rank = 1
    reduce = staticmethod(ops.avg_pool2d)


# Keras has both spellings of each pooling layer; the long ones name them in summaries.
MaxPool2D = MaxPooling2D
"""Keras's short name of ``MaxPooling2D``."""
AvgPool2D = AveragePooling2D
"""Keras's short name of ``AveragePooling2D``."""
MaxPool1D = MaxPooling1D
"""Keras's short name of ``MaxPooling1D``."""
AvgPool1D = AveragePooling1D
"""Keras's short name of ``AveragePooling1D``."""


class _GlobalPooling(Layer):
    """The mean (or max) over every axis but the batch and the channels."""

    take_max = False

    def __init__(self, data_format: str | None = None, keepdims: bool = False, **kwargs: Any) -> None:
        channels_last(type(self).__name__, data_format)
        super().__init__(**kwargs)
        self.keepdims = keepdims

    def call(self, x: Tensor) -> Tensor:
        axes = tuple(range(1, x.ndim - 1))
        reduce = ops.max if self.take_max else ops.mean
        return reduce(x, axis=axes, keepdims=self.keepdims)


class GlobalAveragePooling1D(_GlobalPooling):
    """The mean over the steps of (batch, steps, channels) sequences (``keepdims`` keeps the
    axis); with a mask, over the kept steps only. Its output has no mask."""

    supports_masking = True

    def call(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        if mask is None:
            return super().call(x)
        kept = ops.expand_dims(masks.as_bool(mask, x).astype(x.dtype), -1)
        return ops.sum(x * kept, axis=1, keepdims=self.keepdims) / ops.sum(kept, axis=1, keepdims=self.keepdims)

    def compute_mask(self, inputs: Any, mask: Any = None) -> None:
        return None


class GlobalAveragePooling2D(_GlobalPooling):
    """The mean over the pixels of NHWC images, one value per channel."""


class GlobalMaxPooling1D(_GlobalPooling):
    """The maximum over the steps of (batch, steps, channels) sequences."""

    take_max = True


class GlobalMaxPooling2D(_GlobalPooling):
    """The maximum over the pixels of NHWC images, one value per channel."""

    take_max = True


GlobalAvgPool1D = GlobalAveragePooling1D
"""Keras's short name of ``GlobalAveragePooling1D``."""
GlobalAvgPool2D = GlobalAveragePooling2D
"""Keras's short name of ``GlobalAveragePooling2D``."""
GlobalMaxPool1D = GlobalMaxPooling1D
"""Keras's short name of ``GlobalMaxPooling1D``."""
GlobalMaxPool2D = GlobalMaxPooling2D
"""Keras's short name of ``GlobalMaxPooling2D``."""
