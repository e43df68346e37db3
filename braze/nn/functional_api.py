"""Keras's functional API: ``keras.Input`` and the graph of layer calls that
``keras.Model(inputs, outputs)`` runs.

:class:`FunctionalGraph` takes the symbolic inputs and outputs (a tensor, or a list, tuple
or dict of them), finds every node between them (a layer called twice is one layer with
two nodes: shared weights), orders the nodes so that each runs after those it reads, and
runs them on real tensors. Inputs are matched by position or, in a dict, by the names of
the ``Input`` s; each is checked against its ``Input``'s fixed dimensions and cast to its
dtype, as Keras does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from braze.ir.errors import ShapeError
from braze.nn import tree
from braze.nn.layer import Layer
from braze.nn.symbolic import KerasTensor, Node, spec
from braze.ops.core import as_tensor
from braze.tensor import Tensor, user_error


class InputLayer(Layer):
    """The layer behind ``keras.Input``: its output is the model's symbolic input."""

    def __init__(
        self,
        shape: Sequence[int | None] | None = None,
        batch_size: int | None = None,
        dtype: Any = None,
        sparse: bool | None = None,
        batch_shape: Sequence[int | None] | None = None,
        input_tensor: Any = None,
        name: str | None = None,
        input_shape: Sequence[int | None] | None = None,
        ragged: bool | None = None,
        optional: bool = False,
    ) -> None:
        for what, value in (("sparse", sparse), ("ragged", ragged), ("input_tensor", input_tensor)):
            if value:
                raise NotImplementedError(f"Input({what}=...) is not supported: inputs are dense tensors")
        if optional:
            raise NotImplementedError("Input(optional=True) is not supported: every input must be given")
        super().__init__(name=name)
        shape = input_shape if shape is None else shape
        if batch_shape is not None:
            full = tuple(batch_shape)
        elif shape is not None:
            full = (batch_size, *(tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)))
        else:
            raise TypeError("Input: give shape= (without the batch dimension) or batch_shape=")
        self.input_shape = full[1:]
        dtype = "float32" if dtype is None else dtype
        if str(dtype) in ("string", "str"):
            raise NotImplementedError(
                "Input(dtype='string') is not supported: braze tensors hold numbers. Turn text into numbers before "
                "the model, as Keras does on its JAX and PyTorch backends: dataset.map(lambda text, label: "
                "(text_vectorization(text), label)), and an Input of the indices' shape"
            )
        self._symbolic = spec(full, dtype, self.name)
        node = Node(self, (), {}, layer=self)
        node.outputs, node.output_structure = [self._symbolic], self._symbolic
        self._symbolic.node = node
        self._inbound_nodes.append(node)
        self.built = True

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        del config["trainable"]  # an input has nothing to train
        config["dtype"] = str(self._symbolic.dtype)
        return config

    @property
    def symbolic(self) -> KerasTensor:
        """The symbolic tensor this layer stands for (``keras.Input`` returns it)."""
        return self._symbolic

    def call(self, x: Tensor) -> Tensor:
        return x


def Input(  # noqa: N802 - Keras's spelling
    shape: Sequence[int | None] | None = None,
    batch_size: int | None = None,
    dtype: Any = None,
    sparse: bool | None = None,
    batch_shape: Sequence[int | None] | None = None,
    name: str | None = None,
    tensor: Any = None,
    optional: bool = False,
) -> KerasTensor:
    """A symbolic input of ``shape`` (without the batch dimension), ``keras.Input``."""
    layer = InputLayer(shape, batch_size, dtype, sparse, batch_shape, tensor, name, optional=optional)
    return layer.symbolic


