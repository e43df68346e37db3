"""``model.save("model.keras")`` and ``keras.models.load_model``: a whole model in one file,
with no pickle.

A ``.keras`` file here is a zip archive (written atomically) of ``config.json``, the
model's architecture and compile settings as JSON, and ``model.weights.npz``, its weights
and buffers (and the optimizer's slots) in braze's checkpoint format. The architecture is
Keras's kind of config: each layer's class name and constructor arguments
(``get_config``), and for a functional model every node (which layer, called on which
tensors); a layer class of your own is found by ``custom_objects`` or
``keras.saving.register_keras_serializable``. What has no config (a ``Lambda``'s Python
function, an argument that is an arbitrary object) is an error naming it when saving, not
a file that cannot be loaded. braze's files are not Keras's (whose weights are HDF5).
"""

from __future__ import annotations

import inspect
import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from braze import ops
from braze.ir.errors import BrazeError
from braze.nn import activations, initializers, keras_losses, metrics, regularizers
from braze.nn.checkpoint import CheckpointError, read_start, require_numbers, write_atomically, write_npz
from braze.nn.functional_api import InputLayer
from braze.nn.keras_ops import _WRAPPED
from braze.nn.layer import Layer
from braze.nn.model import KerasSequential, Model, Sequential
from braze.nn.module import warn_if_hdf5
from braze.nn.npz import CORRUPT, MODEL_WEIGHTS, read_member, read_npz
from braze.nn.state import set_value
from braze.nn.symbolic import KerasTensor
from braze.tensor import Tensor

FORMAT = "braze-keras"
_CUSTOM: dict[str, type] = {}
# Arguments that steer only how weights are first drawn: loaded weights replace them.
_SKIPPED = {"generator"}


def register_keras_serializable(package: str = "Custom", name: str | None = None) -> Any:
    """Register a class (a layer or model of your own) so ``load_model`` finds it by name."""

    def register(cls: type) -> type:
        key = name or cls.__name__
        _CUSTOM[key] = _CUSTOM[f"{package}>{key}"] = cls
        return cls

    return register


def get_custom_objects() -> dict[str, type]:
    return _CUSTOM


class CustomObjectScope:
    """``with keras.utils.custom_object_scope({"Name": cls}):``: inside the block,
    ``load_model``, ``from_config`` and ``deserialize`` find these classes by name too."""

    def __init__(self, *objects: dict[str, type]) -> None:
        self._objects = {name: cls for table in objects for name, cls in (table or {}).items()}
        self._saved: dict[str, type] = {}

    def __enter__(self) -> CustomObjectScope:
        self._saved = dict(_CUSTOM)
        _CUSTOM.update(self._objects)
        return self

    def __exit__(self, *exc: Any) -> None:
        # Only this scope's names go; a class registered inside the block stays registered.
        for name in self._objects:
            if name in self._saved:
                _CUSTOM[name] = self._saved[name]
            else:
                _CUSTOM.pop(name, None)


def serialize(layer: Any) -> Any:
    """A layer's, model's or other object's config as JSON-ready values (``keras.layers.serialize``,
    ``keras.saving.serialize_keras_object``)."""
    return _layer_config(layer) if isinstance(layer, Layer) else _encode(layer, type(layer).__name__)


def deserialize(config: Any, custom_objects: dict[str, type] | None = None) -> Any:
    """The object ``serialize`` described, made anew (a layer or model with new weights)."""
    if isinstance(config, dict) and "class_name" in config and _is_layer_config(config, custom_objects or {}):
        return layer_from_config(config, custom_objects)
    return _decode(config, custom_objects or {})


def _is_layer_config(config: dict[str, Any], custom: dict[str, type]) -> bool:
    if "functional" in config or config["class_name"] == "Sequential":
        return True
    cls = _find_class(config["class_name"], custom)
    return isinstance(cls, type) and issubclass(cls, Layer)


def clone_model(model: Layer, input_tensors: Any = None, clone_function: Any = None, **options: Any) -> Layer:
    """A model of the same architecture with new weights (``keras.models.clone_model``)."""
    if input_tensors is not None or clone_function is not None or options:
        given = ["input_tensors"] * (input_tensors is not None) + ["clone_function"] * (clone_function is not None)
        raise NotImplementedError(f"clone_model: {[*given, *options]} are not supported; braze clones the model as is")
    return layer_from_config(_layer_config(model))


