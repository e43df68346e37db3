"""``Layer``: Keras's layer protocol on braze's ``Module``.

A layer is made with Keras's common arguments (``name``, ``trainable``, ``dtype``,
``input_shape``/``input_dim``; any other is an error naming it), creates its weights in
``build(input_shape)`` (the full shape, batch first), which runs on its first call unless the
input shape was given, with ``add_weight``, and computes in ``call`` (Keras) or ``forward``
(PyTorch). Calling it:

- on symbolic tensors (``keras.Input``) records a node of a functional model;
- on tensors or NumPy arrays runs it, with ``training`` resolved as Keras does: the value
  passed, else the value of the call it is inside, else the layer's mode (``train()`` /
  ``eval()``), and passed on to ``call`` when ``call`` takes it; where no caller stated it,
  a ``call`` that defaults to ``training=True`` (the augmentation layers) trains.

Masks follow Keras 3 (``masks.py``): a ``call`` of one tensor argument that takes ``mask``
receives that argument's (of several, each one's as ``<argument>_mask``), a layer that
``supports_masking`` sets ``compute_mask``'s result on its outputs, and any other layer
given a masked input drops the mask with Keras's warning.

``add_loss`` collects losses during a call (cleared at each outermost call), ``losses``
adds the weight regularizers' penalties. Weights (``weights``, ``trainable_weights``,
``non_trainable_weights``, ``get_weights``/``set_weights``) follow ``trainable``: a layer
set to ``trainable = False`` keeps its parameters out of training, and so does every layer
inside it, whose flag is set too (Keras 3's).
"""

from __future__ import annotations

import functools
import inspect
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from braze.ir.dtypes import as_dtype
from braze.nn import initializers, masks, regularizers, symbolic, tree
from braze.nn.metrics import Mean, Metric
from braze.nn.module import Module
from braze.nn.names import snake_case, unique_name
from braze.nn.state import is_buffer, mark_buffer, set_value
from braze.ops.core import as_tensor
from braze.ops.random import Generator
from braze.runtime.device import default_device
from braze.tensor import Tensor


class _CallContext(threading.local):
    """The ``training`` value of the layer call in progress, whether a caller stated it, how
    deep calls are nested, and a count of outermost calls (``add_loss`` keeps only its own
    call's losses)."""

    depth = 0
    training = False
    stated = False
    generation = 0


CALL_CONTEXT = _CallContext()


class _CallSpec(NamedTuple):
    """What a layer class's ``call`` (or ``forward``) takes, read once per class."""

    takes_training: bool
    trains_by_default: bool  # its ``training`` defaults to True (the augmentation layers')
    takes_mask: bool
    named_masks: tuple[str, ...]  # arguments ``x`` with an ``x_mask`` beside them (Keras fills it)
    signature: inspect.Signature | None


_CALL_SPECS: dict[type, _CallSpec] = {}


def _call_spec(cls: type) -> _CallSpec:
    found = _CALL_SPECS.get(cls)
    if found is None:
        # A PyTorch-style layer defines forward, which Layer.call passes everything to.
        method = cls.forward if cls.call is Layer.call else cls.call
        try:
            signature = inspect.signature(method)
        except (TypeError, ValueError):
            signature = None
        parameters = list(signature.parameters.values()) if signature is not None else []
        names = {p.name for p in parameters}
        found = _CALL_SPECS[cls] = _CallSpec(
            any(p.name == "training" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters),
            any(p.name == "training" and p.default is True for p in parameters),
            "mask" in names,
            tuple(name for name in names if f"{name}_mask" in names),
            signature,
        )
    return found


def _shape_of(value: Any) -> Any:
    """Keras's ``input_shape`` of a call's first argument: a tuple, or a structure of them."""
    return tree.map_leaves(lambda v: tuple(v.shape) if hasattr(v, "shape") else None, value)


def _marking_built(build: Callable) -> Callable:
    """``build`` that marks the layer built once it returns, as Keras's does (a layer built
    by hand, ``layer.build(shape)``, is not built again, afresh, by its first call), and
    names the weights it made."""

    @functools.wraps(build)
    def build_then_mark(self: Layer, *args: Any, **kwargs: Any) -> Any:
        result = build(self, *args, **kwargs)
        self.built = True
        for _ in self._weights_with_trainability(True):
            pass  # each weight gets its name now, as Keras's do when made
        return result

    build_then_mark.marks_built = True
    return build_then_mark


