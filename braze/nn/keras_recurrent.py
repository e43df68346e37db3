"""Keras's recurrent layers, ``keras.layers.SimpleRNN``, ``LSTM`` and ``GRU``, with Keras's
arguments, gate order and weight layout (``kernel``, ``recurrent_kernel``, ``bias``), on
the loops of ``recurrent.py``: inputs (batch, steps, features); the last output, or every
step's (``return_sequences``), and the final states after it (``return_state``)."""

from __future__ import annotations

from typing import Any

from braze import ops
from braze.ir.errors import ShapeError
from braze.nn import activations, initializers
from braze.nn.layer import Layer
from braze.nn.recurrent import gru, lstm, rnn
from braze.ops.random import Generator
from braze.tensor import Tensor, user_error

__all__ = ["GRU", "LSTM", "SimpleRNN"]

# Keras's arguments these layers refuse when given (each raises, naming itself).
_UNSUPPORTED = (
    "kernel_regularizer",
    "recurrent_regularizer",
    "bias_regularizer",
    "kernel_constraint",
    "recurrent_constraint",
    "bias_constraint",
    "time_major",
)


class _KerasRecurrent(Layer):
    """What SimpleRNN, LSTM and GRU share: ``kernel`` (features, gates * units), ``recurrent_kernel``
    (units, gates * units), ``bias``, Keras's arguments, the inputs and the results."""

    gates = 1

    def __init__(
        self,
        units: int,
        activation: Any = "tanh",
        recurrent_activation: Any = "sigmoid",
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        recurrent_initializer: Any = "orthogonal",
        bias_initializer: Any = "zeros",
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        *,
        generator: Generator | None = None,
        **kwargs: Any,
    ) -> None:
        name = type(self).__name__
        for option, off in (("dropout", 0.0), ("recurrent_dropout", 0.0), ("stateful", False), ("unroll", False)):
            value = kwargs.pop(option, off)
            if value != off:
                raise NotImplementedError(f"{name}: {option}={value!r} is not supported")
        for option in _UNSUPPORTED:
            if kwargs.pop(option, None):
                raise NotImplementedError(f"{name}: {option} is not supported")
        self._options(kwargs)
        super().__init__(**kwargs)
        self.units = int(units)
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = kernel_initializer
        self.recurrent_initializer = recurrent_initializer
        self.bias_initializer = bias_initializer
        self.return_sequences, self.return_state, self.go_backwards = return_sequences, return_state, go_backwards
        self._generator = generator
        self._build_if_known()

    def _options(self, kwargs: dict) -> None:
        """Take the arguments of one layer kind out of ``kwargs``."""

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        if len(input_shape) != 3 or input_shape[-1] is None:
            raise user_error(
                ShapeError, f"{self.name}: inputs are (batch, steps, features) with known features, got {input_shape}"
            )
        width = self.gates * self.units
        self.kernel = self.add_weight(shape=(input_shape[-1], width), initializer=self.kernel_initializer)
        self.recurrent_kernel = self.add_weight(shape=(self.units, width), initializer=self.recurrent_initializer)
        if self.use_bias:
            self.bias = self.add_weight(shape=self._bias_shape(), initializer=self._bias_initial())

    def _bias_shape(self) -> tuple[int, ...]:
        return (self.gates * self.units,)

    def _bias_initial(self) -> Any:
        return self.bias_initializer

    def _sequence(self, x: Tensor) -> Tensor:
        if x.ndim != 3 or x.shape[-1] != self.kernel.shape[0]:
            raise user_error(
                ShapeError, f"{self.name}: inputs of shape {x.shape}, expected (batch, steps, {self.kernel.shape[0]})"
            )
        seq = ops.transpose(x, (1, 0, 2))
        return ops.flip(seq, 0) if self.go_backwards else seq

    def _initial(self, initial_state: Any, x: Tensor, count: int) -> list[Tensor]:
        if initial_state is None:
            return [ops.zeros((x.shape[0], self.units), x.dtype, x.device)] * count
        states = list(initial_state) if isinstance(initial_state, (list, tuple)) else [initial_state]
        if len(states) != count or any(tuple(s.shape) != (x.shape[0], self.units) for s in states):
            raise user_error(
                ShapeError, f"{self.name}: initial_state must be {count} tensors of shape {(x.shape[0], self.units)}"
            )
        return states

    def _results(self, hs: Tensor, states: list[Tensor]) -> Any:
        output = ops.transpose(hs, (1, 0, 2)) if self.return_sequences else states[0]
        return [output, *states] if self.return_state else output