def _braze_layer_classes() -> list[type]:
    """Every layer class braze defines."""
    found, stack = [], [Layer]
    while stack:
        cls = stack.pop()
        if cls.__module__.startswith("braze."):
            found.append(cls)
        stack.extend(cls.__subclasses__())
    return found


def _layer_classes() -> dict[str, type]:
    """Every layer class braze defines, by name (the first found where two share one)."""
    found: dict[str, type] = {}
    for cls in _braze_layer_classes():
        found.setdefault(cls.__name__, cls)
    return found


def _qualified(value: Any) -> dict[str, str]:
    """The module of a braze class, saved beside its name: two braze layers share a name
    (``keras.layers.Embedding`` and ``braze.nn.Embedding``), and a config must name its own."""
    module = type(value).__module__
    return {"module": module} if module.startswith("braze.") else {}


_OPS = {
    **_WRAPPED,
    "floor_divide": ops.floor_divide,
    "getitem": ops.getitem,
    "astype": ops.astype,
    "reshape_tensor": Tensor.reshape,
}


# Encoding values ------------------------------------------------------------------------


def _encode(value: Any, where: str) -> Any:
    """``value`` as JSON: numbers, strings, lists, dicts, and objects with a config."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_encode(v, where) for v in value]
    if isinstance(value, dict):
        return {str(k): _encode(v, where) for k, v in value.items()}
    if isinstance(value, slice):
        return {"__slice__": [value.start, value.stop, value.step]}
    if value is Ellipsis:
        return {"__ellipsis__": True}
    if isinstance(value, np.ndarray):  # a config holding a weight's value, as Keras's guides write
        return value.item() if value.ndim == 0 else {"__numpy__": value.tolist(), "dtype": str(value.dtype)}
    if callable(value) and activations.name_of(value) is not None:
        return activations.name_of(value)
    if inspect.isfunction(value) and value.__name__ != "<lambda>":
        return {"__function__": value.__name__}  # found again by custom_objects or registration
    if hasattr(value, "get_config") and not isinstance(value, type):
        return {"class_name": type(value).__name__, "config": _encode(value.get_config(), where), **_qualified(value)}
    raise ValueError(
        f"cannot save {where}: {type(value).__name__} {value!r} has no config (give names or numbers, or an object "
        "with get_config)"
    )


def _decode(value: Any, custom: dict[str, type]) -> Any:
    if isinstance(value, list):
        return [_decode(v, custom) for v in value]
    if not isinstance(value, dict):
        return value
    if "__slice__" in value:
        return slice(*value["__slice__"])
    if "__ellipsis__" in value:
        return Ellipsis
    if "__numpy__" in value:
        return np.asarray(value["__numpy__"], value["dtype"])
    if "__function__" in value:
        return _find_class(value["__function__"], custom)
    if _is_object(value):
        cls = _find_class(value["class_name"], custom, value.get("module"))
        config = {k: _decode(v, custom) for k, v in value["config"].items()}
        return cls.from_config(config) if hasattr(cls, "from_config") else cls(**config)
    return {k: _decode(v, custom) for k, v in value.items()}


def _is_object(value: dict[str, Any]) -> bool:
    """Whether ``value`` is an object's config as ``_encode`` writes it."""
    return {"class_name", "config"} <= set(value) <= {"class_name", "config", "module"}


def _is_encoded(value: Any) -> bool:
    """Whether ``value`` is a dict ``_encode`` wrote for a value that is not a dict."""
    special = ("__slice__", "__ellipsis__", "__numpy__", "__function__")
    return isinstance(value, dict) and (any(key in value for key in special) or _is_object(value))


def _find_class(name: str, custom: dict[str, type], module: str | None = None) -> type:
    if module is not None and name not in custom and name not in _CUSTOM:
        for cls in _braze_layer_classes():
            if cls.__name__ == name and cls.__module__ == module:
                return cls
    for table in (
        custom,
        _CUSTOM,
        _layer_classes(),
        {"L1L2": regularizers.L1L2},
        initializers.CLASSES,
        keras_losses.CLASSES,
        metrics.CLASSES,
        _optimizer_classes(),
        _schedule_classes(),
    ):
        if name in table:
            return table[name]
    raise ValueError(
        f"load_model: unknown class {name!r}: pass custom_objects={{{name!r}: {name}}} or decorate the class with "
        "@keras.saving.register_keras_serializable()"
    )


# Architectures --------------------------------------------------------------------------