class Layer(Module):
    """The base of braze's layers and of a user's Keras layers and models."""

    built = False
    _declared_shape: tuple[int, ...] | None = None  # Keras's input_shape=, without the batch dimension
    activity_regularizer: Callable | None = None
    name_stem: str | None = None  # the default name's stem when it is not the class's name

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        build = cls.__dict__.get("build")
        if build is not None and not hasattr(build, "marks_built"):
            cls.build = _marking_built(build)

    def __new__(cls, *args: Any, **kwargs: Any) -> Layer:
        layer = super().__new__(cls)
        layer.training = cls.training  # a Keras model starts in inference mode, a layer as a Module
        layer._config = _init_arguments(cls, args, kwargs)
        stem = cls.__dict__.get("name_stem") or snake_case(cls.__name__)
        layer._name = layer._config.get("name") or unique_name(stem)
        layer._build_device = None
        layer._weights_added: list[Tensor] = []
        layer._call_losses: list[Tensor] = []
        layer._losses_generation = -1
        layer._inbound_nodes: list[symbolic.Node] = []
        layer._dtype = None
        return layer

    def __init__(
        self,
        *,
        name: str | None = None,
        trainable: bool = True,
        dtype: Any = None,
        input_shape: Sequence[int] | None = None,
        input_dim: int | None = None,
        batch_input_shape: Sequence[int | None] | None = None,
        activity_regularizer: Any = None,
        **unknown: Any,
    ) -> None:
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected argument(s) {sorted(unknown)}")
        self.__dict__["trainable"] = bool(trainable)  # its own flag: the layers inside come later, with theirs
        self._dtype = None if dtype is None else as_dtype(dtype, type(self).__name__)
        if self._dtype is not None and not self._dtype.is_float:
            raise TypeError(
                f"{type(self).__name__}: a layer's dtype is its weights' float type, got {self._dtype.name}"
            )
        if activity_regularizer is not None:
            self.activity_regularizer = regularizers.get(activity_regularizer)
        if batch_input_shape is not None:
            input_shape = tuple(batch_input_shape)[1:]
        if input_shape is None and input_dim is not None:
            input_shape = (int(input_dim),)
        if input_shape is not None:
            self._declared_shape = tuple(input_shape)
        # A layer with nothing to build is built from the start (a compiled step that calls it
        # first then sees no change in it).
        self.built = type(self).build is Layer.build

    # Identity --------------------------------------------------------------------------

    @property
    def supports_masking(self) -> bool:
        """Whether the layer sets ``compute_mask``'s mask on its outputs (Keras's attribute):
        by default, when its class defines ``compute_mask``, as in Keras 3."""
        found = self.__dict__.get("_supports_masking")
        return found if found is not None else type(self).compute_mask is not Layer.compute_mask

    @supports_masking.setter
    def supports_masking(self, value: bool) -> None:
        self.__dict__["_supports_masking"] = bool(value)

    @property
    def name(self) -> str:
        return self._name

    @property
    def trainable(self) -> bool:
        # Kept in the instance's dict, where a compiled step guards it: a changed flag compiles again.
        return self.__dict__.get("trainable", True)

    @trainable.setter
    def trainable(self, value: bool) -> None:
        # Keras 3's: the flag goes to every layer inside too, so a frozen model's batch
        # normalization stops updating its moving statistics.
        for _, module in self.named_modules():
            if isinstance(module, Layer):
                module.__dict__["trainable"] = bool(value)

    @property
    def dtype(self) -> str:
        return (self._dtype or as_dtype("float32")).name

    def get_config(self) -> dict[str, Any]:
        """The arguments the layer was made with (Keras's ``get_config``), the defaults of
        those not given (the plain ones: numbers, strings, None), its name, ``trainable``
        and ``dtype``; ``from_config`` makes the same layer again."""
        defaults = _plain_defaults(type(self))
        return {**defaults, "trainable": self.trainable, "dtype": self.dtype, **self._config, "name": self.name}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Layer:
        return cls(**config)

    # Building --------------------------------------------------------------------------

    def build(self, input_shape: Any) -> None:
        """Create the weights for inputs of ``input_shape`` (batch first, None where unknown)."""

    def _build_if_known(self) -> None:
        """Build at once when the input shape was given (Keras's ``input_shape=``)."""
        if self._declared_shape is not None and not self.built:
            self.build((None, *self._declared_shape))
            self.built = True

    def _ensure_built(self, input_shape: Any) -> None:
        if not self.built:
            if input_shape is not None or _takes_no_shape(type(self).build):
                self.build(input_shape) if input_shape is not None else self.build()
            self.built = True

    def add_weight(self, *args: Any, **kwargs: Any) -> Tensor:
        """A new weight held by this layer, with Keras's arguments: ``shape``,
        ``initializer`` (default Glorot uniform; zeros for a non-trainable weight),
        ``dtype``, ``trainable``, ``regularizer``, ``name`` (``add_weight("kernel", shape)``,
        the older order with the name first, works too). A named weight becomes the
        layer's attribute of that name unless it has one."""
        order = _OLD_ADD_WEIGHT if args and isinstance(args[0], str) else _ADD_WEIGHT
        if len(args) > len(order):
            raise TypeError(f"add_weight: too many positional arguments ({len(args)})")
        for key, value in zip(order, args, strict=False):
            if key in kwargs:
                raise TypeError(f"add_weight: got two values for {key!r}")
            kwargs[key] = value
        name, shape = kwargs.pop("name", None), tuple(kwargs.pop("shape", ()) or ())
        trainable = kwargs.pop("trainable", True)
        trainable = True if trainable is None else bool(trainable)
        initializer = kwargs.pop("initializer", None) or ("glorot_uniform" if trainable else "zeros")
        dtype = kwargs.pop("dtype", None) or self._dtype
        regularizer = regularizers.get(kwargs.pop("regularizer", None))
        for ignored in ("autocast", "aggregation", "synchronization", "use_resource"):
            kwargs.pop(ignored, None)  # distribution strategies' settings: one process, nothing to do
        if kwargs.pop("constraint", None) is not None:
            raise NotImplementedError("add_weight: weight constraints are not supported")
        if kwargs:
            raise TypeError(f"add_weight: unexpected argument(s) {sorted(kwargs)}")
        generator = getattr(self, "_generator", None)
        weight = initializers.make_weight(initializer, shape, dtype, generator, trainable, self._build_device)
        if not trainable:
            mark_buffer(weight)
        if regularizer is not None:
            self._penalize(weight, regularizer)
        self._weights_added.append(weight)
        if name:
            _name_weight(weight, f"{self.name}/{name}")
        if name and name.isidentifier() and name not in vars(self) and not hasattr(type(self), name):
            setattr(self, name, weight)
        return weight

    def _penalize(self, weight: Tensor, regularizer: Callable[[Tensor], Tensor]) -> None:
        """Add ``regularizer(weight)`` to the layer's losses (``losses``, what fit minimises)."""
        self.__dict__.setdefault("_weight_regularizers", []).append((weight, regularizer))

    add_variable = add_weight  # Keras 3's name (shape first), and tf.keras's (name first)

    def _items(self) -> Iterator[tuple[str, Any]]:
        """Attributes first; then weights made by ``add_weight`` and held nowhere else."""
        found = list(super()._items())
        yield from found
        seen = {id(value) for _, value in found}
        for i, weight in enumerate(self._weights_added):
            if id(weight) not in seen:
                yield f"weight_{i}", weight

    # Calling ---------------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        training = None
        if kwargs or not all(type(a) is Tensor for a in args):
            if symbolic.is_symbolic((args, kwargs)):
                return self._call_symbolic(args, kwargs)
            training = kwargs.pop("training", None)
            args = _inputs(args, self)
        context = CALL_CONTEXT
        spec = _call_spec(type(self))
        takes_training, trains_by_default = spec.takes_training, spec.trains_by_default
        previous_mask = self._mask_argument(args, kwargs, spec)
        stated = training is not None or (context.depth > 0 and context.stated)
        if training is None:
            training = context.training if context.depth else self.training
            # Keras's last rule: where no caller stated it, a call whose signature defaults
            # to training=True (the augmentation layers') trains, even inside a model.
            training = training or (trains_by_default and not stated)
        training = bool(training)
        previous = context.training, context.stated
        if not context.depth:
            context.generation += 1
        context.depth += 1
        context.training, context.stated = training, stated
        try:
            if not self.built:
                first = tree.leaves(args[0])[0] if args else None
                self._build_device = first.device if isinstance(first, Tensor) else None
                self._ensure_built(_shape_of(args[0]) if args else None)
                if context.depth == 1:
                    context.generation += 1  # what building ran on examples adds no loss
            if takes_training:
                kwargs["training"] = training
            outputs = self.call(*args, **kwargs)
            if self.activity_regularizer is not None:
                for output in tree.leaves(outputs):
                    self.add_loss(self.activity_regularizer(output) / output.shape[0])
            if self.supports_masking:
                if previous_mask is not None or type(self).compute_mask is not Layer.compute_mask:
                    self._attach_mask(args, outputs, previous_mask)
            elif previous_mask is not None:
                warnings.warn(
                    f"Layer '{self.name}' (of type {type(self).__name__}) was passed an input with a mask attached "
                    "to it. However, this layer does not support masking and will therefore destroy the mask "
                    "information. Downstream layers will not see the mask.",
                    stacklevel=2,
                )
        finally:
            context.depth -= 1
            context.training, context.stated = previous
        return outputs

    def _mask_argument(self, args: tuple, kwargs: dict, spec: _CallSpec) -> Any:
        """Keras's masks for this call. Its ``call`` receives, unless given: with one tensor
        argument, that argument's mask as ``mask``; with several, each one's as
        ``<argument>_mask`` where it takes one. The mask the call is about (Keras's
        ``previous_mask``) is ``mask``, else the first argument's."""
        if "mask" in kwargs and not spec.takes_mask:
            raise TypeError(
                f"{self.name}: {type(self).__name__}.call takes no mask; a layer receives masks by "
                "call(self, inputs, mask=None)"
            )
        if spec.takes_mask or spec.named_masks:
            tensors = [a for a in args if _tensor_like(a)]
            tensors += [v for k, v in kwargs.items() if k != "mask" and _tensor_like(v)]
            if len(tensors) == 1 and spec.takes_mask and kwargs.get("mask") is None:
                found = masks.of(tensors[0])
                if found is not None:
                    kwargs["mask"] = found
            elif len(tensors) > 1 and spec.named_masks and spec.signature is not None:
                self._fill_named_masks(args, kwargs, spec)
        given = kwargs.get("mask")
        return given if given is not None else (masks.of(args[0]) if args else None)

    def _fill_named_masks(self, args: tuple, kwargs: dict, spec: _CallSpec) -> None:
        try:
            arguments = spec.signature.bind_partial(self, *args, **kwargs).arguments
        except TypeError:
            return  # the call itself will say what is wrong with its arguments
        for name in spec.named_masks:
            value = arguments.get(name)
            if isinstance(value, Tensor) and value._keras_mask is not None and arguments.get(f"{name}_mask") is None:
                kwargs[f"{name}_mask"] = value._keras_mask

    def _attach_mask(self, args: tuple, outputs: Any, previous_mask: Any) -> None:
        """Set ``compute_mask``'s masks on the outputs, unless the call set them all."""
        if not all(isinstance(o, Tensor) and o._keras_mask is not None for o in tree.leaves(outputs)):
            masks.attach(outputs, self.compute_mask(args[0] if args else None, previous_mask))

    def compute_mask(self, inputs: Any, previous_mask: Any = None) -> Any:
        """The mask of the outputs for ``inputs`` whose mask is ``previous_mask`` (Keras's
        ``compute_mask``): by default the same mask, for a layer that ``supports_masking``."""
        return previous_mask

    def _call_symbolic(self, args: tuple, kwargs: dict) -> Any:
        """Record this call as a node of a functional model (building the layer first)."""
        if args:
            self._ensure_built(_shape_of(args[0]))
        result = symbolic.call_symbolic(self, args, kwargs, layer=self)
        self._inbound_nodes.append(tree.leaves(result)[0].node)
        return result

    def call(self, *args: Any, **kwargs: Any) -> Any:
        """Keras's name for what the layer computes; a layer may define ``forward`` instead."""
        if type(self).forward is Module.forward:
            raise NotImplementedError(f"{type(self).__name__} must define call() (Keras) or forward() (PyTorch)")
        return self.forward(*args, **kwargs)

    # Losses ----------------------------------------------------------------------------

    def add_loss(self, loss: Any) -> None:
        """Add ``loss`` to what training minimises, for this call (Keras's ``add_loss``)."""
        if self._losses_generation != CALL_CONTEXT.generation:
            self._call_losses, self._losses_generation = [], CALL_CONTEXT.generation
        self._call_losses.append(as_tensor(loss))

    def add_metric(self, value: Any, name: str | None = None, aggregation: str = "mean") -> None:
        """Keras 2's ``add_metric``: log ``value``, averaged over the epoch, as ``name``. The
        result of a metric the layer holds needs no name: that metric is logged already."""
        held = [m for m in vars(self).values() if isinstance(m, Metric)]
        if name is None:
            if any(getattr(m, "last_result", None) is value for m in held):
                return
            raise ValueError(f"{self.name}.add_metric: give the metric a name")
        if aggregation != "mean":
            raise NotImplementedError(f"{self.name}.add_metric: aggregation={aggregation!r} (only 'mean')")
        trackers = self.__dict__.setdefault("added_metrics", {})
        if name not in trackers:
            trackers[name] = Mean(name)
        trackers[name].update_state(value)

    @property
    def losses(self) -> list[Tensor]:
        """The losses added during the last outermost call and the weight penalties, of this
        layer and the layers inside it (Keras's ``losses``)."""
        generation = CALL_CONTEXT.generation
        found = [
            loss
            for _, m in self.named_modules()
            if isinstance(m, Layer) and m._losses_generation == generation
            for loss in m._call_losses
        ]
        total = regularizers.penalty(self)
        return found if total is None else [*found, total]

    # Weights ---------------------------------------------------------------------------

    def _weights(self, trainable: bool | None) -> list[Tensor]:
        found, seen = [], set()
        for weight, is_trainable in self._weights_with_trainability(True):
            if id(weight) not in seen and (trainable is None or trainable == is_trainable):
                seen.add(id(weight))
                found.append(weight)
        return found

    def _weights_with_trainability(self, parent_trainable: bool) -> Iterator[tuple[Tensor, bool]]:
        trainable = parent_trainable and self.trainable
        for attribute, value in self._items():
            if isinstance(value, Layer):
                yield from value._weights_with_trainability(trainable)
            elif isinstance(value, Module):
                for key, t in value._state().items():
                    _name_weight(t, f"{self.name}/{attribute}/{key}")
                    yield t, trainable and t.requires_grad
            elif isinstance(value, Tensor) and (value.requires_grad or is_buffer(value)):
                _name_weight(value, f"{self.name}/{attribute}")
                yield value, trainable and value.requires_grad

    @property
    def weights(self) -> list[Tensor]:
        return self._weights(None)

    variables = weights

    @property
    def trainable_weights(self) -> list[Tensor]:
        return self._weights(True)

    trainable_variables = trainable_weights

    @property
    def non_trainable_weights(self) -> list[Tensor]:
        return self._weights(False)

    non_trainable_variables = non_trainable_weights

    def get_weights(self) -> list[np.ndarray]:
        return [np.array(w.numpy()) for w in self.weights]

    def set_weights(self, weights: Sequence[Any]) -> None:
        """Set every weight, in the order of ``get_weights``; counts and shapes must match."""
        mine = self.weights
        if len(weights) != len(mine):
            raise ValueError(f"{self.name}.set_weights: expected {len(mine)} arrays, got {len(weights)}")
        for i, (w, value) in enumerate(zip(mine, weights, strict=True)):
            array = np.asarray(value)
            if array.shape != w.shape:
                raise ValueError(f"{self.name}.set_weights: weight {i} has shape {w.shape}, got {array.shape}")
            set_value(w, array)

    def count_params(self) -> int:
        return sum(w.size for w in self.weights)

    # Functional API --------------------------------------------------------------------

    def _node(self, what: str) -> symbolic.Node:
        """The layer's first call on symbolic inputs, whose ``what`` Keras 3 gives (in a
        Sequential model with an input shape, the call in its graph, made now if need be)."""
        container = self.__dict__.get("_sequential")
        if not self._inbound_nodes and container is not None and container() is not None:
            container()._extend_chain()
        if not self._inbound_nodes:
            raise AttributeError(f"{self.name} has not been called on symbolic inputs: it has no {what} yet")
        return self._inbound_nodes[0]

    @property
    def output(self) -> Any:
        node = self._node("output")
        return tree.unflatten(node.output_structure, node.outputs)

    @property
    def input(self) -> Any:
        node = self._node("input")
        return node.args[0] if len(node.args) == 1 else list(node.args)


