"""``keras.layers.ConvLSTM2D``: an LSTM whose products are convolutions, over sequences of
NHWC images (batch, steps, height, width, channels), as in Shi et al., 2015. The input's
convolution (``strides``, ``padding``, ``dilation_rate``) runs once over every step,
folded into the batch; the loop adds the recurrent convolution of the hidden state
(stride 1, ``"same"``) at each step."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from braze import ops
from braze.ir.errors import ShapeError
from braze.nn import activations
from braze.nn.conv import channels_last, int_tuple
from braze.nn.keras_recurrent import Sequences, forget_gate_ones
from braze.nn.recurrent import masked_scan
from braze.tensor import Tensor, user_error

__all__ = ["ConvLSTM2D"]


class ConvLSTM2D(Sequences):
    """``ConvLSTM2D(filters, kernel_size)``: gates in Keras's order (input, forget, cell,
    output); ``kernel`` (height, width, channels, 4 * filters), ``recurrent_kernel``
    (height, width, filters, 4 * filters), ``bias`` (4 * filters, the forget gate's at one
    with ``unit_forget_bias``); the last output, every step's (``return_sequences``), the
    final ``h`` and ``c`` (``return_state``); masks and ``go_backwards`` as ``LSTM``'s."""

    states = 2

    def __init__(
        self,
        filters: int,
        kernel_size: int | Sequence[int],
        strides: int | Sequence[int] = 1,
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: int | Sequence[int] = 1,
        activation: Any = "tanh",
        recurrent_activation: Any = "sigmoid",
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        recurrent_initializer: Any = "orthogonal",
        bias_initializer: Any = "zeros",
        unit_forget_bias: bool = True,
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        **kwargs: Any,
    ) -> None:
        for option, off in (("dropout", 0.0), ("recurrent_dropout", 0.0), ("stateful", False)):
            if kwargs.pop(option, off) != off:
                raise NotImplementedError(f"ConvLSTM2D: {option} is not supported")
        for option in ("kernel_regularizer", "recurrent_regularizer", "bias_regularizer", "activity_regularizer"):
            if kwargs.pop(option, None) is not None:
                raise NotImplementedError(f"ConvLSTM2D: {option} is not supported")
        channels_last("ConvLSTM2D", data_format)
        super().__init__(**kwargs)
        self.filters, self.kernel_size = int(filters), int_tuple(kernel_size, 2)
        self.strides, self.dilation_rate = int_tuple(strides, 2), int_tuple(dilation_rate, 2)
        self.padding = padding.lower()
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer, self.recurrent_initializer = kernel_initializer, recurrent_initializer
        self.bias_initializer = (
            forget_gate_ones(self.filters, bias_initializer) if unit_forget_bias else bias_initializer
        )
        self.return_sequences, self.return_state, self.go_backwards = return_sequences, return_state, go_backwards
        self._build_if_known()

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        if len(input_shape) != 5 or input_shape[-1] is None:
            raise user_error(
                ShapeError, f"{self.name}: inputs are (batch, steps, height, width, channels), got {input_shape}"
            )
        width = 4 * self.filters
        self.kernel = self.add_weight(
            shape=(*self.kernel_size, input_shape[-1], width), initializer=self.kernel_initializer, name="kernel"
        )
        self.recurrent_kernel = self.add_weight(
            shape=(*self.kernel_size, self.filters, width),
            initializer=self.recurrent_initializer,
            name="recurrent_kernel",
        )
        if self.use_bias:
            self.bias = self.add_weight(shape=(width,), initializer=self.bias_initializer, name="bias")

    def call(self, x: Tensor, initial_state: Any = None, mask: Tensor | None = None) -> Any:
        if x.ndim != 5:
            raise user_error(
                ShapeError, f"{self.name}: inputs are (batch, steps, height, width, channels), got {x.shape}"
            )
        batch, steps = x.shape[:2]
        frames = x.reshape(batch * steps, *x.shape[2:])
        projected = ops.conv2d(
            frames, self.kernel, stride=self.strides, padding=self.padding, dilation=self.dilation_rate
        )
        if self.use_bias:
            projected = projected + self.bias
        projected = projected.reshape(batch, steps, *projected.shape[1:])
        state_shape = (batch, *projected.shape[2:4], self.filters)
        if initial_state is None:
            h = c = ops.zeros(state_shape, x.dtype, x.device)
        else:
            h, c = initial_state
            if tuple(h.shape) != state_shape or tuple(c.shape) != state_shape:
                raise user_error(ShapeError, f"{self.name}: initial_state must be two tensors of shape {state_shape}")
        act, gate = self.activation, self.recurrent_activation

        def step(carry: tuple[Tensor, Tensor], z: Tensor) -> tuple[tuple[Tensor, Tensor], Tensor]:
            h, c = carry
            i, f, g, o = ops.chunk(z + ops.conv2d(h, self.recurrent_kernel, padding="same"), 4, dim=-1)
            c = gate(f) * c + gate(i) * act(g)
            h = gate(o) * act(c)
            return (h, c), h

        (h, c), hs = masked_scan(step, (h, c), self._time_major(projected), **self._loop_options(mask, x))
        output = ops.transpose(hs, (1, 0, 2, 3, 4)) if self.return_sequences else hs[-1]
        return [output, h, c] if self.return_state else output