class SimpleRNN(_KerasRecurrent):
    """``keras.layers.SimpleRNN(units)``: ``h = activation(x kernel + h recurrent_kernel +
    bias)``, a recurrent layer without gates (so without ``recurrent_activation``)."""

    def __init__(
        self,
        units: int,
        activation: Any = "tanh",
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        recurrent_initializer: Any = "orthogonal",
        bias_initializer: Any = "zeros",
        **kwargs: Any,
    ) -> None:
        if "recurrent_activation" in kwargs:
            raise TypeError("SimpleRNN: unexpected argument 'recurrent_activation' (a simple RNN has no gates)")
        super().__init__(
            units,
            activation,
            "linear",
            use_bias,
            kernel_initializer,
            recurrent_initializer,
            bias_initializer,
            **kwargs,
        )

    def call(self, x: Tensor, initial_state: Any = None) -> Any:
        seq = self._sequence(x)
        (h,) = self._initial(initial_state, x, 1)
        projected = seq @ self.kernel + self.bias if self.use_bias else seq @ self.kernel
        hs, h = rnn(projected, h, self.recurrent_kernel, self.activation)
        return self._results(hs, [h])


class LSTM(_KerasRecurrent):
    """``keras.layers.LSTM(units)``: gates in Keras's order (input, forget, cell, output);
    ``unit_forget_bias`` starts the forget gate's bias at one."""

    gates = 4

    def _options(self, kwargs: dict) -> None:
        self.unit_forget_bias = bool(kwargs.pop("unit_forget_bias", True))

    def _bias_initial(self) -> Any:
        if not self.unit_forget_bias:
            return self.bias_initializer
        units, base = self.units, initializers.get(self.bias_initializer)

        def forget_ones(shape: Any, dtype: Any = None) -> Tensor:
            values = base((units,), dtype)
            return ops.concatenate(
                [values, ops.ones((units,), dtype=values.dtype, device=values.device), base((2 * units,), dtype)]
            )

        return forget_ones

    def call(self, x: Tensor, initial_state: Any = None) -> Any:
        seq = self._sequence(x)
        h, c = self._initial(initial_state, x, 2)
        projected = seq @ self.kernel + self.bias if self.use_bias else seq @ self.kernel
        hs, h, c = lstm(projected, h, c, self.recurrent_kernel, self.activation, self.recurrent_activation)
        return self._results(hs, [h, c])


class GRU(_KerasRecurrent):
    """``keras.layers.GRU(units)``: gates in Keras's order (update, reset, new), the reset
    gate applied after the recurrent product (``reset_after=True``, Keras's default); its
    ``bias`` (2, 3 * units) holds the input and the recurrent biases."""

    gates = 3

    def _options(self, kwargs: dict) -> None:
        if not kwargs.pop("reset_after", True):
            raise NotImplementedError("GRU: reset_after=False (the reset gate before the product) is not supported")

    def _bias_shape(self) -> tuple[int, ...]:
        return (2, self.gates * self.units)

    def call(self, x: Tensor, initial_state: Any = None) -> Any:
        seq = self._sequence(x)
        (h,) = self._initial(initial_state, x, 1)
        projected = seq @ self.kernel + self.bias[0] if self.use_bias else seq @ self.kernel
        recurrent_bias = self.bias[1] if self.use_bias else None
        hs, h = gru(
            projected, h, self.recurrent_kernel, recurrent_bias, False, self.activation, self.recurrent_activation
        )
        return self._results(hs, [h])
