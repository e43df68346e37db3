"""Core layers with Keras's signatures and defaults (Glorot-uniform kernels, zero biases):
Dense, Flatten, Reshape, Dropout, the activation layers, Rescaling and Lambda.

Every layer takes Keras's common arguments (``name``, ``trainable``, ``dtype``,
``input_shape``); one whose input size is given is built at once, else on its first call.
``generator=`` (braze's) makes a layer's random initial weights or dropout masks
reproducible.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from braze import ops
from braze.autodiff import no_grad
from braze.ir.errors import ShapeError
from braze.nn import activations, keras_random, masks, regularizers
from braze.nn.layer import Layer, new_generator
from braze.ops.random import Generator
from braze.tensor import Tensor, user_error

__all__ = [
    "Activation",
    "Dense",
    "Dropout",
    "ELU",
    "Flatten",
    "Lambda",
    "LeakyReLU",
    "Linear",
    "ReLU",
    "Rescaling",
    "Reshape",
    "Sigmoid",
    "Softmax",
    "Tanh",
]

_CONSTRAINTS = (
    "kernel_constraint",
    "bias_constraint",
    "beta_constraint",
    "gamma_constraint",
    "depthwise_constraint",
    "pointwise_constraint",
)


def reject_constraints(layer: str, kwargs: dict) -> None:
    """Weight constraints are not supported: an error naming them, not a silent skip."""
    given = [name for name in _CONSTRAINTS if kwargs.pop(name, None) is not None]
    if given:
        raise NotImplementedError(f"{layer}: weight constraints ({', '.join(given)}) are not supported")


class KernelAndBias(Layer):
    """What Dense and the convolutions share: an activation, a kernel and an optional bias
    with Keras's initializer and regularizer arguments."""

    def _weights_options(
        self,
        activation: Any,
        use_bias: bool,
        kernel_initializer: Any,
        bias_initializer: Any,
        kernel_regularizer: Any,
        bias_regularizer: Any,
        generator: Generator | None,
    ) -> None:
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self._generator = generator

    def _add_kernel_and_bias(self, kernel_shape: tuple[int, ...]) -> None:
        self.kernel = self.add_weight(
            shape=kernel_shape, initializer=self.kernel_initializer, regularizer=self.kernel_regularizer
        )
        if self.use_bias:
            self.bias = self.add_weight(
                shape=(kernel_shape[-1],), initializer=self.bias_initializer, regularizer=self.bias_regularizer
            )

    def _finish(self, y: Tensor) -> Tensor:
        if self.use_bias:
            y = y + self.bias
        return self.activation(y)


