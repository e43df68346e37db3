"""Keras's models: ``Model`` (functional, ``Model(inputs, outputs)``, or subclassed, with
``call``) and ``Sequential``.

A functional or subclassed model called without ``training=`` runs in inference mode, as
``keras.Model`` does: it starts in ``eval()`` mode, ``fit`` trains it in training mode and
restores the mode it found, and ``model(x, training=True)`` or ``model.train()`` switch
explicitly. ``keras.Sequential`` (``KerasSequential``) starts in inference mode too;
``braze.nn.Sequential``, the container of PyTorch-style programs, starts in training mode
as braze's modules do. ``fit``, ``evaluate`` and ``predict`` set the mode either way.
Every layer called inside follows the model's ``training`` value.
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from braze import ops
from braze.autodiff import no_grad
from braze.ir.dtypes import as_dtype
from braze.nn import symbolic, tree
from braze.nn.functional_api import FunctionalGraph, Input, InputLayer
from braze.nn.layer import Layer
from braze.nn.module import Module
from braze.nn.symbolic import KerasTensor, is_symbolic
from braze.tensor import Tensor


class _ChildLayers:
    """``model.layers`` of a subclassed model: the layers it holds directly. A functional
    or Sequential model sets its own list, which takes precedence (a non-data descriptor)."""

    def __get__(self, model: Any, owner: type | None = None) -> Any:
        if model is None:
            return self
        return [value for _, value in model._items() if isinstance(value, Layer)]


class _KerasShape:
    """A model's Keras ``input_shape`` or ``output_shape``, batch first (None): a tuple, or a
    list of them for several; a subclassed model's is what it sets."""

    def __init__(self, leaves: str) -> None:
        self.leaves = leaves

    def __set_name__(self, owner: type, name: str) -> None:
        self.stored = f"_set_{name}"

    def __get__(self, model: Any, owner: type | None = None) -> Any:
        if model is None:
            return self
        if self.stored in model.__dict__:
            return model.__dict__[self.stored]
        shapes = [tuple(t.shape) for t in getattr(model._functional(), self.leaves)]
        return shapes[0] if len(shapes) == 1 else shapes

    def __set__(self, model: Any, value: Any) -> None:
        model.__dict__[self.stored] = value