def _layer_config(layer: Layer) -> dict[str, Any]:
    if isinstance(layer, Sequential):
        # braze.nn.Sequential (PyTorch's container, training at first) comes back as itself.
        return {"class_name": "Sequential", "config": model_config(layer), "braze_class": type(layer).__name__}
    if is_functional(layer):
        return {"class_name": type(layer).__name__, "functional": model_config(layer), **_qualified(layer)}
    if type(layer).__name__ == "Lambda":
        raise ValueError(f"cannot save {layer.name}: a Lambda layer's Python function has no config")
    config = {k: v for k, v in layer.get_config().items() if k not in _SKIPPED}
    entry = {"class_name": type(layer).__name__, "config": _encode(config, layer.name), **_qualified(layer)}
    if isinstance(layer, Model) and layer.build_input is not None:
        entry["build_input"] = layer.build_input  # a subclassed model's weights exist once it is called
    return entry


def is_functional(model: Layer) -> bool:
    """Whether ``model`` is a functional model: ``Model(inputs, outputs)``, its graph its call."""
    return getattr(model, "_graph", None) is not None and type(model).call is Model.call


def model_config(model: Model) -> dict[str, Any]:
    """A Sequential or functional model's architecture (its ``get_config``): its layers'
    configs and, for a functional model, the graph that connects them."""
    frozen = {} if model.trainable else {"trainable": False}  # a frozen model comes back frozen
    if isinstance(model, Sequential):
        layers = [_layer_config(m) for m in model.layers]
        shape = _encode(model._declared_shape, model.name)
        return {"name": model.name, "layers": layers, "input_shape": shape, **frozen}
    return {**_graph_config(model), **frozen}


def model_from_config(config: dict[str, Any], cls: type, custom_objects: dict[str, type] | None = None) -> Model:
    """The model of class ``cls`` (a ``Sequential``, or a ``Model`` made functional) that
    ``model_config`` describes, with new weights."""
    custom = custom_objects or {}
    layers = [layer_from_config(c, custom) for c in config["layers"]]
    if issubclass(cls, Sequential):
        model = cls(layers, input_shape=config["input_shape"], name=config["name"])
    else:
        model = _functional_from_config(config, layers, cls, custom)
    # The model's own flag only: each layer came back with its own (setting ``trainable``
    # would give them all the model's).
    model.__dict__["trainable"] = bool(config.get("trainable", True))
    return model


def _graph_config(model: Model) -> dict[str, Any]:
    graph = model._graph
    layer_index = {id(layer): i for i, layer in enumerate(graph.layers)}
    tensor_ref: dict[int, Any] = {id(t): {"__input__": i} for i, t in enumerate(graph.input_leaves)}
    op_names = {id(fn): name for name, fn in _OPS.items()}
    nodes = []
    for k, node in enumerate(graph.nodes):
        where = f"a call of {getattr(node.layer, 'name', 'an op')}"
        entry: dict[str, Any] = {
            "args": _refs(list(node.args), tensor_ref, where),
            "kwargs": _refs(node.kwargs, tensor_ref, where),
        }
        if node.layer is not None:
            entry["layer"] = layer_index[id(node.layer)]
        elif id(node.call) in op_names:
            entry["op"] = op_names[id(node.call)]
        else:
            raise ValueError(f"cannot save {model.name}: its graph calls {node.call!r}, which has no name to save")
        nodes.append(entry)
        for j, t in enumerate(node.outputs):
            tensor_ref[id(t)] = {"__node__": [k, j]}
    structure = {
        "inputs": _structure(graph.inputs, tensor_ref),
        "outputs": _structure(graph.outputs, tensor_ref),
    }
    layers = [_layer_config(layer) for layer in graph.layers]
    return {"name": model.name, "layers": layers, "nodes": nodes, **structure}


def _refs(value: Any, refs: dict[int, Any], where: str) -> Any:
    """A node's argument as JSON, its symbolic tensors as references to where they come from."""
    if isinstance(value, KerasTensor):
        return refs[id(value)]
    if isinstance(value, (list, tuple)):
        return [_refs(v, refs, where) for v in value]
    if isinstance(value, dict):
        return {key: _refs(v, refs, where) for key, v in value.items()}
    return _encode(value, where)


def _structure(value: Any, refs: dict[int, Any]) -> Any:
    if isinstance(value, KerasTensor):
        return refs[id(value)]
    if isinstance(value, (list, tuple)):
        return [_structure(v, refs) for v in value]
    return {k: _structure(v, refs) for k, v in value.items()}