def _name_weight(weight: Tensor, path: str) -> None:
    """Give ``weight`` Keras's ``path`` (``"dense/kernel"``; its ``name`` is the last part)
    unless a layer named it first."""
    if weight._keras_path is None:
        weight._keras_path = path.replace(".", "/")


def _tensor_like(value: Any) -> bool:
    """A tensor argument as Keras counts them: a tensor, or a list, tuple or dict of tensors
    (None among them)."""
    if isinstance(value, Tensor):
        return True
    if not isinstance(value, (list, tuple, dict)) or not value:
        return False
    leaves = tree.leaves(value)
    return bool(leaves) and all(leaf is None or isinstance(leaf, Tensor) for leaf in leaves)


def _takes_no_shape(build: Callable) -> bool:
    try:
        return len(inspect.signature(build).parameters) == 1
    except (TypeError, ValueError):
        return False


_ADD_WEIGHT = ("shape", "initializer", "dtype", "trainable", "autocast", "regularizer", "constraint")
_OLD_ADD_WEIGHT = ("name", "shape", "dtype", "initializer", "regularizer", "trainable", "constraint")


def _inputs(args: tuple, layer: Layer) -> tuple:
    """The call's arguments with NumPy arrays as tensors on the layer's device (float64 as
    Keras's float32), as Keras layers take arrays."""
    if not any(isinstance(leaf, np.ndarray) for leaf in tree.leaves(args)):
        return args
    device = layer.device or default_device()

    def convert(value: Any) -> Any:
        if isinstance(value, np.ndarray) and value.dtype.kind in "fiub":
            return as_tensor(value.astype(np.float32) if value.dtype == np.float64 else value, device=device)
        return value

    return tuple(tree.map_leaves(convert, a) for a in args)