class Model(Layer):
    """``keras.Model``: ``Model(inputs, outputs)`` over symbolic tensors, or a subclass
    defining ``call`` (and, if it likes, ``train_step``/``test_step``/``predict_step``)."""

    training = False
    layers = _ChildLayers()
    # What its first call took (shapes and dtypes, as JSON): a subclassed model saved and
    # loaded is called so once, on zeros, to make its weights before they are loaded.
    # Private, so that a compiled step that records it does not trace again for it.
    _build_input: Any = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._build_input is None:
            self._record_input(args, kwargs)
        return super().__call__(*args, **kwargs)

    def _record_input(self, args: tuple, kwargs: dict) -> None:
        arrays = {k: v for k, v in kwargs.items() if k not in ("training", "mask") and hasattr(v, "shape")}
        if (args or arrays) and not is_symbolic((args, arrays)):
            self._build_input = {"args": _input_spec(list(args)), "kwargs": _input_spec(arrays)["items"]}

    @property
    def build_input(self) -> Any:
        return self._build_input

    def build_from(self, spec: Any) -> None:
        """Make the weights by one call, in inference mode, on zeros like ``build_input``."""
        with no_grad():
            kwargs = {k: _zeros_like(v) for k, v in spec["kwargs"].items()}
            self(*_zeros_like(spec["args"]), **kwargs, training=False)

    def get_config(self) -> dict[str, Any]:
        """A functional model's whole graph; a subclassed model's constructor arguments."""
        from braze.nn import saving  # saving builds models: imported when used

        return saving.model_config(self) if saving.is_functional(self) else super().get_config()

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict[str, type] | None = None) -> Model:
        if "nodes" not in config:
            return super().from_config(config)
        from braze.nn.saving import model_from_config

        return model_from_config(config, cls, custom_objects)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        inputs = args[0] if args else kwargs.pop("inputs", None)
        outputs = args[1] if len(args) > 1 else kwargs.pop("outputs", None)
        if len(args) > 2:
            raise TypeError(f"Model: too many positional arguments ({len(args)}); expected inputs and outputs")
        super().__init__(**kwargs)
        if inputs is None and outputs is None:
            return
        if inputs is None or outputs is None:
            raise TypeError("Model: a functional model needs both inputs= and outputs=")
        self._graph = FunctionalGraph(inputs, outputs)
        self.layers = self._graph.layers
        self.built = True
        if len(self._graph.input_leaves) == 1:  # so a Sequential that starts with this model knows its input
            self._declared_shape = tuple(self._graph.input_leaves[0].shape[1:])

    # Functional models -----------------------------------------------------------------

    @property
    def inputs(self) -> list[KerasTensor]:
        return self._functional().input_leaves

    @property
    def outputs(self) -> list[KerasTensor]:
        return self._functional().output_leaves

    @property
    def input(self) -> Any:
        return self._functional().inputs

    @property
    def output(self) -> Any:
        return self._functional().outputs

    @property
    def input_names(self) -> list[str]:
        return self._functional().input_names

    input_shape = _KerasShape("input_leaves")
    output_shape = _KerasShape("output_leaves")

    @property
    def output_names(self) -> list[str]:
        graph = getattr(self, "_graph", None)
        return graph.output_names if graph is not None else ["output"]

    def _functional(self) -> FunctionalGraph:
        graph = getattr(self, "_graph", None)
        if graph is None:
            raise AttributeError(f"{self.name} is not a functional model: it has no symbolic inputs and outputs")
        return graph

    @property
    def computes(self) -> bool:
        """Whether the model computes outputs: a functional model, or a subclass with its own
        ``call`` (a GAN that only overrides ``train_step`` has none, and Keras never calls it)."""
        return getattr(self, "_graph", None) is not None or type(self).call is not Model.call

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        graph = getattr(self, "_graph", None)
        if graph is None:
            raise NotImplementedError(
                f"{type(self).__name__}: define call(self, inputs) in the subclass, or make a functional model "
                "with Model(inputs, outputs)"
            )
        return graph.run(inputs)

    # Building and layers ---------------------------------------------------------------

    def _ensure_built(self, input_shape: Any) -> None:
        # A subclassed model builds its layers as its first call reaches them.
        if type(self).build is Model.build:
            self.built = True
        else:
            super()._ensure_built(input_shape)

    def build(self, input_shape: Any) -> None:
        """Build every layer by one call on zeros of ``input_shape`` (None dimensions as 1),
        in inference mode (Keras's ``model.build``)."""
        self.built = True
        shape = tuple(1 if d is None else int(d) for d in input_shape)
        with no_grad():
            self(ops.zeros(shape), training=False)

    def to_json(self, **dumps: Any) -> str:
        """The model's architecture as JSON (``json.dumps`` options in ``dumps``), which
        ``keras.models.model_from_json`` rebuilds, as Keras's ``Model.to_json``."""
        from braze.nn.saving import to_json  # saving builds models: imported when used

        return to_json(self, **dumps)

    def get_layer(self, name: str | None = None, index: int | None = None) -> Layer:
        if index is not None:
            return self.layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError(f"{self.name} has no layer named {name!r}; its layers are {[m.name for m in self.layers]}")