def layer_from_config(config: dict[str, Any], custom: dict[str, type] | None = None) -> Layer:
    """The layer (or model) a config describes, built as it was."""
    custom = custom or {}
    name = config["class_name"]
    if "functional" in config:
        cls = _find_class(name, custom, config.get("module")) if name != "Model" else Model
        return model_from_config(config["functional"], cls, custom)
    if name == "Sequential":
        cls = Sequential if config.get("braze_class") == "Sequential" else KerasSequential
        return model_from_config(config["config"], cls, custom)
    cls = _find_class(name, custom, config.get("module"))
    arguments = {k: _decode(v, custom) for k, v in config["config"].items()}
    layer = cls.from_config(arguments)
    if "build_input" in config:
        layer.build_from(config["build_input"])
    return layer


def _functional_from_config(config: dict[str, Any], layers: list[Layer], cls: type, custom: dict[str, type]) -> Model:
    inputs = [layer.symbolic for layer in layers if isinstance(layer, InputLayer)]
    produced: list[list[Any]] = []

    def resolve(value: Any) -> Any:
        if isinstance(value, dict) and "__input__" in value:
            return inputs[value["__input__"]]
        if isinstance(value, dict) and "__node__" in value:
            k, j = value["__node__"]
            return produced[k][j]
        if isinstance(value, list):
            return [resolve(v) for v in value]
        if isinstance(value, dict) and not _is_encoded(value):
            return {key: resolve(v) for key, v in value.items()}
        return _decode(value, custom)

    from braze.nn import tree

    for node in config["nodes"]:
        args, kwargs = resolve(node["args"]), resolve(node["kwargs"])
        call = layers[node["layer"]] if "layer" in node else _symbolic_op(_OPS[node["op"]])
        produced.append(tree.leaves(call(*args, **kwargs)))
    structure = {"inputs": resolve(config["inputs"]), "outputs": resolve(config["outputs"])}
    return cls(structure["inputs"], structure["outputs"], name=config["name"])


def _symbolic_op(fn: Any) -> Any:
    from braze.nn.symbolic import symbolic_op

    return symbolic_op(fn)


def to_json(model: Layer, **dumps: Any) -> str:
    return json.dumps(_layer_config(model), **dumps)


def model_from_json(text: str, custom_objects: dict[str, type] | None = None) -> Layer:
    return layer_from_config(json.loads(text), custom_objects)


# Compile settings and optimizer state -----------------------------------------------------


def _compile_config(model: Any) -> dict[str, Any] | None:
    if not getattr(model, "compiled", False):
        return None
    optimizer = model.optimizer
    inner = getattr(optimizer, "optimizer", optimizer)  # a data-parallel wrapper saves what it wraps
    if not hasattr(inner, "get_config"):
        raise ValueError(f"cannot save the compiled {type(inner).__name__}: it has no get_config")
    metrics_spec, weighted = model.compiled_metrics.specs
    return {
        "optimizer": {"class_name": _optimizer_name(inner), "config": _encode(inner.get_config(), "the optimizer")},
        "loss": _spec(model.loss, keras_losses.CLASSES, "the loss"),
        "loss_weights": _encode(model.compiled_loss.loss_weights, "loss_weights"),
        "metrics": _spec(metrics_spec, metrics.CLASSES, "a metric"),
        "weighted_metrics": _spec(weighted, metrics.CLASSES, "a metric"),
        "jit_compile": model._trainer.jit_compile,
    }


def _optimizer_classes() -> dict[str, type]:
    """Keras's optimizers by their names, braze's PyTorch-style ones as ``braze.optim.X``."""
    from braze import optim

    braze_style = {f"braze.optim.{cls.__name__}": cls for cls in (optim.SGD, optim.Adam, optim.AdamW)}
    return {**optim.keras.CLASSES, **braze_style}


def _schedule_classes() -> dict[str, type]:
    """Keras's learning-rate schedules by their names."""
    from braze.optim import schedules

    return {name: getattr(schedules, name) for name in schedules.__all__ if isinstance(getattr(schedules, name), type)}


def _optimizer_name(optimizer: Any) -> str:
    for name, cls in _optimizer_classes().items():
        if type(optimizer) is cls:
            return name
    return type(optimizer).__name__


