"""Layers that make images and sequences larger, as Keras's: ``UpSampling2D`` and
``UpSampling1D`` repeat each pixel or step (nearest neighbour; ``UpSampling2D`` also
resizes bilinearly), ``Conv2DTranspose`` and
``Conv1DTranspose`` are the transposes of the convolutions (their gradient with respect to
their input, ``ops.conv2d_transpose``), with Keras's kernel layout (size, filters, input
channels) and output sizes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from braze import ops
from braze.ir.errors import ShapeError
from braze.nn.conv import channels_last, int_tuple
from braze.nn.layer import Layer
from braze.nn.layers import KernelAndBias, reject_constraints
from braze.ops.image import resize_to
from braze.ops.random import Generator
from braze.tensor import Tensor, user_error

__all__ = ["Conv1DTranspose", "Conv2DTranspose", "UpSampling1D", "UpSampling2D"]


def _repeat(x: Tensor, factors: Sequence[int]) -> Tensor:
    """``x`` with each index of axes 1, 2, ... repeated ``factors[i]`` times (a reshape, a
    broadcast and a reshape: its gradient sums the copies)."""
    spread, whole = [x.shape[0]], [x.shape[0]]
    for size, factor in zip(x.shape[1:-1], factors, strict=True):
        spread += [size, 1]
        whole += [size, factor]
    grown = ops.broadcast_to(x.reshape(*spread, x.shape[-1]), (*whole, x.shape[-1]))
    return grown.reshape(x.shape[0], *[s * f for s, f in zip(x.shape[1:-1], factors, strict=True)], x.shape[-1])


class UpSampling2D(Layer):
    """Each pixel of NHWC images repeated ``size`` (rows, columns) times, or the images
    resized that many times larger with ``interpolation="bilinear"``."""

    def __init__(
        self,
        size: int | Sequence[int] = (2, 2),
        data_format: str | None = None,
        interpolation: str = "nearest",
        **kwargs: Any,
    ) -> None:
        channels_last("UpSampling2D", data_format)
        if interpolation not in ("nearest", "bilinear"):
            raise NotImplementedError(f"UpSampling2D: interpolation={interpolation!r} (only 'nearest' and 'bilinear')")
        super().__init__(**kwargs)
        self.size, self.interpolation = int_tuple(size, 2), interpolation

    def call(self, x: Tensor) -> Tensor:
        if x.ndim != 4:
            raise user_error(ShapeError, f"{self.name}: expected NHWC images, got inputs of shape {x.shape}")
        if self.interpolation == "bilinear":  # TensorFlow's image.resize, as Keras's
            return resize_to(x, x.shape[1] * self.size[0], x.shape[2] * self.size[1])
        return _repeat(x, self.size)


class UpSampling1D(Layer):
    """Each step of (batch, steps, channels) sequences repeated ``size`` times."""

    def __init__(self, size: int = 2, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.size = int(size)

    def call(self, x: Tensor) -> Tensor:
        if x.ndim != 3:
            raise user_error(
                ShapeError, f"{self.name}: expected (batch, steps, channels), got inputs of shape {x.shape}"
            )
        return _repeat(x, (self.size,))


def output_length(size: int, kernel: int, stride: int, padding: str, output_padding: int | None, dilation: int) -> int:
    """Keras's output length of a transposed convolution along one axis."""
    span = (kernel - 1) * dilation + 1
    if output_padding is None:
        return size * stride + max(span - stride, 0) if padding == "valid" else size * stride
    return (size - 1) * stride + span - 2 * (span // 2 if padding == "same" else 0) + output_padding


class _ConvTranspose(KernelAndBias):
    """What Conv2DTranspose and Conv1DTranspose share: Keras's arguments, a kernel of shape
    (*kernel_size, filters, input channels) and a bias of ``filters``."""

    rank = 2

    def __init__(
        self,
        filters: int,
        kernel_size: int | Sequence[int],
        strides: int | Sequence[int] = 1,
        padding: str = "valid",
        output_padding: int | Sequence[int] | None = None,
        data_format: str | None = None,
        dilation_rate: int | Sequence[int] = 1,
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
        padding = padding.lower() if isinstance(padding, str) else padding
        if padding not in ("valid", "same"):
            raise ValueError(f"{kind}: padding must be 'valid' or 'same', got {padding!r}")
        super().__init__(**kwargs)
        self.filters, self.padding = int(filters), padding
        self.kernel_size = int_tuple(kernel_size, self.rank)
        self.strides, self.dilation_rate = int_tuple(strides, self.rank), int_tuple(dilation_rate, self.rank)
        self.output_padding = None if output_padding is None else int_tuple(output_padding, self.rank)
        if self.output_padding is not None and any(
            p >= s for p, s in zip(self.output_padding, self.strides, strict=True)
        ):
            raise ValueError(f"{kind}: output_padding {self.output_padding} must be less than strides {self.strides}")
        self._weights_options(
            activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer, generator
        )
        self._build_if_known()

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        if len(input_shape) != self.rank + 2 or input_shape[-1] is None:
            layout = "NHWC images" if self.rank == 2 else "(batch, steps, channels) sequences"
            raise user_error(ShapeError, f"{self.name}: expected {layout} of known channels, got {input_shape}")
        self.kernel = self.add_weight(
            shape=(*self.kernel_size, self.filters, input_shape[-1]),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
        )
        if self.use_bias:
            self.bias = self.add_weight(
                shape=(self.filters,), initializer=self.bias_initializer, regularizer=self.bias_regularizer
            )

    def _transpose(self, x: Tensor, kernel: Tensor, strides: tuple, dilation: tuple, extra: tuple) -> Tensor:
        """``x`` through the transposed 2-D convolution; ``extra``: each axis's output padding or None."""
        lengths = [
            output_length(size, k, s, self.padding, p, d)
            for size, k, s, p, d in zip(x.shape[1:3], kernel.shape[:2], strides, extra, dilation, strict=True)
        ]
        return ops.conv2d_transpose(x, kernel, lengths, strides, self.padding, dilation)


class Conv2DTranspose(_ConvTranspose):
    """The transpose of a 2-D convolution over NHWC images, as ``keras.layers.Conv2DTranspose``."""

    def call(self, x: Tensor) -> Tensor:
        if x.ndim != 4:
            raise user_error(ShapeError, f"{self.name}: expected NHWC images, got inputs of shape {x.shape}")
        extra = self.output_padding or (None, None)
        return self._finish(self._transpose(x, self.kernel, self.strides, self.dilation_rate, extra))


class Conv1DTranspose(_ConvTranspose):
    """The transpose of a 1-D convolution over (batch, steps, channels) sequences."""

    rank = 1

    def call(self, x: Tensor) -> Tensor:
        if x.ndim != 3:
            raise user_error(
                ShapeError, f"{self.name}: expected (batch, steps, channels), got inputs of shape {x.shape}"
            )
        y = self._transpose(
            x.reshape(x.shape[0], 1, *x.shape[1:]),
            self.kernel.reshape(1, *self.kernel.shape),
            (1, *self.strides),
            (1, *self.dilation_rate),
            (0, *(self.output_padding or (None,))),  # the added height of 1 stays 1
        )
        return self._finish(y.reshape(y.shape[0], *y.shape[2:]))
