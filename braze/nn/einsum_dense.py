"""Keras's ``EinsumDense``: a dense layer whose product is an einsum equation
(``"abc,cde->abde"``: each of ``c`` features to a ``d`` x ``e`` block, as multi-head
attention's projections do), with an optional bias over some output axes.

The kernel's shape comes from the equation: an index of the input takes the input's size,
one of the output ``output_shape``'s (the shape without the batch axis; None where the
size is the input's). An equation may elide the input's leading axes after the batch
(``"...b,bc->...c"``): they pass through as they are. The bias spans the output's axes from
the first of ``bias_axes`` to the last, of size 1 along those it does not name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from braze import ops
from braze.ir.errors import ShapeError
from braze.nn import activations
from braze.nn.layer import Layer
from braze.tensor import Tensor, user_error

__all__ = ["EinsumDense"]

_PLAIN = re.compile(r"([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)$")
_LEFT_ELIDED = re.compile(r"\.\.\.([a-zA-Z]+),([a-zA-Z]+)->\.\.\.([a-zA-Z]+)$")


class EinsumDense(Layer):
    """``activation(einsum(equation, inputs, kernel) + bias)`` (see the module's text)."""

    def __init__(
        self,
        equation: str,
        output_shape: int | Sequence[int | None],
        activation: Any = None,
        bias_axes: str | None = None,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        lora_rank: int | None = None,
        **kwargs: Any,
    ) -> None:
        if kernel_constraint is not None or bias_constraint is not None or lora_rank:
            raise NotImplementedError("EinsumDense: weight constraints and LoRA are not supported")
        compact = equation.replace(" ", "")
        found = _PLAIN.match(compact) or _LEFT_ELIDED.match(compact)
        if found is None:
            raise ValueError(
                f"EinsumDense: equation {equation!r} must read 'input,kernel->output' (letters, '...' leading the "
                "input and the output at most)"
            )
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.equation = compact
        self._inputs, self._kernel, self._outputs = found.groups()
        self.elided = found.re is _LEFT_ELIDED
        self.partial_output_shape = [output_shape] if isinstance(output_shape, int) else list(output_shape)
        self.activation = activations.get(activation)
        self.bias_axes = bias_axes
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        for index in self._outputs:
            if index not in self._inputs and index not in self._kernel:
                raise ValueError(f"EinsumDense: output index {index!r} of {equation!r} is in neither operand")
        for index in bias_axes or "":
            if index not in self._outputs:
                raise ValueError(f"EinsumDense: bias axis {index!r} is not an output index of {equation!r}")
        self._build_if_known()

    def _shapes(self, input_shape: tuple[int | None, ...]) -> tuple[list, list | None, list]:
        """The kernel's shape, the bias's (or None) and the full output shape."""
        inputs, outputs = self._inputs, self._outputs
        elided = len(input_shape) - len(inputs)
        if elided < (1 if self.elided else 0) or (not self.elided and elided):
            raise user_error(
                ShapeError, f"{self.name}: {self.equation!r} does not fit inputs of shape {tuple(input_shape)}"
            )
        passed = list(input_shape[1:elided]) if self.elided else []
        given = self.partial_output_shape
        if len(given) != len(outputs) - (0 if self.elided else 1):
            raise ValueError(
                f"{self.name}: output_shape {tuple(given)} does not fit {self.equation!r} "
                "(the output's axes but the batch's)"
            )
        output_sizes = dict(zip(outputs, given if self.elided else [input_shape[0], *given], strict=True))
        input_sizes = dict(zip(inputs, input_shape[elided:] if self.elided else input_shape, strict=True))
        for index, size in output_sizes.items():
            if index in input_sizes:
                if size is not None and size != input_sizes[index]:
                    raise ValueError(
                        f"{self.name}: output_shape gives {index!r} {size}, the input {input_sizes[index]}"
                    )
                output_sizes[index] = input_sizes[index]
        kernel = [input_sizes.get(c, output_sizes.get(c)) for c in self._kernel]
        if None in kernel:
            raise ValueError(f"{self.name}: the kernel of {self.equation!r} needs sizes neither operand gives")
        full = [input_shape[0], *passed] if self.elided else []
        full += [output_sizes[c] for c in outputs]
        bias = None
        if self.bias_axes:
            start = min(outputs.index(c) for c in self.bias_axes)
            bias = [output_sizes[c] if c in self.bias_axes else 1 for c in outputs[start:]]
        return kernel, bias, full

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        kernel, bias, _ = self._shapes(tuple(input_shape))
        self.kernel = self.add_weight(
            shape=tuple(kernel), initializer=self.kernel_initializer, regularizer=self.kernel_regularizer, name="kernel"
        )
        self.bias = None
        if bias is not None:
            self.bias = self.add_weight(
                shape=tuple(bias), initializer=self.bias_initializer, regularizer=self.bias_regularizer, name="bias"
            )

    def compute_output_shape(self, input_shape: tuple[int | None, ...]) -> tuple[int | None, ...]:
        return tuple(self._shapes(tuple(input_shape))[2])

    def call(self, inputs: Any) -> Tensor:
        x = ops.einsum(self.equation, ops.as_tensor(inputs), self.kernel)
        if self.bias is not None:
            x = x + self.bias
        return self.activation(x)