_PLAIN_DEFAULTS: dict[type, dict[str, Any]] = {}


def _plain_defaults(cls: type) -> dict[str, Any]:
    """The constructor's defaults that a config can hold as they are, by class."""
    found = _PLAIN_DEFAULTS.get(cls)
    if found is None:
        try:
            parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
        except (TypeError, ValueError):
            parameters = []
        found = _PLAIN_DEFAULTS[cls] = {
            p.name: p.default
            for p in parameters
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and _plain(p.default)
        }
    return found


def _plain(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def _init_arguments(cls: type, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The constructor's arguments by name (``**kwargs`` spread out), for ``get_config``."""
    try:
        bound = inspect.signature(cls.__init__).bind(None, *args, **kwargs)
    except TypeError:
        return dict(kwargs)
    found: dict[str, Any] = {}
    parameters = inspect.signature(cls.__init__).parameters
    for name, value in list(bound.arguments.items())[1:]:
        if parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
            found.update(value)
        elif parameters[name].kind is not inspect.Parameter.VAR_POSITIONAL:
            found[name] = value
    return found


def new_generator(seed: int | None, generator: Generator | None) -> Generator | None:
    """A layer's random stream: the generator given, or one seeded by ``seed``."""
    return generator if generator is not None else (Generator(seed) if seed is not None else None)
