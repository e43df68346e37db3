"""Keras's recurrent layers, ``keras.layers.SimpleRNN``, ``LSTM`` and ``GRU``, with Keras's
arguments, gate order and weight layout (``kernel``, ``recurrent_kernel``, ``bias``), on
the loops of ``recurrent.py``: inputs (batch, steps, features); the last output, or every
step's (``return_sequences``), and the final states after it (``return_state``)."""

from __future__ import annotations

from typing import Any

from braze import ops
from braze.ir.errors import ShapeError
from braze.nn import activations, initializers, masks
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


class Sequences(Layer):
    """What the recurrent layers share (``RNN`` of any cell too): the steps of (batch, steps,
    features) inputs taken time-major, reversed with ``go_backwards``, and Keras's masks: a
    mask (from ``Embedding(mask_zero=True)``, ``Masking`` or ``mask=``) skips steps as
    Keras's loops do, a masked step keeping the state and repeating the last output (zeros
    with ``zero_output_for_mask``)."""

    states = 1
    supports_masking = True
    return_sequences = return_state = go_backwards = zero_output_for_mask = False

    def _time_major(self, x: Tensor) -> Tensor:
        seq = ops.transpose(x, (1, 0, *range(2, x.ndim)))
        return ops.flip(seq, 0) if self.go_backwards else seq

    def _steps_mask(self, mask: Tensor | None, x: Tensor) -> Tensor | None:
        """A (batch, steps) mask as the loops take it: time-major, in the steps' order."""
        if mask is None:
            return None
        mask = masks.as_bool(mask, x)
        if tuple(mask.shape) != tuple(x.shape[:2]):
            raise user_error(ShapeError, f"{self.name}: a mask of shape {mask.shape} for inputs of shape {x.shape}")
        steps = ops.transpose(mask, (1, 0))
        return ops.flip(steps, 0) if self.go_backwards else steps

    def _loop_options(self, mask: Tensor | None, x: Tensor) -> dict[str, Any]:
        return {"mask": self._steps_mask(mask, x), "zero_output": self.zero_output_for_mask}

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The input's mask on every step's output (``return_sequences``), else none; no
        mask on the states."""
        output_mask = mask if self.return_sequences else None
        return [output_mask] + [None] * self.states if self.return_state else output_mask


class _KerasRecurrent(Sequences):
    """What SimpleRNN, LSTM and GRU share: ``kernel`` (features, gates * units), ``recurrent_kernel``
    (units, gates * units), ``bias``, Keras's arguments, the inputs and the results."""

    gates = 1
    input_rank = 3  # (batch, steps, features); a cell's inputs are one step, (batch, features)

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
        self.zero_output_for_mask = bool(kwargs.pop("zero_output_for_mask", False))
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
        if len(input_shape) != self.input_rank or input_shape[-1] is None:
            shape = "(batch, steps, features)" if self.input_rank == 3 else "(batch, features)"
            raise user_error(ShapeError, f"{self.name}: inputs are {shape} with known features, got {input_shape}")
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
        return self._time_major(x)

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
        # The last step's output, Keras's: the final hidden state, or zeros where the last
        # step is masked under zero_output_for_mask.
        output = ops.transpose(hs, (1, 0, 2)) if self.return_sequences else hs[-1]
        return [output, *states] if self.return_state else output


def forget_gate_ones(units: int, initializer: Any) -> Any:
    """An LSTM bias initializer (gates input, forget, cell, output) whose forget gate
    starts at one, the others as ``initializer`` makes them (``unit_forget_bias``)."""
    base = initializers.get(initializer)

    def forget_ones(shape: Any, dtype: Any = None) -> Tensor:
        values = base((units,), dtype)
        return ops.concatenate(
            [values, ops.ones((units,), dtype=values.dtype, device=values.device), base((2 * units,), dtype)]
        )

    return forget_ones


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

    def call(self, x: Tensor, initial_state: Any = None, mask: Tensor | None = None) -> Any:
        seq = self._sequence(x)
        (h,) = self._initial(initial_state, x, 1)
        projected = seq @ self.kernel + self.bias if self.use_bias else seq @ self.kernel
        hs, h = rnn(projected, h, self.recurrent_kernel, self.activation, **self._loop_options(mask, x))
        return self._results(hs, [h])


