"""Recurrent layers built on ``braze.lax.scan``: PyTorch's ``nn.RNN``, ``nn.LSTM`` and
``nn.GRU`` (and the loops Keras's ``SimpleRNN``, ``LSTM`` and ``GRU`` share,
``keras_recurrent.py``), with PyTorch's
arguments, gate order and weight layout (a PyTorch ``state_dict`` loads as it is).

The input's projection through the input weights is one matrix product over every time
step, outside the loop; the loop carries the state and adds the recurrent product at each
step. On a lazy device or under ``@braze.jit`` the loop is one node, so a sequence of any
length compiles to the same kernels.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from braze import lax, ops
from braze.ir.errors import ShapeError
from braze.nn import initializers
from braze.nn.module import Module
from braze.ops.random import Generator
from braze.tensor import Tensor, user_error

__all__ = ["GRU", "LSTM", "RNN", "gru", "lstm", "rnn"]

Activation = Callable[[Tensor], Tensor]


def masked_scan(
    step: Callable,
    carry: Any,
    projected: Tensor,
    mask: Tensor | None,
    zero_output: bool,
    first_output: Tensor | None = None,
) -> tuple[Any, Tensor]:
    """``lax.scan(step, carry, projected)``; with a time-major ``mask`` (steps, batch; Keras's),
    a masked step keeps each example's state and repeats its last output (``first_output``
    before the first kept step, zeros of the hidden state's shape by default; zeros always
    with ``zero_output``), as Keras's loops do."""
    if mask is None:
        return lax.scan(step, carry, projected)

    def masked(both: tuple[Any, Tensor], x_and_kept: tuple[Tensor, Tensor]) -> tuple[tuple[Any, Tensor], Tensor]:
        (state, last), (x, kept) = both, x_and_kept
        new, y = step(state, x)

        def keep(fresh: Tensor, old: Tensor) -> Tensor:  # per example, whatever the rank
            return ops.where(kept.reshape(kept.shape[0], *([1] * (fresh.ndim - 1))), fresh, old)

        y = keep(y, ops.zeros_like(y) if zero_output else last)
        if isinstance(new, Tensor):
            return (keep(new, state), y), y
        return (tuple(keep(n, o) for n, o in zip(new, state, strict=True)), y), y

    if first_output is None:
        first_output = ops.zeros_like(carry if isinstance(carry, Tensor) else carry[0])
    (carry, _), ys = lax.scan(masked, (carry, first_output), (projected, mask))
    return carry, ys


def rnn(
    projected: Tensor,
    h: Tensor,
    recurrent: Tensor,
    activation: Activation = ops.tanh,
    mask: Tensor | None = None,
    zero_output: bool = False,
) -> tuple[Tensor, Tensor]:
    """An Elman network over time-major ``projected`` inputs (steps, batch, units: the
    input's product with the input weights plus the biases), ``h = activation(x + h @
    recurrent)``: the hidden state of every step, and the last (``mask``, ``zero_output``:
    Keras's masked steps, as ``masked_scan``)."""

    def step(h: Tensor, x: Tensor) -> tuple[Tensor, Tensor]:
        h = rnn_step(h, x, recurrent, activation)
        return h, h

    h, hs = masked_scan(step, h, projected, mask, zero_output)
    return hs, h


def rnn_step(h: Tensor, x: Tensor, recurrent: Tensor, activation: Activation) -> Tensor:
    """One step of an Elman network on the projected input ``x``: the next hidden state."""
    return activation(x + h @ recurrent)


def lstm(
    projected: Tensor,
    h: Tensor,
    c: Tensor,
    recurrent: Tensor,
    activation: Activation = ops.tanh,
    recurrent_activation: Activation = ops.sigmoid,
    mask: Tensor | None = None,
    zero_output: bool = False,
) -> tuple[Tensor, Tensor, Tensor]:
    """An LSTM over time-major ``projected`` inputs (steps, batch, 4 * units: the input's
    product with the input weights plus the biases, gates in the order input, forget,
    cell, output): the hidden state of every step, and the last hidden and cell states."""

    def step(carry: tuple[Tensor, Tensor], x: Tensor) -> tuple[tuple[Tensor, Tensor], Tensor]:
        h, c = lstm_step(*carry, x, recurrent, activation, recurrent_activation)
        return (h, c), h

    (h, c), hs = masked_scan(step, (h, c), projected, mask, zero_output)
    return hs, h, c


def lstm_step(
    h: Tensor, c: Tensor, x: Tensor, recurrent: Tensor, activation: Activation, recurrent_activation: Activation
) -> tuple[Tensor, Tensor]:
    """One LSTM step on the projected input ``x`` (gates input, forget, cell, output): the
    next hidden and cell states."""
    i, f, g, o = ops.chunk(x + h @ recurrent, 4, dim=-1)
    c = recurrent_activation(f) * c + recurrent_activation(i) * activation(g)
    return recurrent_activation(o) * activation(c), c


