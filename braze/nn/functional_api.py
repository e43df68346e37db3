"""Keras's functional API: ``keras.Input`` and the graph of layer calls that
``keras.Model(inputs, outputs)`` runs.

:class:`FunctionalGraph` takes the symbolic inputs and outputs (a tensor, or a list, tuple
or dict of them), finds every node between them (a layer called twice is one layer with
two nodes: shared weights), orders the nodes so that each runs after those it reads, and
runs them on real tensors. Inputs are matched by position or, in a dict, by the names of
the ``Input`` s; each is checked against its ``Input``'s fixed dimensions and cast to its
dtype, as Keras does.

A text input (``keras.Input(shape=(1,), dtype="string")``) takes NumPy arrays of ``str``,
which only the layers that turn text into tensors read (``TextVectorization``,
``StringLookup``: the graph's *text nodes*). They run where the text is, on the host,
before the rest of the graph: ``fit``, ``evaluate`` and ``predict`` run them on each batch
(:meth:`FunctionalGraph.with_text_read`) and hand a compiled step their tensors, so that a
step compiled once serves every batch of text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from braze.ir.errors import ShapeError
from braze.nn import tree
from braze.nn.layer import Layer
from braze.nn.symbolic import TEXT, KerasTensor, Node, spec
from braze.ops import strings
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
        self._declared_shape = full[1:]
        dtype = "float32" if dtype is None else dtype
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
        self.text_nodes = self._text_nodes()

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

    def _text_nodes(self) -> list[Node]:
        """The nodes that read text: each reads only text inputs and numbers (a layer of
        text and of tensors computed in the graph could not run before the graph)."""
        found = []
        for node in self.nodes:
            read = node.inputs
            if not any(t.dtype is TEXT for t in read):
                continue
            computed = [t for t in read if t.dtype is not TEXT]
            if computed:
                raise ValueError(
                    f"Model: {getattr(node.layer, 'name', 'a call')} reads text and tensors ({computed[0].name}); a "
                    "layer that reads text reads only text inputs, and turns them into tensors"
                )
            found.append(node)
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
        """The outputs for real ``inputs`` (tensors or arrays in the inputs' structure, or
        what :meth:`with_text_read` made of them)."""
        values: dict[int, Any] = {}
        done: set[int] = set()
        if isinstance(inputs, TextRead):
            for node, outputs in zip(self.text_nodes, inputs.node_outputs(self.text_nodes), strict=True):
                self._keep(node, outputs, values)
                done.add(id(node))
            inputs = inputs.inputs
        for symbolic, value in zip(self.input_leaves, self._match(inputs), strict=True):
            if value is not None or symbolic.dtype is not TEXT:
                values[id(symbolic)] = _checked(symbolic, value)
        for node in self.nodes:
            if id(node) not in done:
                self._keep(node, self._call(node, values), values)
        return tree.map_leaves(lambda t: values[id(t)], self.outputs)

    def with_text_read(self, inputs: Any) -> Any:
        """``inputs`` with the text nodes run on them (see the module's text), or as they
        are in a graph without text."""
        if not self.text_nodes or isinstance(inputs, TextRead):
            return inputs
        values: dict[int, Any] = {}
        matched = self._match(inputs)
        for symbolic, value in zip(self.input_leaves, matched, strict=True):
            if symbolic.dtype is TEXT:
                values[id(symbolic)] = _checked(symbolic, value)
        read = []
        for node in self.text_nodes:
            outputs = self._call(node, values)
            self._keep(node, outputs, values)
            read.append(tree.leaves(outputs))
        text_free = [None if s.dtype is TEXT else v for s, v in zip(self.input_leaves, matched, strict=True)]
        return TextRead(tree.unflatten(self.inputs, text_free), [t for outputs in read for t in outputs])

    @staticmethod
    def _call(node: Node, values: dict[int, Any]) -> Any:
        args, kwargs = tree.map_leaves(
            lambda a: values[id(a)] if isinstance(a, KerasTensor) else a, (node.args, node.kwargs)
        )
        return node.call(*args, **kwargs)

    @staticmethod
    def _keep(node: Node, outputs: Any, values: dict[int, Any]) -> None:
        for symbolic, value in zip(node.outputs, tree.leaves(outputs), strict=True):
            values[id(symbolic)] = value
            if symbolic._keras_mask is not None:  # a later call may take the mask itself
                values[id(symbolic._keras_mask)] = value._keras_mask

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


class TextRead:
    """A batch whose text the graph's text nodes have read: ``inputs``, the batch's other
    inputs (None where text was), and ``tensors``, what the text nodes made of the text.
    Both are public attributes, so a compiled step finds the tensors as its inputs."""

    def __init__(self, inputs: Any, tensors: list[Tensor]) -> None:
        self.inputs, self.tensors = inputs, tensors

    def node_outputs(self, nodes: list[Node]) -> list[list[Tensor]]:
        """The tensors, split by the nodes that made them."""
        found, start = [], 0
        for node in nodes:
            found.append(self.tensors[start : start + len(node.outputs)])
            start += len(node.outputs)
        return found


def _checked(symbolic: KerasTensor, value: Any) -> Any:
    """``value`` as a tensor of the ``Input``'s dtype (a NumPy array of ``str`` for a text
    input), if its shape fits the ``Input``'s; a trailing axis of 1 is added or dropped to
    match it, as Keras does (images of (28, 28) for an Input of (28, 28, 1))."""
    if symbolic.dtype is TEXT:
        value = strings.as_strings(value.numpy() if hasattr(value, "numpy") else value, f"input {symbolic.name!r}")
    else:
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
    if symbolic.dtype is TEXT or value.dtype == symbolic.dtype:
        return value
    return value.astype(symbolic.dtype)
