"""Keras's ``RNN`` layer over a cell, the built-in cells (``SimpleRNNCell``, ``LSTMCell``,
``GRUCell``), ``StackedRNNCells``, and cells of your own: a layer with ``state_size`` (an
int or a list of them) whose ``call(inputs, states)`` takes one step's (batch, features)
and returns ``(output, new_states)``. The loop is ``braze.lax.scan``: a sequence of any
length compiles to the same kernels, with the masks of ``SimpleRNN``, ``LSTM`` and
``GRU``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from braze import ops
from braze.ir.errors import ShapeError
from braze.nn.keras_recurrent import GRU, LSTM, Sequences, SimpleRNN
from braze.nn.layer import Layer
from braze.nn.recurrent import gru_step, lstm_step, masked_scan, rnn_step
from braze.tensor import Tensor, user_error

__all__ = ["GRUCell", "LSTMCell", "RNN", "SimpleRNNCell", "StackedRNNCells"]

_LAYER_ONLY = ("return_sequences", "return_state", "go_backwards", "zero_output_for_mask")


class _Cell:
    """A built-in cell: its layer's weights and arguments, one step per call."""

    input_rank = 2

    def __init__(self, units: int, **kwargs: Any) -> None:
        for option in _LAYER_ONLY:
            if option in kwargs:
                raise TypeError(f"{type(self).__name__}: unexpected argument {option!r} (the RNN layer's)")
        super().__init__(units, **kwargs)

    @property
    def state_size(self) -> int | list[int]:
        return self.units if self.states == 1 else [self.units] * self.states

    @property
    def output_size(self) -> int:
        return self.units

    def _projected(self, inputs: Tensor) -> Tensor:
        x = inputs @ self.kernel
        if not self.use_bias:
            return x
        return x + (self.bias[0] if self.bias.ndim == 2 else self.bias)


class SimpleRNNCell(_Cell, SimpleRNN):
    """One step of ``SimpleRNN``: ``h = activation(x kernel + h recurrent_kernel + bias)``."""

    def call(self, inputs: Tensor, states: Any, training: bool | None = None) -> tuple[Tensor, list[Tensor]]:
        h = rnn_step(_first(states), self._projected(inputs), self.recurrent_kernel, self.activation)
        return h, [h]


class LSTMCell(_Cell, LSTM):
    """One step of ``LSTM``; its states are ``[h, c]``."""

    def call(self, inputs: Tensor, states: Any, training: bool | None = None) -> tuple[Tensor, list[Tensor]]:
        h, c = states
        h, c = lstm_step(
            h, c, self._projected(inputs), self.recurrent_kernel, self.activation, self.recurrent_activation
        )
        return h, [h, c]


class GRUCell(_Cell, GRU):
    """One step of ``GRU`` (Keras's default, the reset gate after the recurrent product)."""

    def call(self, inputs: Tensor, states: Any, training: bool | None = None) -> tuple[Tensor, list[Tensor]]:
        recurrent_bias = self.bias[1] if self.use_bias else None
        h = gru_step(
            _first(states),
            self._projected(inputs),
            self.recurrent_kernel,
            recurrent_bias,
            False,
            self.activation,
            self.recurrent_activation,
        )
        return h, [h]


def _copy(cell: Any) -> Any:
    """A cell (or a list of them) made again from its config: new weights."""
    if isinstance(cell, (list, tuple)):
        return [_copy(c) for c in cell]
    return type(cell).from_config(cell.get_config())


def _first(states: Any) -> Tensor:
    return states if isinstance(states, Tensor) else states[0]


def _sizes(cell: Any) -> list[int]:
    size = cell.state_size
    return [int(size)] if isinstance(size, int) else [int(s) for s in size]


def _output_size(cell: Any) -> int:
    return int(getattr(cell, "output_size", None) or _sizes(cell)[0])


