"""PyTorch's CNN layers with PyTorch's arguments, defaults, initial values and parameter
names and layouts, so that a ``torch.nn`` model ports by its imports and a PyTorch
``state_dict`` loads by name: ``Conv2d`` (NCHW images, ``weight`` of shape (out, in /
groups, kH, kW)), ``MaxPool2d``, ``AvgPool2d``, ``AdaptiveAvgPool2d``, ``BatchNorm1d``,
``BatchNorm2d``, ``Identity``, ``LogSoftmax``, ``SiLU`` and ``Softplus`` (``Dropout`` and
``Flatten`` are braze.nn's, which take PyTorch's arguments too). Each computes by
``torch_functional``.

Batch norm follows the module's mode, ``train()`` / ``eval()`` (a layer starts
in training mode, as PyTorch's), or the ``training`` of the Keras call they are inside.
``generator=`` (braze's, by keyword) makes initial weights and dropout masks reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from braze import ops
from braze.autodiff import no_grad
from braze.ir.errors import ShapeError
from braze.nn import initializers
from braze.nn import torch_convolution as C
from braze.nn import torch_functional as F
from braze.nn.layer import Layer
from braze.nn.layers import check_inplace
from braze.ops.nn import positive_pair
from braze.ops.random import Generator
from braze.tensor import Tensor, user_error

__all__ = [
    "AdaptiveAvgPool2d",
    "AvgPool2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "Conv2d",
    "Identity",
    "LogSoftmax",
    "MaxPool2d",
    "SiLU",
    "Softplus",
]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class Conv2d(Layer):
    """``torch.nn.Conv2d``: the cross-correlation of NCHW images with ``weight`` (out_channels,
    in_channels / groups, kH, kW), plus ``bias`` (out_channels,). Both start uniform in
    ``±1 / sqrt(fan_in)``, fan_in = in_channels / groups * kH * kW (PyTorch's
    ``kaiming_uniform_(a=sqrt(5))`` and its bias rule). ``padding`` is an int, a pair,
    "same" or "valid"; a ``padding_mode`` other than "zeros" pads the input by
    ``torch_functional.pad`` in that mode first."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int] = 1,
        padding: str | int | Sequence[int] = 0,
        dilation: int | Sequence[int] = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        *,
        generator: Generator | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError(
                f"Conv2d: in_channels ({in_channels}) and out_channels ({out_channels}) must be divisible by "
                f"groups ({groups})"
            )
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"Conv2d: padding_mode must be one of {_PADDING_MODES}, got {padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = int(in_channels), int(out_channels), int(groups)
        self.kernel_size = positive_pair("Conv2d", "kernel_size", kernel_size)
        self.stride = positive_pair("Conv2d", "stride", stride)
        self.dilation = positive_pair("Conv2d", "dilation", dilation)
        C.conv_padding("Conv2d", padding, self.kernel_size, self.stride, self.dilation)  # PyTorch checks it here
        self.padding = padding if isinstance(padding, str) else C.padding_pair("Conv2d", padding)
        self.padding_mode = padding_mode
        fan_in = self.in_channels // self.groups * self.kernel_size[0] * self.kernel_size[1]
        bound = 1.0 / math.sqrt(fan_in)
        uniform = initializers.RandomUniform(-bound, bound)
        shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
        self.weight = initializers.make_weight(uniform, shape, self._dtype, generator)
        self.bias = initializers.make_weight(uniform, (self.out_channels,), self._dtype, generator) if bias else None

    def forward(self, input: Tensor) -> Tensor:
        x, padding = input, self.padding
        if self.padding_mode != "zeros":
            pads = C.conv_padding("Conv2d", padding, self.kernel_size, self.stride, self.dilation)
            (top, bottom), (left, right) = pads
            x, padding = F.pad(x, (left, right, top, bottom), mode=self.padding_mode), 0
        return C.conv2d(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class MaxPool2d(Layer):
    """``torch.nn.MaxPool2d``: the maximum over each window of NCHW images; ``stride``
    defaults to ``kernel_size``."""

    def __init__(
        self,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
        dilation: int | Sequence[int] = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.kernel_size, self.stride = kernel_size, kernel_size if stride is None else stride
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return C.max_pool2d(
            input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode, self.return_indices
        )


class AvgPool2d(Layer):
    """``torch.nn.AvgPool2d``: the mean over each window of NCHW images, the padded zeros
    counted unless ``count_include_pad=False``."""

    def __init__(
        self,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.kernel_size, self.stride = kernel_size, kernel_size if stride is None else stride
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return C.avg_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )


class AdaptiveAvgPool2d(Layer):
    """``torch.nn.AdaptiveAvgPool2d``: NCHW images averaged to ``output_size`` (an int, or a
    pair whose None keeps the input's size), over PyTorch's bins."""

    def __init__(self, output_size: int | Sequence[int | None], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return C.adaptive_avg_pool2d(input, self.output_size)


class _BatchNorm(Layer):
    """PyTorch's batch norm over axis 1: ``weight`` (ones) and ``bias`` (zeros) when
    ``affine``; buffers ``running_mean`` (zeros), ``running_var`` (ones) and
    ``num_batches_tracked`` (int64) when ``track_running_stats``. Training normalizes by the
    batch and moves the running statistics by ``momentum`` (a cumulative average when
    None); evaluation normalizes by them, or by the batch when they are not tracked."""

    ranks: tuple[int, ...] = ()

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.num_features, self.eps, self.momentum = int(num_features), float(eps), momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        shape, dtype = (self.num_features,), self._dtype
        self.weight = initializers.make_weight("ones", shape, dtype) if affine else None
        self.bias = initializers.make_weight("zeros", shape, dtype) if affine else None
        self.running_mean = self.running_var = self.num_batches_tracked = None
        if track_running_stats:
            self.register_buffer("running_mean", initializers.make_weight("zeros", shape, dtype, trainable=False))
            self.register_buffer("running_var", initializers.make_weight("ones", shape, dtype, trainable=False))
            self.register_buffer("num_batches_tracked", ops.tensor(0, dtype="int64"))

    def forward(self, input: Tensor, training: bool | None = None) -> Tensor:
        training = self.training if training is None else training
        x = ops.as_tensor(input)
        if x.ndim not in self.ranks or x.shape[1] != self.num_features:
            raise user_error(
                ShapeError,
                f"{type(self).__name__}: expected a {' or '.join(f'{r}-D' for r in self.ranks)} input with "
                f"{self.num_features} channels in axis 1, got {tuple(x.shape)}",
            )
        factor: float | Tensor = 0.0 if self.momentum is None else self.momentum
        if training and self.num_batches_tracked is not None:
            with no_grad():
                self.num_batches_tracked.copy_(self.num_batches_tracked + 1)
            if self.momentum is None:  # PyTorch's cumulative average: the n-th batch weighs 1/n
                factor = 1.0 / self.num_batches_tracked.astype(x.dtype)
        batch_statistics = training or self.running_mean is None
        return C.batch_norm(
            x, self.running_mean, self.running_var, self.weight, self.bias, batch_statistics, factor, self.eps
        )


class BatchNorm1d(_BatchNorm):
    """``torch.nn.BatchNorm1d`` over (N, C) or (N, C, L) inputs."""

    ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    """``torch.nn.BatchNorm2d`` over (N, C, H, W) inputs."""

    ranks = (4,)


class Identity(Layer):
    """``torch.nn.Identity``: its input; any arguments are ignored, as PyTorch's are."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Any) -> Any:
        return input


class LogSoftmax(Layer):
    """``torch.nn.LogSoftmax``: the log of the softmax over ``dim``."""

    def __init__(self, dim: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim)


class SiLU(Layer):
    """``torch.nn.SiLU``: ``x * sigmoid(x)``."""

    def __init__(self, inplace: bool = False, **kwargs: Any) -> None:
        check_inplace("SiLU", inplace)
        super().__init__(**kwargs)
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input)


class Softplus(Layer):
    """``torch.nn.Softplus``: ``log(1 + exp(beta * x)) / beta``, linear where ``beta * x >
    threshold``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.beta, self.threshold = float(beta), float(threshold)

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)