def gru(
    projected: Tensor,
    h: Tensor,
    recurrent: Tensor,
    recurrent_bias: Tensor | None,
    reset_first: bool,
    activation: Activation = ops.tanh,
    recurrent_activation: Activation = ops.sigmoid,
    mask: Tensor | None = None,
    zero_output: bool = False,
) -> tuple[Tensor, Tensor]:
    """A GRU (the reset gate applied after the recurrent product, as PyTorch and Keras's
    default) over time-major ``projected`` inputs (steps, batch, 3 * units): gates in the
    order reset, update, new (``reset_first``, PyTorch's) or update, reset, new (Keras's).
    The hidden state of every step, and the last."""

    def step(h: Tensor, x: Tensor) -> tuple[Tensor, Tensor]:
        h = gru_step(h, x, recurrent, recurrent_bias, reset_first, activation, recurrent_activation)
        return h, h

    h, hs = masked_scan(step, h, projected, mask, zero_output)
    return hs, h


def gru_step(
    h: Tensor,
    x: Tensor,
    recurrent: Tensor,
    recurrent_bias: Tensor | None,
    reset_first: bool,
    activation: Activation,
    recurrent_activation: Activation,
) -> Tensor:
    """One GRU step on the projected input ``x`` (the gates' order as ``gru``'s): the next
    hidden state."""
    rec = h @ recurrent if recurrent_bias is None else h @ recurrent + recurrent_bias
    x_a, x_b, x_n = ops.chunk(x, 3, dim=-1)
    h_a, h_b, h_n = ops.chunk(rec, 3, dim=-1)
    a, b = recurrent_activation(x_a + h_a), recurrent_activation(x_b + h_b)
    reset, update = (a, b) if reset_first else (b, a)
    new = activation(x_n + reset * h_n)
    return (1.0 - update) * new + update * h


# PyTorch: nn.LSTM and nn.GRU ---------------------------------------------------------------


class _TorchRecurrent(Module):
    """PyTorch's recurrent modules: ``weight_ih_l{k}`` (gates * hidden, input),
    ``weight_hh_l{k}`` (gates * hidden, hidden) and the biases ``bias_ih_l{k}``,
    ``bias_hh_l{k}``, each uniform in [-1/sqrt(hidden), 1/sqrt(hidden)); inputs (steps,
    batch, features), or (batch, steps, features) with ``batch_first``, or (steps, features)."""

    gates = 1

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        *,
        generator: Generator | None = None,
    ) -> None:
        name = type(self).__name__
        if bidirectional:
            raise NotImplementedError(
                f"{name}: bidirectional=True is not supported; run a second one on flipped inputs"
            )
        if dropout:
            raise NotImplementedError(f"{name}: dropout between layers is not supported (dropout={dropout})")
        if num_layers < 1 or hidden_size < 1 or input_size < 1:
            raise ValueError(f"{name}: sizes must be positive, got {input_size=}, {hidden_size=}, {num_layers=}")
        self.input_size, self.hidden_size, self.num_layers = int(input_size), int(hidden_size), int(num_layers)
        self.bias, self.batch_first = bool(bias), bool(batch_first)
        bound = 1.0 / math.sqrt(hidden_size)
        uniform = initializers.RandomUniform(-bound, bound)
        rows = self.gates * hidden_size
        for k in range(num_layers):
            columns = input_size if k == 0 else hidden_size
            shapes = {f"weight_ih_l{k}": (rows, columns), f"weight_hh_l{k}": (rows, hidden_size)}
            if bias:
                shapes |= {f"bias_ih_l{k}": (rows,), f"bias_hh_l{k}": (rows,)}
            for attribute, shape in shapes.items():
                setattr(self, attribute, initializers.make_weight(uniform, shape, generator=generator))

    def _layer_weights(self, k: int) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None]:
        biases = (getattr(self, f"bias_ih_l{k}"), getattr(self, f"bias_hh_l{k}")) if self.bias else (None, None)
        return getattr(self, f"weight_ih_l{k}"), getattr(self, f"weight_hh_l{k}"), *biases

    def _time_major(self, x: Tensor) -> tuple[Tensor, bool]:
        name = type(self).__name__
        if x.ndim == 2:
            return ops.expand_dims(x, 1), True
        if x.ndim != 3:
            raise user_error(ShapeError, f"{name}: expected inputs of 2 or 3 dimensions, got shape {x.shape}")
        if x.shape[-1] != self.input_size:
            raise user_error(
                ShapeError, f"{name}: inputs have {x.shape[-1]} features, the layer takes {self.input_size}"
            )
        return (ops.transpose(x, (1, 0, 2)) if self.batch_first else x), False

    def _outputs(self, hs: Tensor, unbatched: bool) -> Tensor:
        if unbatched:
            return ops.squeeze(hs, 1)
        return ops.transpose(hs, (1, 0, 2)) if self.batch_first else hs

    def _initial(self, given: Tensor | None, batch: int, like: Tensor, unbatched: bool) -> list[Tensor]:
        """Each layer's initial state: zeros, or ``given`` (layers, batch, hidden)."""
        if given is None:
            return [ops.zeros((batch, self.hidden_size), like.dtype, like.device)] * self.num_layers
        if unbatched:
            given = ops.expand_dims(given, 1)
        expected = (self.num_layers, batch, self.hidden_size)
        if tuple(given.shape) != expected:
            raise user_error(
                ShapeError, f"{type(self).__name__}: an initial state of shape {given.shape}, expected {expected}"
            )
        return [given[k] for k in range(self.num_layers)]


