"""Layers with Keras's signatures and defaults (Glorot uniform kernels, zero biases).

A layer whose input size is not given is built on its first call, as in Keras; a
``Sequential`` whose first layer has an ``input_shape`` builds every layer at once, so its
parameters exist before the optimizer is made.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from braze import ops
from braze.ir.errors import ShapeError
from braze.nn import functional, init, regularizers
from braze.nn.module import Module
from braze.nn.names import snake_case, unique_name
from braze.ops.random import Generator
from braze.tensor import Tensor, user_error

__all__ = [
    "Activation",
    "AveragePooling2D",
    "AvgPool2D",
    "Conv2D",
    "Dense",
    "Dropout",
    "Flatten",
    "Layer",
    "Linear",
    "MaxPool2D",
    "MaxPooling2D",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Softmax",
    "Tanh",
]

ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "relu": ops.relu,
    "sigmoid": ops.sigmoid,
    "tanh": ops.tanh,
    "softmax": ops.softmax,
    "gelu": functional.gelu,  # exact, as Keras's
    "linear": lambda x: x,
}


def activation_fn(activation: str | Callable | None) -> Callable[[Tensor], Tensor]:
    if activation is None:
        return ACTIVATIONS["linear"]
    if callable(activation):
        return activation
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}: expected one of {sorted(ACTIVATIONS)} or a function")
    return ACTIVATIONS[activation]


class Layer(Module):
    """A module with an optional deferred build from the first input's shape, and a Keras
    name (``dense``, ``dense_1``...) given when it is made."""

    built: bool = True
    input_shape: tuple[int, ...] | None = None

    def __new__(cls, *args: Any, **kwargs: Any) -> Layer:
        layer = super().__new__(cls)
        layer._name = unique_name(snake_case(cls.__name__))
        return layer

    @property
    def name(self) -> str:
        return self._name

    @property
    def losses(self) -> list[Tensor]:
        """The weight penalties of this layer and the layers inside it (Keras's ``losses``)."""
        total = regularizers.penalty(self)
        return [] if total is None else [total]

    def build(self, input_shape: tuple[int, ...]) -> None:
        """Create parameters for inputs of ``input_shape`` (without the batch dimension)."""

    def _build_if_known(self, input_shape: Sequence[int] | None) -> None:
        """Build at once when the input shape is given (Keras's ``input_shape=``), else on the first call."""
        self.built = False
        if input_shape is not None:
            self.input_shape = tuple(input_shape)
            self.build(self.input_shape)
            self.built = True

    def __call__(self, x: Tensor, *args: Any, **kwargs: Any) -> Any:
        if not self.built:
            self.build(tuple(x.shape[1:]))
            self.built = True
            if x.device != self.device and self.device is not None:
                self.to(x.device)
        return self.forward(x, *args, **kwargs)


class Dense(Layer):
    """``activation(x @ kernel + bias)``; ``input_dim`` builds it at once."""

    def __init__(
        self,
        units: int,
        activation: str | Callable | None = None,
        input_dim: int | None = None,
        use_bias: bool = True,
        generator: Generator | None = None,
        input_shape: Sequence[int] | None = None,
        kernel_regularizer: str | Callable | None = None,
        bias_regularizer: str | Callable | None = None,
    ) -> None:
        self.units = int(units)
        self.activation = activation_fn(activation)
        self.use_bias = use_bias
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self._generator = generator
        if input_shape is None and input_dim is not None:
            input_shape = (int(input_dim),)
        self._build_if_known(input_shape)

    def build(self, input_shape: tuple[int, ...]) -> None:
        self.kernel = init.glorot_uniform((input_shape[-1], self.units), self._generator)
        if self.use_bias:
            self.bias = init.zeros_parameter((self.units,))

    def forward(self, x: Tensor) -> Tensor:
        if x.shape[-1] != self.kernel.shape[0]:
            raise user_error(
                ShapeError,
                f"Dense: input of shape {x.shape} has {x.shape[-1]} features but the layer expects "
                f"{self.kernel.shape[0]}",
            )
        y = x @ self.kernel
        if self.use_bias:
            y = y + self.bias
        return self.activation(y)


class Linear(Dense):
    """PyTorch's spelling: ``Linear(in_features, out_features)``."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, generator: Generator | None = None):
        super().__init__(out_features, input_dim=in_features, use_bias=bias, generator=generator)


class Conv2D(Layer):
    """2-D convolution over NHWC inputs with an HWIO kernel, as ``keras.layers.Conv2D``."""

    def __init__(
        self,
        filters: int,
        kernel_size: int | Sequence[int],
        strides: int | Sequence[int] = 1,
        padding: str = "valid",
        activation: str | Callable | None = None,
        dilation_rate: int | Sequence[int] = 1,
        use_bias: bool = True,
        input_shape: Sequence[int] | None = None,
        generator: Generator | None = None,
        kernel_regularizer: str | Callable | None = None,
        bias_regularizer: str | Callable | None = None,
    ) -> None:
        self.filters = int(filters)
        self.kernel_size = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
        self.strides, self.padding, self.dilation_rate = strides, padding, dilation_rate
        self.activation = activation_fn(activation)
        self.use_bias = use_bias
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self._generator = generator
        self._build_if_known(input_shape)

    def build(self, input_shape: tuple[int, ...]) -> None:
        if len(input_shape) != 3:
            raise user_error(ShapeError, f"Conv2D: expected NHWC inputs, got per-example shape {input_shape}")
        self.kernel = init.glorot_uniform((*self.kernel_size, input_shape[-1], self.filters), self._generator)
        if self.use_bias:
            self.bias = init.zeros_parameter((self.filters,))

    def forward(self, x: Tensor) -> Tensor:
        y = ops.conv2d(x, self.kernel, stride=self.strides, padding=self.padding, dilation=self.dilation_rate)
        if self.use_bias:
            y = y + self.bias
        return self.activation(y)


class MaxPooling2D(Layer):
    """Max pooling over ``pool_size`` windows of NHWC images (``strides`` defaults to
    ``pool_size``; padding ``"valid"`` or ``"same"``)."""

    def __init__(self, pool_size: int | Sequence[int] = 2, strides: Any = None, padding: str = "valid") -> None:
        self.pool_size, self.strides, self.padding = pool_size, strides, padding

    def forward(self, x: Tensor) -> Tensor:
        return ops.max_pool2d(x, self.pool_size, self.strides, self.padding)


class AveragePooling2D(MaxPooling2D):
    """Average pooling over ``pool_size`` windows of NHWC images, as ``MaxPooling2D``'s arguments."""

    def forward(self, x: Tensor) -> Tensor:
        return ops.avg_pool2d(x, self.pool_size, self.strides, self.padding)


# Keras has both spellings of each pooling layer; the long ones name them in summaries.
MaxPool2D = MaxPooling2D
"""Keras's short name of ``MaxPooling2D``."""
AvgPool2D = AveragePooling2D
"""Keras's short name of ``AveragePooling2D``."""


class Flatten(Layer):
    """Flatten everything but the batch dimension."""

    def forward(self, x: Tensor) -> Tensor:
        return ops.flatten(x, 1)


class Dropout(Layer):
    """Zero a fraction ``rate`` of the inputs while training, scaling the rest by 1/(1-rate)."""

    def __init__(self, rate: float, seed: int | None = None) -> None:
        if not 0 <= rate < 1:
            raise ValueError(f"Dropout: rate must be in [0, 1), got {rate}")
        self.rate = rate
        self._generator = Generator(seed) if seed is not None else None

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.rate == 0:
            return x
        keep = ops.rand(x.shape, x.dtype, generator=self._generator, device=x.device) >= self.rate
        return ops.where(keep, x / (1 - self.rate), 0.0)


class Activation(Layer):
    """Apply an activation, given by name (``"relu"``, ``"sigmoid"``, ``"tanh"``, ``"softmax"``...) or as a function."""

    def __init__(self, activation: str | Callable) -> None:
        self._fn = activation_fn(activation)

    def forward(self, x: Tensor) -> Tensor:
        return self._fn(x)


def ReLU() -> Activation:  # noqa: N802 - layer constructors are capitalised, as in Keras
    """The ``relu`` activation as a layer."""
    return Activation("relu")


def Sigmoid() -> Activation:  # noqa: N802
    """The ``sigmoid`` activation as a layer."""
    return Activation("sigmoid")


def Tanh() -> Activation:  # noqa: N802
    """The ``tanh`` activation as a layer."""
    return Activation("tanh")


def Softmax() -> Activation:  # noqa: N802
    """The ``softmax`` activation (over the last axis) as a layer."""
    return Activation("softmax")


class Sequential(Layer):
    """Layers applied in order; built at once when the first layer knows its input shape."""

    def __init__(self, *layers: Module, input_shape: Sequence[int] | None = None) -> None:
        self.layers = list(layers[0]) if len(layers) == 1 and isinstance(layers[0], (list, tuple)) else list(layers)
        shape = input_shape or (getattr(self.layers[0], "input_shape", None) if self.layers else None)
        if shape is not None:
            self.input_shape = tuple(shape)
            self._build_all(self.input_shape)

    def add(self, layer: Module) -> None:
        """Append ``layer``, built at once when the model's input shape is known (as in Keras),
        so that ``compile`` gives the optimizer every parameter."""
        self.layers.append(layer)
        if self.input_shape is None and len(self.layers) == 1 and getattr(layer, "input_shape", None) is not None:
            self.input_shape = tuple(layer.input_shape)
            self._build_all(self.input_shape)
        elif self.input_shape is not None:
            self._output_shape = self._shape_after(layer, self._output_shape)

    def _build_all(self, input_shape: tuple[int, ...]) -> None:
        self._output_shape = self._shape_after(self, input_shape)

    @staticmethod
    def _shape_after(layer: Module, input_shape: tuple[int, ...]) -> tuple[int, ...]:
        """Build ``layer`` (and what it holds) on one example of zeros; its output shape."""
        from braze.autodiff import no_grad

        with no_grad():
            return tuple(layer(ops.zeros((1, *input_shape))).shape[1:])

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layers:
            x = layer(x)
        return x