class Sequential(Model):
    """Layers applied in order: ``Sequential([layer, ...])``, ``Sequential(layer, ...)`` or
    ``add()`` one at a time. The model is built at once when its input shape is known (the
    first layer's ``input_shape``, a ``keras.Input`` as first element, or ``input_shape=``),
    so that ``compile`` gives the optimizer every parameter; else on its first call."""

    training = True

    def __init__(
        self,
        *layers: Any,
        input_shape: Sequence[int] | None = None,
        name: str | None = None,
        trainable: bool = True,
    ) -> None:
        super().__init__(name=name, trainable=trainable)
        items = list(layers[0]) if len(layers) == 1 and isinstance(layers[0], (list, tuple)) else list(layers)
        if len(layers) == 1 and layers[0] is None:
            items = []
        self.layers: list[Module] = []
        self._output_shape: tuple[int, ...] | None = None
        if input_shape is not None:
            self._start(tuple(input_shape))
        for layer in items:
            self.add(layer)

    def _start(self, input_shape: tuple[int, ...], dtype: Any = None) -> None:
        self._declared_shape = input_shape
        if dtype is not None or "_input_dtype" not in self.__dict__:  # inputs are cast to it, as Keras casts them
            self._input_dtype = as_dtype(dtype or "float32", "Input")
        self._output_shape = input_shape if None not in input_shape else None
        self.built = self._output_shape is not None
        self._drop_chain(0)

    def _drop_chain(self, keep: int) -> None:
        """Forget the symbolic calls of the layers past the first ``keep`` (and the input
        too when ``keep`` is 0), so that each layer's ``output`` is its call in this model."""
        chain = self.__dict__.get("_chain") or []
        while len(chain) > keep + 1 or (keep == 0 and chain):
            removed = tree.leaves(chain.pop())[0]
            layer = removed.node.layer
            if removed.node in getattr(layer, "_inbound_nodes", ()):
                layer._inbound_nodes.remove(removed.node)

    def _extend_chain(self) -> list[Any]:
        """The symbolic tensors of a call on a ``keras.Input`` of the input shape, one per
        layer: each new layer is called on the last (Keras's Sequential graph)."""
        chain = self.__dict__.setdefault("_chain", [])
        if self._declared_shape is None:
            raise AttributeError(
                f"{self.name} has no symbolic inputs and outputs yet: give it an input shape (a keras.Input first, "
                "or input_shape=)"
            )
        if not chain:
            chain.append(Input(shape=self._declared_shape))
        while len(chain) <= len(self.layers):
            layer = self.layers[len(chain) - 1]
            if not isinstance(layer, Layer):
                raise AttributeError(f"{self.name} has no symbolic graph: {type(layer).__name__} is not a Keras layer")
            chain.append(layer(chain[-1]))
        return chain

    def add(self, layer: Any) -> None:
        """Append ``layer``, built at once when the model's input shape is known (as in Keras)."""
        if isinstance(layer, (KerasTensor, InputLayer)):
            if self.layers:
                raise ValueError(f"{self.name}: an Input can only be the first element of a Sequential model")
            symbolic_input = layer.symbolic if isinstance(layer, InputLayer) else layer
            self._start(tuple(symbolic_input.shape[1:]), symbolic_input.dtype)
            return
        if not isinstance(layer, Module):
            raise TypeError(f"{self.name}.add: expected a layer, got {type(layer).__name__}")
        self.layers.append(layer)
        first_shape = getattr(layer, "_declared_shape", None) if len(self.layers) == 1 else None
        if self._declared_shape is None and first_shape is not None:
            self._start(tuple(first_shape))
        if self._output_shape is not None:
            self._output_shape = _shape_after(layer, self._output_shape)
        elif self._declared_shape is None:
            # Without an input shape there is nothing to build while every layer is built.
            self.built = all(getattr(m, "built", True) for m in self.layers)
        if isinstance(layer, Layer):  # its ``output``, asked for first, makes this model's graph
            layer._sequential = weakref.ref(self)

    # PyTorch's nn.Sequential is a sequence of its modules: model[0], model[1:], len(model),
    # for layer in model, model[i] = layer, model.append(layer).
    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self.layers))

    def __getitem__(self, index: int | slice) -> Any:
        """A layer, or for a slice a Sequential of those layers (shared, as PyTorch's)."""
        if isinstance(index, slice):
            return Sequential(*self.layers[index])
        return self.layers[operator.index(index)]

    def __setitem__(self, index: int, layer: Module) -> None:
        """Replace the layer at ``index`` (the layers after it are added again, so that the
        model's shapes and graph follow)."""
        position = range(len(self.layers))[operator.index(index)]
        before = self.layers[position:]
        try:
            self._replace_from(position, [layer, *before[1:]])
        except Exception:
            self._replace_from(position, before)  # a layer that does not fit leaves the model as it was
            raise

    def _replace_from(self, position: int, layers: list[Module]) -> None:
        while len(self.layers) > position:
            self.pop()
        for layer in layers:
            self.add(layer)

    def append(self, layer: Module) -> Sequential:
        """PyTorch's name of ``add``, returning the model."""
        self.add(layer)
        return self

    def pop(self) -> Module:
        layer = self.layers.pop()
        self._drop_chain(len(self.layers))
        if self._declared_shape is not None and None not in self._declared_shape:
            self._output_shape = self._declared_shape
            for kept in self.layers:
                self._output_shape = _shape_after(kept, self._output_shape)
        return layer

    def build(self, input_shape: Any = None) -> None:
        if input_shape is None:
            if self._declared_shape is None:
                raise ValueError(f"{self.name}.build: give the input shape (batch first), e.g. (None, 28, 28, 1)")
            input_shape = (None, *self._declared_shape)
        self._start(tuple(input_shape)[1:])
        for layer in self.layers:
            if self._output_shape is None:
                break
            self._output_shape = _shape_after(layer, self._output_shape)

    @property
    def output_names(self) -> list[str]:
        """Named after the last layer, as Keras 3 names a Sequential's output (that layer's
        own outputs' names where it is a model)."""
        if not self.layers:
            return ["output"]
        last = self.layers[-1]
        return list(last.output_names) if isinstance(last, Model) else [getattr(last, "name", "output")]

    def _functional(self) -> FunctionalGraph:
        """The Sequential graph (``model.inputs``, ``model.output``; each layer's ``output``):
        Keras's feature extractors are made from it."""
        chain = self._extend_chain()
        made = self.__dict__.get("_graph_of_chain")
        if made is None or made[0] is not chain[-1]:
            made = self._graph_of_chain = (chain[-1], FunctionalGraph(chain[0], chain[-1]))
        return made[1]

    def get_config(self) -> dict[str, Any]:
        from braze.nn.saving import model_config

        return model_config(self)

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict[str, type] | None = None) -> Sequential:
        from braze.nn.saving import model_from_config

        return model_from_config(config, cls, custom_objects)

    def _ensure_built(self, input_shape: Any) -> None:
        if not self.built:  # the declared input shape, where there is one, not the first batch's
            self.build(None if self._declared_shape is not None else input_shape)

    def call(self, x: Any, training: bool | None = None) -> Any:
        x = _matching_rank(x, self._declared_shape)
        dtype = self.__dict__.get("_input_dtype")
        # Booleans and integers become the Input's dtype (Keras's cast); a float input keeps
        # its precision (a model moved to float64 by to() takes float64).
        if (
            isinstance(x, Tensor)
            and dtype is not None
            and x.dtype != dtype
            and not (x.dtype.is_float and dtype.is_float)
        ):
            x = x.astype(dtype)
        for layer in self.layers:
            x = layer(x)
        return x