class StackedRNNCells(Layer):
    """Cells one above the other as one cell: each step's output of one is the input of the
    next; the states are every cell's in order."""

    def __init__(self, cells: Sequence[Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cells = list(cells)
        if not self.cells:
            raise ValueError("StackedRNNCells: give at least one cell")

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> StackedRNNCells:
        return cls(**{**config, "cells": _copy(config["cells"])})

    @property
    def state_size(self) -> list[int]:
        return [size for cell in self.cells for size in _sizes(cell)]

    @property
    def output_size(self) -> int:
        return _output_size(self.cells[-1])

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        for cell in self.cells:
            if isinstance(cell, Layer):
                cell._ensure_built(input_shape)
            input_shape = (input_shape[0], _output_size(cell))

    def call(self, inputs: Tensor, states: Any, training: bool | None = None) -> tuple[Tensor, list[Tensor]]:
        states, new, x = list(states), [], inputs
        for cell in self.cells:
            count = len(_sizes(cell))
            mine, states = states[:count], states[count:]
            x, updated = cell(x, mine)  # a list, whatever the count: cells index their states
            new.extend(updated if isinstance(updated, (list, tuple)) else [updated])
        return x, new


class RNN(Sequences):
    """``keras.layers.RNN(cell)``: ``cell`` (or a list of cells, stacked) over the steps of
    (batch, steps, features) inputs; the last output, or every step's
    (``return_sequences``), and the final states (``return_state``); ``go_backwards``,
    ``initial_state``, masks and ``zero_output_for_mask`` as ``LSTM``'s."""

    def __init__(
        self,
        cell: Any,
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        unroll: bool = False,
        zero_output_for_mask: bool = False,
        **kwargs: Any,
    ) -> None:
        if stateful or unroll:
            raise NotImplementedError("RNN: stateful=True and unroll=True are not supported")
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        if not hasattr(cell, "state_size") or not callable(cell):
            raise TypeError("RNN: a cell is a layer with state_size and call(inputs, states)")
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences, self.return_state, self.go_backwards = return_sequences, return_state, go_backwards
        self.zero_output_for_mask = zero_output_for_mask
        self._build_if_known()

    @property
    def states(self) -> int:
        return len(_sizes(self.cell))

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> RNN:
        """A new layer around a copy (new weights) of the cell the config holds."""
        return cls(**{**config, "cell": _copy(config["cell"])})

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        if len(input_shape) != 3:
            raise user_error(ShapeError, f"{self.name}: inputs are (batch, steps, features), got {input_shape}")
        if isinstance(self.cell, Layer):
            self.cell._ensure_built((input_shape[0], input_shape[2]))

    def _initial(self, initial_state: Any, x: Tensor) -> list[Tensor]:
        sizes = _sizes(self.cell)
        if initial_state is None:
            return [ops.zeros((x.shape[0], size), x.dtype, x.device) for size in sizes]
        states = list(initial_state) if isinstance(initial_state, (list, tuple)) else [initial_state]
        if [tuple(s.shape) for s in states] != [(x.shape[0], size) for size in sizes]:
            raise user_error(ShapeError, f"{self.name}: initial_state must be tensors of (batch, size) for {sizes}")
        return states

    def call(self, x: Tensor, initial_state: Any = None, mask: Tensor | None = None) -> Any:
        if x.ndim != 3:
            raise user_error(ShapeError, f"{self.name}: inputs are (batch, steps, features), got {x.shape}")
        states = self._initial(initial_state, x)
        single = len(states) == 1

        def step(carry: Any, x_t: Tensor) -> tuple[Any, Tensor]:
            output, new = self.cell(x_t, [carry] if single else list(carry))
            new = list(new) if isinstance(new, (list, tuple)) else [new]
            return (new[0] if single else tuple(new)), output

        start = states[0] if single else tuple(states)
        first = ops.zeros((x.shape[0], _output_size(self.cell)), x.dtype, x.device)  # repeated before a kept step
        carry, outputs = masked_scan(
            step, start, self._time_major(x), **self._loop_options(mask, x), first_output=first
        )
        final = [carry] if single else list(carry)
        output = ops.transpose(outputs, (1, 0, 2)) if self.return_sequences else outputs[-1]
        return [output, *final] if self.return_state else output
