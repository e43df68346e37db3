"""``model.summary()``: Keras's table of layers, output shapes and parameter counts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from braze import ops
from braze.autodiff import no_grad
from braze.nn.names import snake_case

_HEADERS = ("Layer (type)", "Output Shape", "Param #")
_MIN_WIDTHS = (29, 26, 10)  # Keras's columns at 65 characters


def _shape(shape: tuple[int, ...]) -> str:
    """Keras writes the batch dimension as None."""
    return str((None, *shape[1:]))


def _rows(model: Any) -> list[tuple[str, str, int]]:
    """(name (type), output shape, parameters) for each layer of a functional model, whose
    output shapes its graph knows, of a Sequential, whose output shapes come from one batch
    of zeros, or for each direct sub-module of another model."""
    graph = getattr(model, "_graph", None)
    if graph is not None:
        return [(_title(layer), _graph_shape(graph, layer), _count(layer)) for layer in graph.layers]
    layers = model.__dict__.get("layers")
    if layers is None:
        children = [m for name, m in model.named_modules() if name and "." not in name]
        return [(_title(m), "multiple", _count(m)) for m in children]
    if getattr(model, "_declared_shape", None) is None:
        raise ValueError(
            f"{_name(model)} has not been built yet: give its first layer an input_shape "
            "(Keras's input_shape=...) or call it on a batch first"
        )
    rows = []
    with no_grad():
        x = ops.zeros((1, *model._declared_shape), device=model.device)
        for layer in layers:
            x = layer(x, training=False) if hasattr(layer, "trainable_weights") else layer(x)
            rows.append((_title(layer), _shape(x.shape), _count(layer)))
    return rows


def _graph_shape(graph: Any, layer: Any) -> str:
    """The output shape of ``layer`` in ``graph``, or "multiple" for a layer called there
    more than once (shared weights)."""
    nodes = [node for node in graph.nodes if node.layer is layer] or layer._inbound_nodes[:1]
    if len(nodes) != 1:
        return "multiple"
    shapes = [str(t.shape) for t in nodes[0].outputs]
    return shapes[0] if len(shapes) == 1 else f"[{', '.join(shapes)}]"


def _name(module: Any) -> str:
    return getattr(module, "name", snake_case(type(module).__name__))


def _title(module: Any) -> str:
    return f"{_name(module)} ({type(module).__name__})"


def _trainable(model: Any) -> int:
    weights = getattr(model, "trainable_weights", None)
    return sum(w.size for w in weights) if weights is not None else model.num_parameters()


def _frozen(model: Any) -> int:
    """Elements of the model's weights that are not trained (buffers, frozen layers)."""
    weights = getattr(model, "non_trainable_weights", None)
    return sum(w.size for w in weights) if weights is not None else sum(b.size for b in model.buffers())


def _count(module: Any) -> int:
    return _trainable(module) + _frozen(module)


def summary(model: Any, print_fn: Callable[[str], Any] = print) -> None:
    """Print Keras's summary of ``model`` line by line through ``print_fn``."""
    rows = [(title, shape, f"{count:,}") for title, shape, count in _rows(model)]
    widths = [
        max([w, len(h) + 1] + [len(r[i]) + 1 for r in rows])
        for i, (w, h) in enumerate(zip(_MIN_WIDTHS, _HEADERS, strict=True))
    ]
    line_length = sum(widths)

    def line(cells: tuple[str, ...]) -> str:
        return "".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()

    trainable, frozen = _trainable(model), _frozen(model)
    print_fn(f'Model: "{_name(model)}"')
    print_fn("_" * line_length)
    print_fn(line(_HEADERS))
    print_fn("=" * line_length)
    for i, row in enumerate(rows):
        print_fn(line(row))
        print_fn(("=" if i == len(rows) - 1 else "_") * line_length)
    if not rows:
        print_fn("=" * line_length)
    print_fn(f"Total params: {trainable + frozen:,}")
    print_fn(f"Trainable params: {trainable:,}")
    print_fn(f"Non-trainable params: {frozen:,}")
    print_fn("_" * line_length)