class Dense(KernelAndBias):
    """``activation(x @ kernel + bias)`` over the last axis; ``input_dim`` builds it at once."""

    supports_masking = True  # computes each step on its own: a mask passes through

    def __init__(
        self,
        units: int,
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
        reject_constraints("Dense", kwargs)
        super().__init__(**kwargs)
        self.units = int(units)
        self._weights_options(
            activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer, generator
        )
        self._build_if_known()

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        if input_shape[-1] is None:
            raise user_error(ShapeError, f"{self.name}: the last dimension of its inputs must be known")
        self._add_kernel_and_bias((input_shape[-1], self.units))

    def call(self, x: Tensor) -> Tensor:
        if x.shape[-1] != self.kernel.shape[0]:
            raise user_error(
                ShapeError,
                f"Dense: input of shape {x.shape} has {x.shape[-1]} features but the layer expects "
                f"{self.kernel.shape[0]}",
            )
        return self._finish(x @ self.kernel)


class Linear(Dense):
    """PyTorch's spelling: ``Linear(in_features, out_features)``. It holds Keras's
    ``kernel`` of shape (in, out); ``weight`` is PyTorch's view of it, (out, in)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, generator: Generator | None = None):
        super().__init__(out_features, input_dim=in_features, use_bias=bias, generator=generator)

    @property
    def weight(self) -> Tensor:
        """The kernel transposed, (out_features, in_features), as PyTorch's ``weight``:
        gradients flow to the kernel, and an in-place update of it, outside a gradient
        computation (``nn.init.xavier_uniform_(m.weight)``, ``m.weight.data.normal_()``),
        is written into the kernel (PyTorch's fans, from its shape, are the right ones)."""
        return _TransposedKernel.of(self.kernel)


class _TransposedKernel(Tensor):
    """A Linear's ``weight``: its kernel transposed, handing every in-place update (its own,
    or its ``.data``'s) back to the kernel, transposed again."""

    __slots__ = ("_kernel",)

    @classmethod
    def of(cls, kernel: Tensor) -> _TransposedKernel:
        seen = ops.transpose(kernel)
        alias = cls._make(seen._value, seen._aval, seen.device)
        alias.requires_grad, alias._grad_node, alias._tangents = seen.requires_grad, seen._grad_node, seen._tangents
        alias._kernel = kernel
        return alias

    def _assign(self, other: Tensor) -> Tensor:
        super()._assign(other)
        self._write_kernel()
        return self

    def _take_value(self, source: Tensor) -> None:
        super()._take_value(source)
        self._write_kernel()

    def _write_kernel(self) -> None:
        with no_grad():
            self._kernel._take_value(ops.transpose(self.detach()))


class Flatten(Layer):
    """Flatten everything but the batch dimension (Keras's ``Flatten``), or the axes
    ``start_dim`` to ``end_dim`` (PyTorch's ``nn.Flatten(start_dim=1, end_dim=-1)``; an int
    first argument is PyTorch's). Elements keep their row-major order, so after an NCHW
    convolution each example's C, H and W come in that order, as PyTorch flattens them."""

    def __init__(
        self, start_dim: int | str | None = 1, end_dim: int = -1, data_format: str | None = None, **kwargs: Any
    ) -> None:
        if not isinstance(start_dim, (int, np.integer)):  # Keras's first argument, data_format
            start_dim, data_format = 1, start_dim
        if data_format not in (None, "channels_last"):
            raise NotImplementedError(f"Flatten: data_format={data_format!r}: braze is channels_last (NHWC)")
        super().__init__(**kwargs)
        self.start_dim, self.end_dim = int(start_dim), int(end_dim)

    def call(self, x: Tensor) -> Tensor:
        return ops.flatten(x, self.start_dim, self.end_dim)


class Reshape(Layer):
    """Reshape every example to ``target_shape`` (one entry may be -1)."""

    def __init__(self, target_shape: Sequence[int], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)

    def call(self, x: Tensor) -> Tensor:
        return ops.reshape(x, (x.shape[0], *self.target_shape))


class Dropout(Layer):
    """Zero a fraction ``rate`` of the inputs while training, scaling the rest by 1/(1-rate)
    (Keras's ``Dropout(rate)``; PyTorch's ``nn.Dropout(p=0.5, inplace=False)``: ``p``, and
    0.5 when neither is given, a rate of 1 zeroing every element)."""

    supports_masking = True

    def __init__(
        self,
        rate: float | None = None,
        noise_shape: Any = None,
        seed: int | None = None,
        *,
        p: float | None = None,
        inplace: bool = False,
        generator: Generator | None = None,
        **kwargs: Any,
    ) -> None:
        if rate is not None and p is not None:
            raise TypeError("Dropout: give rate (Keras's name) or p (PyTorch's), not both")
        rate = 0.5 if rate is None and p is None else rate if rate is not None else p
        if not 0 <= rate <= 1:
            raise ValueError(f"Dropout: rate must be in [0, 1], got {rate}")
        if noise_shape is not None:
            raise NotImplementedError("Dropout: noise_shape is not supported; every element is dropped on its own")
        check_inplace("Dropout", inplace)
        super().__init__(**kwargs)
        self.rate = rate
        self._generator = new_generator(seed, generator)

    @property
    def p(self) -> float:
        """The rate, by PyTorch's name."""
        return self.rate

    def call(self, x: Tensor, training: bool = False) -> Tensor:
        if not training or self.rate == 0:
            return x
        if self.rate == 1:  # every element dropped (the scale would divide by zero)
            return x * 0.0
        return keras_random.dropout(x, self.rate, seed=self._generator)


class Activation(Layer):
    """An activation as a layer, by Keras's name (``"relu"``, ``"gelu"``...) or a function."""

    supports_masking = True

    def __init__(self, activation: str | Callable, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.activation = activation
        self._fn = activations.get(activation)

    def call(self, x: Tensor) -> Tensor:
        return self._fn(x)


def check_inplace(layer: str, inplace: Any) -> None:
    """PyTorch's ``inplace`` flag, accepted: braze's layers return a new tensor whatever it
    says, the value PyTorch's in-place layer returns too (only the input is not overwritten)."""
    if not isinstance(inplace, bool):
        raise TypeError(f"{layer}: inplace must be a bool (PyTorch's flag), got {inplace!r}")


class ReLU(Layer):
    """``max(x, 0)``, capped at ``max_value`` if given, with ``negative_slope`` below
    ``threshold`` (Keras's ``ReLU`` layer); also PyTorch's ``nn.ReLU(inplace=False)``: a bool
    first argument is PyTorch's ``inplace`` (``nn.ReLU(True)``, a plain ReLU), never a cap."""

    supports_masking = True

    def __init__(
        self, max_value: float | None = None, negative_slope: float = 0.0, threshold: float = 0.0, **kwargs: Any
    ) -> None:
        # Taken from kwargs, not the signature, so that Keras's config of the layer stays Keras's.
        inplace = kwargs.pop("inplace", False)
        if isinstance(max_value, bool):  # True is 1 to Python: as max_value it would cap every output at 1
            inplace, max_value = max_value, None
        check_inplace("ReLU", inplace)
        super().__init__(**kwargs)
        self.max_value, self.negative_slope, self.threshold = max_value, float(negative_slope), float(threshold)

    def call(self, x: Tensor) -> Tensor:
        if self.negative_slope == 0 and self.threshold == 0:
            y = ops.relu(x)
        else:
            y = ops.where(x >= self.threshold, x, self.negative_slope * (x - self.threshold))
        return y if self.max_value is None else ops.minimum(y, float(self.max_value))


class LeakyReLU(Layer):
    """``x`` where positive, else ``negative_slope * x``: PyTorch's ``nn.LeakyReLU(negative_slope=0.01,
    inplace=False)``, as ``braze.nn.LeakyReLU``. ``keras.layers.LeakyReLU`` is its Keras
    spelling (``keras_spellings.LeakyReLU``), whose slope is Keras's 0.3; both take Keras 2's
    ``alpha`` too."""

    supports_masking = True

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False, **kwargs: Any) -> None:
        alpha = kwargs.pop("alpha", None)  # Keras 2's name
        check_inplace("LeakyReLU", inplace)
        super().__init__(**kwargs)
        self.negative_slope = float(negative_slope if alpha is None else alpha)

    def call(self, x: Tensor) -> Tensor:
        return activations.leaky_relu(x, self.negative_slope)


class ELU(Layer):
    """``x`` where positive, else ``alpha * (exp(x) - 1)``."""

    supports_masking = True

    def __init__(self, alpha: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, x: Tensor) -> Tensor:
        return activations.elu(x, self.alpha)


class Softmax(Layer):
    """The softmax over ``axis`` (the last by default) as a layer; where ``mask`` (which
    broadcasts to the input) is False, the input is lowered by 1e9 first (Keras's)."""

    supports_masking = True

    def __init__(self, axis: int = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        if mask is not None:
            x = masks.lowered(x, masks.as_bool(mask, x))
        return ops.softmax(x, self.axis)


def Sigmoid() -> Activation:  # noqa: N802 - PyTorch's layer constructors are capitalised
    """The ``sigmoid`` activation as a layer."""
    return Activation("sigmoid")


def Tanh() -> Activation:  # noqa: N802
    """The ``tanh`` activation as a layer."""
    return Activation("tanh")


class Rescaling(Layer):
    """``x * scale + offset`` (Keras's preprocessing layer, e.g. ``Rescaling(1 / 255)``)."""

    def __init__(self, scale: float, offset: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scale, self.offset = float(scale), float(offset)

    def call(self, x: Tensor) -> Tensor:
        x = x if x.dtype.is_float else x.astype("float32")
        return x * self.scale + self.offset if self.offset else x * self.scale


class Lambda(Layer):
    """A layer computing ``function(inputs)``; it holds no weights of its own. ``mask``
    (a function of the inputs and their mask, or a mask) is its outputs' mask."""

    def __init__(
        self, function: Callable, output_shape: Any = None, arguments: dict | None = None, **kwargs: Any
    ) -> None:
        mask = kwargs.pop("mask", None)
        super().__init__(**kwargs)
        self.function, self.arguments = function, dict(arguments or {})
        self.mask = mask
        self.supports_masking = mask is not None

    def call(self, inputs: Any) -> Any:
        return self.function(inputs, **self.arguments)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The ``mask`` given: a function of ``(inputs, mask)``, or a mask."""
        return self.mask(inputs, mask) if callable(self.mask) else self.mask