def _spec(value: Any, classes: dict[str, type], what: str) -> Any:
    """What ``compile`` was given as a loss or metric (names, lists and dicts of them,
    braze's classes by their config, anything else by its function's name) as JSON."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return [_spec(item, classes, what) for item in value]
    if isinstance(value, dict):
        return {k: _spec(v, classes, what) for k, v in value.items()}
    if classes.get(type(value).__name__) is type(value):
        return {"class_name": type(value).__name__, "config": _encode(value.get_config(), what)}
    return {"function": getattr(value, "__name__", type(value).__name__)}


def _spec_from(value: Any, custom: dict[str, Any], kind: str) -> Any:
    if isinstance(value, list):
        return [_spec_from(v, custom, kind) for v in value]
    if isinstance(value, dict) and "function" in value:
        name = value["function"]
        from braze.nn.losses import LOSSES

        # braze.nn's own losses are saved by their function names (binary_cross_entropy)
        own = {fn.__name__: fn for fn in LOSSES.values()}
        found = (
            custom.get(name)
            or _CUSTOM.get(name)
            or keras_losses.FUNCTIONS.get(name)
            or LOSSES.get(name)
            or own.get(name)
        )
        if found is None:
            raise ValueError(
                f"load_model: the {kind} {name!r} is a function of yours: pass custom_objects={{{name!r}: {name}}}, "
                "or load_model(..., compile=False)"
            )
        return found
    if isinstance(value, dict) and "class_name" not in value:
        return {k: _spec_from(v, custom, kind) for k, v in value.items()}
    return _decode(value, custom)


def _optimizer_state(model: Any) -> dict[str, np.ndarray]:
    """The optimizer's step count and slots, each slot under its parameter's name in the
    model (``optimizer/<name>/<slot>``): the rebuilt optimizer may hold its parameters in
    another order (it meets them in the model's, the trained one in the order it first
    trained them, a frozen layer unfrozen later)."""
    optimizer = getattr(model.optimizer, "optimizer", model.optimizer)
    names = {id(t): name for name, t in model._state().items()}
    state = {"optimizer/iterations": np.array(float(optimizer.iterations.item()))}
    for param, slots in zip(optimizer.params, optimizer.state, strict=True):
        for slot, value in (slots or {}).items():
            state[f"optimizer/{names[id(param)]}/{slot}"] = np.array(value.numpy(), dtype=np.float64)
    return state


def _restore_optimizer(model: Any, arrays: dict[str, np.ndarray]) -> None:
    from braze.optim.optimizer import slot_data

    optimizer = getattr(model.optimizer, "optimizer", model.optimizer)
    if "optimizer/iterations" not in arrays:
        return
    params = model._state()
    position = {id(p): i for i, p in enumerate(optimizer.params)}
    restored: dict[int, dict[str, Tensor]] = {}
    for key, value in arrays.items():
        name, _, slot = key[len("optimizer/") :].rpartition("/")
        if not key.startswith("optimizer/") or not name:
            continue
        param = params.get(name)
        if param is None and name.isdigit() and int(name) < len(optimizer.params):
            param = optimizer.params[int(name)]  # an older file: slots by the optimizer's order
        if param is None or id(param) not in position:
            raise CheckpointError(
                f"the saved optimizer has slots for {name!r}, which this model's optimizer does not train"
            )
        if np.shape(value) not in (param.shape, ()):
            raise CheckpointError(
                f"the saved optimizer's slot {slot!r} of {name!r} is {np.shape(value)}, the weight {param.shape}"
            )
        restored.setdefault(position[id(param)], {})[slot] = slot_data(param, value, optimizer.slot_dtype(slot, param))
    set_value(optimizer.iterations, np.array(_iterations(arrays["optimizer/iterations"]), np.int64))
    for i, slots in restored.items():
        optimizer.state[i] = {**(optimizer.state[i] or {}), **slots}


def _iterations(value: Any) -> int:
    """The saved step count: a whole, non-negative number."""
    count = np.asarray(value)
    if count.shape != () or count.dtype.kind not in "iuf" or not np.isfinite(count) or count < 0 or count != int(count):
        raise CheckpointError(f"the saved optimizer's step count is {value!r}, not a whole number of steps")
    if count > np.iinfo(np.int64).max:
        raise CheckpointError(f"the saved optimizer's step count {value!r} is past int64")
    return int(count)


# Files ----------------------------------------------------------------------------------


def save_model(model: Layer, filepath: str | os.PathLike, overwrite: bool = True, **unused: Any) -> None:
    """Write ``model`` (architecture, weights, compile settings, optimizer state) to a
    ``.keras`` file, atomically."""
    path = Path(filepath)
    if path.suffix not in (".keras", ".h5", ".hdf5"):
        raise ValueError(f"save_model: {path} must end with .keras (weights alone: .npz or .safetensors)")
    warn_if_hdf5(path, "its .keras format (a zip of JSON and .npz)")
    if path.exists() and not overwrite:
        raise FileExistsError(f"save_model: {path} exists and overwrite=False")
    config = {"format": FORMAT, "version": 1, "model": _layer_config(model), "compile": _compile_config(model)}
    state = dict(model.state_dict())
    if config["compile"] is not None:
        state.update(_optimizer_state(model))
    weights = io.BytesIO()
    write_npz(weights, state)

    def write(handle: Any) -> None:
        with zipfile.ZipFile(handle, "w", zipfile.ZIP_STORED) as archive:
            archive.writestr("config.json", json.dumps(config, indent=1))
            archive.writestr(MODEL_WEIGHTS, weights.getvalue())

    write_atomically(path, write)


def load_model(
    filepath: str | os.PathLike, custom_objects: dict[str, Any] | None = None, compile: bool = True, **unused: Any
) -> Layer:
    """The model saved by ``model.save(filepath)``: rebuilt from its config, its weights
    loaded and, if it was compiled (and ``compile``), compiled again with its optimizer's
    state."""
    custom = dict(custom_objects or {})
    read_start(filepath, 0)  # a regular file (a FIFO would block the zip reader)
    try:
        with zipfile.ZipFile(filepath) as archive:
            config = json.loads(read_member(filepath, archive, "config.json"))
            weights = read_member(filepath, archive, MODEL_WEIGHTS)
    except (OSError, KeyError, json.JSONDecodeError, RecursionError, *CORRUPT) as error:
        raise CheckpointError(f"{filepath}: not a model saved by braze's model.save ({error})") from None
    if not isinstance(config, dict) or config.get("format") != FORMAT or not isinstance(config.get("model"), dict):
        found = config.get("format") if isinstance(config, dict) else type(config).__name__
        raise CheckpointError(f"{filepath}: not a model saved by braze (format {found!r})")
    arrays = read_npz(filepath, io.BytesIO(weights))
    require_numbers(filepath, {k: v for k, v in arrays.items() if k != "optimizer/iterations"})
    _refuse_file_names(filepath, config["model"])
    try:
        model = layer_from_config(config["model"], custom)
        model.load_state_dict({k: v for k, v in arrays.items() if not k.startswith("optimizer/")})
        return _compiled(model, config.get("compile") if compile else None, arrays, custom)
    except (KeyError, TypeError, AttributeError, ValueError, RecursionError) as error:
        if isinstance(error, BrazeError):
            raise
        # The config is data from the file: what it holds that braze never writes is the
        # file's fault, named as such (a bug of braze's own would show in its own tests).
        raise CheckpointError(
            f"{filepath}: its model config is not one braze wrote ({type(error).__name__}: {error})"
        ) from error


def _refuse_file_names(filepath: str | os.PathLike, config: Any) -> None:
    """A CheckpointError where a layer's saved vocabulary is a file name: braze saves the
    tokens themselves, so a name is the file's instruction to read another file."""
    if isinstance(config, dict):
        if isinstance(config.get("vocabulary"), str):
            raise CheckpointError(
                f"{filepath}: a layer's vocabulary is the file name {config['vocabulary']!r}; a saved model "
                "holds its tokens, and braze reads no other file a model file names"
            )
        for value in config.values():
            _refuse_file_names(filepath, value)
    elif isinstance(config, list):
        for value in config:
            _refuse_file_names(filepath, value)


def _compiled(model: Layer, settings: Any, arrays: dict[str, np.ndarray], custom: dict[str, Any]) -> Layer:
    """``model`` compiled again as it was saved (``settings``, None for not at all), its
    optimizer's state restored from ``arrays``."""
    if settings is not None:
        optimizer = _decode(settings["optimizer"], custom)
        model.compile(
            optimizer=optimizer,
            loss=_spec_from(settings["loss"], custom, "loss"),
            loss_weights=settings["loss_weights"],
            metrics=_spec_from(settings["metrics"], custom, "metric"),
            weighted_metrics=_spec_from(settings["weighted_metrics"], custom, "metric"),
            jit_compile=settings["jit_compile"],
        )
        _restore_optimizer(model, arrays)
    return model


__all__ = [
    "CustomObjectScope",
    "clone_model",
    "deserialize",
    "get_custom_objects",
    "is_functional",
    "layer_from_config",
    "load_model",
    "model_config",
    "model_from_config",
    "model_from_json",
    "register_keras_serializable",
    "save_model",
    "serialize",
    "to_json",
]