class LSTM(_KerasRecurrent):
    """``keras.layers.LSTM(units)``: gates in Keras's order (input, forget, cell, output);
    ``unit_forget_bias`` starts the forget gate's bias at one."""

    gates = 4
    states = 2

    def _options(self, kwargs: dict) -> None:
        self.unit_forget_bias = bool(kwargs.pop("unit_forget_bias", True))

    def _bias_initial(self) -> Any:
        return forget_gate_ones(self.units, self.bias_initializer) if self.unit_forget_bias else self.bias_initializer

    def call(self, x: Tensor, initial_state: Any = None, mask: Tensor | None = None) -> Any:
        seq = self._sequence(x)
        h, c = self._initial(initial_state, x, 2)
        projected = seq @ self.kernel + self.bias if self.use_bias else seq @ self.kernel
        hs, h, c = lstm(
            projected,
            h,
            c,
            self.recurrent_kernel,
            self.activation,
            self.recurrent_activation,
            **self._loop_options(mask, x),
        )
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

    def call(self, x: Tensor, initial_state: Any = None, mask: Tensor | None = None) -> Any:
        seq = self._sequence(x)
        (h,) = self._initial(initial_state, x, 1)
        projected = seq @ self.kernel + self.bias[0] if self.use_bias else seq @ self.kernel
        recurrent_bias = self.bias[1] if self.use_bias else None
        hs, h = gru(
            projected,
            h,
            self.recurrent_kernel,
            recurrent_bias,
            False,
            self.activation,
            self.recurrent_activation,
            **self._loop_options(mask, x),
        )
        return self._results(hs, [h])


_MERGES: dict[str, Any] = {
    "concat": lambda f, b: ops.concatenate([f, b], -1),
    "sum": lambda f, b: f + b,
    "mul": lambda f, b: f * b,
    "ave": lambda f, b: (f + b) * 0.5,
}


class Bidirectional(Layer):
    """``keras.layers.Bidirectional(layer, merge_mode="concat")``: copies of ``layer`` (a
    SimpleRNN, LSTM, GRU or RNN; new weights, as Keras makes them), ``forward_layer`` over
    the steps and ``backward_layer`` over the reversed steps, their outputs merged
    (``concat``, ``sum``, ``mul``, ``ave``, or None for the pair); a backward sequence is
    reversed back so that step t of both sides meets. Both sides take the input's mask;
    with ``return_sequences`` their masked steps output zeros."""

    supports_masking = True

    def __init__(
        self, layer: Sequences, merge_mode: str | None = "concat", backward_layer: Any = None, **kwargs: Any
    ) -> None:
        if not isinstance(layer, Sequences):
            raise TypeError(f"Bidirectional: wraps a SimpleRNN, LSTM, GRU or RNN, got {type(layer).__name__}")
        if merge_mode is not None and merge_mode not in _MERGES:
            raise ValueError(f"Bidirectional: merge_mode must be one of {sorted(_MERGES)} or None, got {merge_mode!r}")
        if kwargs.pop("weights", None) is not None:
            raise NotImplementedError("Bidirectional: weights= is not supported; set_weights after building")
        super().__init__(**kwargs)
        self.merge_mode = merge_mode
        name = layer.name.removeprefix("forward_")
        self.forward_layer = type(layer).from_config({**layer.get_config(), "name": f"forward_{name}"})
        if backward_layer is None:
            config = {**layer.get_config(), "go_backwards": not layer.go_backwards, "name": f"backward_{name}"}
            backward_layer = type(layer).from_config(config)
        elif not isinstance(backward_layer, Sequences) or backward_layer.go_backwards == layer.go_backwards:
            raise ValueError("Bidirectional: backward_layer must be a recurrent layer going the other way")
        self.backward_layer = backward_layer
        if layer.return_sequences:  # Keras's rule: the two sides' masked steps meet as zeros
            self.forward_layer.zero_output_for_mask = backward_layer.zero_output_for_mask = True
        self._build_if_known()

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Bidirectional:
        """A new wrapper around copies (new weights) of the layers the config holds."""
        fresh = {
            key: type(value).from_config(value.get_config()) if isinstance(value, Layer) else value
            for key, value in config.items()
        }
        return cls(**fresh)

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        self.forward_layer._ensure_built(input_shape)
        self.backward_layer._ensure_built(input_shape)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The forward layer's rule (the two layers' outputs are masked alike)."""
        output_mask = self.forward_layer.compute_mask(inputs, mask)
        if not self.forward_layer.return_state:
            return [output_mask, output_mask] if self.merge_mode is None else output_mask
        first = output_mask[0]
        states = output_mask[1:] * 2
        return [first, first, *states] if self.merge_mode is None else [first, *states]

    def call(self, x: Tensor, initial_state: Any = None, mask: Tensor | None = None) -> Any:
        half = None if initial_state is None else len(initial_state) // 2
        forward = self.forward_layer(x, initial_state=None if half is None else initial_state[:half], mask=mask)
        backward = self.backward_layer(x, initial_state=None if half is None else initial_state[half:], mask=mask)
        states: list[Tensor] = []
        if self.forward_layer.return_state:
            states = [*forward[1:], *backward[1:]]
            forward, backward = forward[0], backward[0]
        if self.forward_layer.return_sequences:
            backward = ops.flip(backward, 1)
        merged = [forward, backward] if self.merge_mode is None else _MERGES[self.merge_mode](forward, backward)
        if not states:
            return merged
        return [*merged, *states] if self.merge_mode is None else [merged, *states]