def _input_spec(value: Any) -> Any:
    """A call's argument as JSON: each array's shape and dtype (integer ids stay integers)."""
    if isinstance(value, (list, tuple)):
        return [_input_spec(v) for v in value]
    if isinstance(value, dict):
        return {"items": {str(k): _input_spec(v) for k, v in value.items()}}
    if not hasattr(value, "shape") or not hasattr(value, "dtype"):
        return None
    kind = np.dtype(value.dtype.numpy if isinstance(value, Tensor) else value.dtype)
    dtype = "bool" if kind == np.bool_ else "int32" if np.issubdtype(kind, np.integer) else "float32"
    return {"shape": [int(d) for d in value.shape], "dtype": dtype}


def _zeros_like(spec: Any) -> Any:
    if isinstance(spec, list):
        return [_zeros_like(s) for s in spec]
    if spec is None:
        return None
    if "items" in spec:
        return {k: _zeros_like(v) for k, v in spec["items"].items()}
    shape = spec["shape"]
    return ops.zeros((1, *shape[1:]) if shape else (), spec["dtype"])  # one example: the batch size is free


def _matching_rank(x: Any, input_shape: tuple[int, ...] | None) -> Any:
    """Keras 3's rank adjustment of a model's inputs: where the declared input ends in a
    dimension of 1, inputs without it (one feature as a vector) gain it, and inputs with
    one more such dimension lose it."""
    if not isinstance(x, Tensor) or not input_shape:
        return x
    if x.ndim == len(input_shape) and input_shape[-1] == 1:
        return ops.expand_dims(x, -1)
    if x.ndim == len(input_shape) + 2 and x.shape[-1] == 1:
        return ops.squeeze(x, -1)
    return x


def _shape_after(layer: Module, input_shape: tuple[int, ...]) -> tuple[int, ...]:
    """Build ``layer`` (and what it holds) on one example of zeros, in inference mode; its
    output shape, without the batch dimension."""
    with no_grad(), symbolic.example_runs():
        x = ops.zeros((1, *input_shape))
        out = layer(x, training=False) if isinstance(layer, Layer) else layer(x)
    return tuple(out.shape[1:]) if isinstance(out, Tensor) else input_shape


class KerasSequential(Sequential):
    """``keras.Sequential``: ``braze.nn.Sequential`` starting in inference mode, as every
    Keras model does, so that ``model(x)`` runs no ``Dropout`` until ``fit`` or
    ``training=True`` asks for it."""

    training = False
    name_stem = "sequential"