class RNN(_TorchRecurrent):
    """``torch.nn.RNN``: ``output, h_n = rnn(input, h_0)``, each layer ``h = tanh(W_ih x +
    b_ih + W_hh h + b_hh)`` (``nonlinearity="relu"`` for a ReLU)."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        *,
        generator: Generator | None = None,
    ) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        super().__init__(
            input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, generator=generator
        )
        self.nonlinearity = nonlinearity

    def forward(self, x: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:
        seq, unbatched = self._time_major(x)
        hs = self._initial(hx, seq.shape[1], seq, unbatched)
        activation = ops.tanh if self.nonlinearity == "tanh" else ops.relu
        last = []
        for k in range(self.num_layers):
            w_ih, w_hh, b_ih, b_hh = self._layer_weights(k)
            projected = seq @ ops.transpose(w_ih)
            if b_ih is not None:
                projected = projected + (b_ih + b_hh)
            seq, h = rnn(projected, hs[k], ops.transpose(w_hh), activation)
            last.append(h)
        h_n = ops.stack(last)
        return self._outputs(seq, unbatched), ops.squeeze(h_n, 1) if unbatched else h_n


class LSTM(_TorchRecurrent):
    """``torch.nn.LSTM``: ``output, (h_n, c_n) = lstm(input, (h_0, c_0))``; gates in
    PyTorch's order (input, forget, cell, output)."""

    gates = 4

    def forward(self, x: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            # hx[0] of one tensor would be its first layer, then a confusing shape error.
            shown = f"a tensor of shape {hx.shape}" if isinstance(hx, Tensor) else type(hx).__name__
            raise user_error(TypeError, f"LSTM: the initial state is a pair (h_0, c_0), got {shown}")
        seq, unbatched = self._time_major(x)
        batch = seq.shape[1]
        hs = self._initial(None if hx is None else hx[0], batch, seq, unbatched)
        cs = self._initial(None if hx is None else hx[1], batch, seq, unbatched)
        last_h, last_c = [], []
        for k in range(self.num_layers):
            w_ih, w_hh, b_ih, b_hh = self._layer_weights(k)
            projected = seq @ ops.transpose(w_ih)
            if b_ih is not None:
                projected = projected + (b_ih + b_hh)
            seq, h, c = lstm(projected, hs[k], cs[k], ops.transpose(w_hh))
            last_h.append(h)
            last_c.append(c)
        h_n, c_n = ops.stack(last_h), ops.stack(last_c)
        if unbatched:
            h_n, c_n = ops.squeeze(h_n, 1), ops.squeeze(c_n, 1)
        return self._outputs(seq, unbatched), (h_n, c_n)


class GRU(_TorchRecurrent):
    """``torch.nn.GRU``: ``output, h_n = gru(input, h_0)``; gates in PyTorch's order
    (reset, update, new), the new gate reading ``r * (W_hn h + b_hn)``."""

    gates = 3

    def forward(self, x: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:
        seq, unbatched = self._time_major(x)
        hs = self._initial(hx, seq.shape[1], seq, unbatched)
        last = []
        for k in range(self.num_layers):
            w_ih, w_hh, b_ih, b_hh = self._layer_weights(k)
            projected = seq @ ops.transpose(w_ih)
            if b_ih is not None:
                projected = projected + b_ih
            seq, h = gru(projected, hs[k], ops.transpose(w_hh), b_hh, reset_first=True)
            last.append(h)
        h_n = ops.stack(last)
        return self._outputs(seq, unbatched), ops.squeeze(h_n, 1) if unbatched else h_n
