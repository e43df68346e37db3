"""``model.summary()``: Keras's table of layers, output shapes and parameter counts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from braze import ops
from braze.autodiff import no_grad
from braze.nn.names import snake_case
from braze.tensor import Tensor

_HEADERS = ("Layer (type)", "Output Shape", "Param #")
_MIN_WIDTHS = (29, 26, 10)  # Keras's columns at 65 characters


def _shape(shape: tuple[int, ...]) -> str:
    """Keras writes the batch dimension as None."""
    return str((None, *shape[1:]))


def _rows(model: Any) -> list[tuple[str, str, int]]:
    """(name (type), output shape, parameters) for each layer of a Sequential, whose output
    shapes come from one batch of zeros, or for each direct sub-module of another model."""
    layers = getattr(model, "layers", None)
    if layers is None:
        children = [m for name, m in model.named_modules() if name and name.count(".") == 1]
        return [(_title(m), "multiple", _count(m)) for m in children]
    if getattr(model, "input_shape", None) is None:
        raise ValueError(
            f"{_name(model)} has not been built yet: give its first layer an input_shape "
            "(Keras's input_shape=...) or call it on a batch first"
        )
    rows = []
    with no_grad():
        x = ops.zeros((1, *model.input_shape), device=model.device)
        for layer in layers:
            x = layer(x)
            rows.append((_title(layer), _shape(x.shape), _count(layer)))
    return rows


def _name(module: Any) -> str:
    return getattr(module, "name", snake_case(type(module).__name__))


def _title(module: Any) -> str:
    return f"{_name(module)} ({type(module).__name__})"


def _frozen(model: Any) -> int:
    """Elements of the float tensors held by the model that take no gradient."""
    return sum(
        value.size
        for _, module in model.named_modules()
        for _, value in module._items()
        if isinstance(value, Tensor) and value.dtype.is_float and not value.requires_grad
    )


def _count(module: Any) -> int:
    return module.num_parameters() + _frozen(module)


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

    trainable, frozen = model.num_parameters(), _frozen(model)
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