class FunctionalGraph:
    """The nodes between symbolic ``inputs`` and ``outputs``, in an order that runs each
    after the nodes it reads."""

    def __init__(self, inputs: Any, outputs: Any) -> None:
        for what, structure in (("inputs", inputs), ("outputs", outputs)):
            bad = [leaf for leaf in tree.leaves(structure) if not isinstance(leaf, KerasTensor)]
            if bad or not tree.leaves(structure):
                raise TypeError(
                    f"Model: {what} must be symbolic tensors (from keras.Input and layer calls), got "
                    f"{type(bad[0]).__name__ if bad else 'nothing'}"
                )
        self.inputs, self.outputs = inputs, outputs
        self.input_leaves: list[KerasTensor] = tree.leaves(inputs)
        self.output_leaves: list[KerasTensor] = tree.leaves(outputs)
        self.nodes = self._order()
        self.layers = self._layers()

    def _order(self) -> list[Node]:
        sources = {id(t) for t in self.input_leaves}
        order: list[Node] = []
        visited: set[int] = set()
        stack = [(t, False) for t in reversed(self.output_leaves)]
        while stack:
            tensor, expanded = stack.pop()
            node = tensor.node
            if id(tensor) in sources or id(node) in visited and not expanded:
                continue
            if expanded:
                if id(node) not in visited:
                    visited.add(id(node))
                    order.append(node)
                continue
            if isinstance(node.layer, InputLayer):
                raise ValueError(
                    f"Model: the outputs depend on Input {node.layer.name!r}, which is not among the model's inputs "
                    f"({[t.name for t in self.input_leaves]})"
                )
            stack.append((tensor, True))
            stack.extend((t, False) for t in reversed(node.inputs))
        return order

    def _layers(self) -> list[Layer]:
        found: list[Layer] = []
        seen: set[int] = set()
        candidates = [t.node.layer for t in self.input_leaves] + [node.layer for node in self.nodes]
        for layer in candidates:
            if layer is not None and id(layer) not in seen:
                seen.add(id(layer))
                found.append(layer)
        return found

    @property
    def input_names(self) -> list[str]:
        return [t.name for t in self.input_leaves]

    @property
    def output_names(self) -> list[str]:
        if isinstance(self.outputs, dict):
            return list(self.outputs)
        return [t.node.layer.name if t.node.layer is not None else t.name for t in self.output_leaves]

    def run(self, inputs: Any) -> Any:
        """The outputs for real ``inputs`` (tensors or arrays in the inputs' structure)."""
        values: dict[int, Any] = {}
        for symbolic, value in zip(self.input_leaves, self._match(inputs), strict=True):
            values[id(symbolic)] = _checked(symbolic, value)
        for node in self.nodes:
            args, kwargs = tree.map_leaves(
                lambda a: values[id(a)] if isinstance(a, KerasTensor) else a, (node.args, node.kwargs)
            )
            for symbolic, value in zip(node.outputs, tree.leaves(node.call(*args, **kwargs)), strict=True):
                values[id(symbolic)] = value
                if symbolic._keras_mask is not None:  # a later call may take the mask itself
                    values[id(symbolic._keras_mask)] = value._keras_mask
        return tree.map_leaves(lambda t: values[id(t)], self.outputs)

    def _match(self, inputs: Any) -> list[Any]:
        """The real inputs in the order of ``input_leaves``."""
        names = self.input_names
        if isinstance(inputs, dict):
            keys = list(self.inputs) if isinstance(self.inputs, dict) else names
            missing = [k for k in keys if k not in inputs]
            if missing:
                raise ValueError(f"Model: inputs {missing} are missing; the model takes {keys}, got {sorted(inputs)}")
            return [inputs[k] for k in keys]
        if isinstance(self.inputs, dict):
            raise ValueError(f"Model: the model's inputs are a dict ({list(self.inputs)}): pass a dict")
        given = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if len(given) != len(names):
            raise ValueError(f"Model: expected {len(names)} input(s) ({names}), got {len(given)}")
        return given


def _checked(symbolic: KerasTensor, value: Any) -> Tensor:
    """``value`` as a tensor of the ``Input``'s dtype, if its shape fits the ``Input``'s; a
    trailing axis of 1 is added or dropped to match it, as Keras does (images of (28, 28) for
    an Input of (28, 28, 1))."""
    value = value if isinstance(value, Tensor) else as_tensor(value)
    if value.ndim == symbolic.ndim - 1 and symbolic.shape[-1] == 1:
        value = value.reshape(*value.shape, 1)
    elif value.ndim == symbolic.ndim + 1 and value.shape[-1] == 1:
        value = value.reshape(value.shape[:-1])
    fits = value.ndim == symbolic.ndim and all(
        d is None or d == v for d, v in zip(symbolic.shape, value.shape, strict=True)
    )
    if not fits:
        raise user_error(
            ShapeError,
            f"input {symbolic.name!r}: expected shape {symbolic.shape}, got {value.shape} (None: any size)",
        )
    return value if value.dtype == symbolic.dtype else value.astype(symbolic.dtype)
