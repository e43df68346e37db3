"""Symbolic tensors for Keras's functional API: what ``keras.Input`` returns and what a layer
called on one returns.

A :class:`KerasTensor` has a shape (``None`` where a dimension is not fixed, the batch
first), a dtype and the :class:`Node` that made it: the layer or op, and the arguments it
was called with (other symbolic tensors among them). Calling a layer or a ``keras.ops``
function on symbolic tensors records a node; its output shapes come from running it twice
on zeros of two different sizes for every unfixed dimension (in inference mode, recording no
gradients), so any layer works, including a user's, and a dimension that follows an unfixed
one stays unfixed. The sizes are tried in turn until the call takes them: 4 and 9 first
(apart enough that strides of 2, 3 and 4 keep them apart), then 3 and 5 (a positional
embedding of 8 steps refuses 9), then larger ones (strided, unpadded convolutions need
sequences longer than their windows). ``keras.Model(inputs, outputs)`` later runs the
recorded nodes on real tensors (``braze/nn/functional_api.py``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from braze import ops
from braze.autodiff import no_grad
from braze.ir.dtypes import DType, as_dtype
from braze.nn import tree
from braze.tensor import Tensor

# The two sizes an unfixed dimension takes in the two example runs: the batch's, then the
# other dimensions', tried in turn until the call takes them (see the module's text).
_BATCH_SIZES = (2, 3)
_EXAMPLE_SIZES = ((4, 9), (3, 5), (24, 49), (96, 193))
_COLLAPSED = 2  # an output dimension this small, fixed on the first examples, is checked on larger ones


class _Text:
    """The dtype of a text input, ``keras.Input(dtype="string")``: its values are NumPy
    arrays of ``str`` (braze tensors hold numbers), read by the text layers
    (``TextVectorization``, ``StringLookup``) that turn them into tensors."""

    name = "string"
    is_float = False

    def __eq__(self, other: object) -> bool:
        return other is self or other in ("string", "str")

    __hash__ = object.__hash__

    def __str__(self) -> str:
        return "string"

    def __repr__(self) -> str:
        return "string"


TEXT = _Text()


class Node:
    """One call recorded on symbolic tensors: ``call(*args, **kwargs)``, where ``call`` is a
    layer (``layer`` is then that layer) or an op, and the symbolic tensors it returned."""

    def __init__(self, call: Callable, args: tuple, kwargs: dict, layer: Any = None) -> None:
        self.call, self.args, self.kwargs, self.layer = call, args, kwargs, layer
        self.outputs: list[KerasTensor] = []
        self.output_structure: Any = None

    @property
    def inputs(self) -> list[KerasTensor]:
        return [leaf for leaf in tree.leaves((self.args, self.kwargs)) if isinstance(leaf, KerasTensor)]


class KerasTensor:
    """A symbolic tensor of the functional API: a shape, a dtype and the node that made it."""

    def __init__(self, shape: tuple[int | None, ...], dtype: DType, node: Node | None = None, name: str = "") -> None:
        self.shape, self.dtype, self.name = tuple(shape), dtype, name
        self.node = node
        self._keras_mask: KerasTensor | None = None  # the symbolic mask, where a layer made one

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"<KerasTensor shape={self.shape}, dtype={self.dtype.name}, name={self.name}>"

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise TypeError(
            f"{self!r} is symbolic (made by keras.Input): it has no value. Use it with braze.keras layers or "
            "braze.keras.ops functions, or wrap other code in keras.layers.Lambda"
        )

    def __bool__(self) -> bool:
        raise TypeError(f"{self!r} is symbolic: its truth value is not known until the model runs")

    def __len__(self) -> int:
        if not self.shape or self.shape[0] is None:
            raise TypeError(f"{self!r} has no fixed length")
        return self.shape[0]

    __hash__ = object.__hash__

    def numpy(self) -> np.ndarray:
        return self.__array__()

    def astype(self, dtype: Any) -> KerasTensor:
        return call_symbolic(ops.astype, (self, dtype), {})

    def reshape(self, *shape: Any) -> KerasTensor:
        return call_symbolic(Tensor.reshape, (self, *shape), {})

    def __getitem__(self, index: Any) -> KerasTensor:
        return call_symbolic(ops.getitem, (self, index), {})


def _binary(op: Callable, reflected: bool = False) -> Callable[[KerasTensor, Any], KerasTensor]:
    if reflected:
        return lambda self, other: call_symbolic(op, (other, self), {})
    return lambda self, other: call_symbolic(op, (self, other), {})


for _name, _op in {
    "add": ops.add,
    "sub": ops.subtract,
    "mul": ops.multiply,
    "truediv": ops.divide,
    "floordiv": ops.floor_divide,
    "pow": ops.power,
    "matmul": ops.matmul,
}.items():
    setattr(KerasTensor, f"__{_name}__", _binary(_op))
    setattr(KerasTensor, f"__r{_name}__", _binary(_op, reflected=True))
for _name, _op in {
    "lt": ops.less,
    "le": ops.less_equal,
    "gt": ops.greater,
    "ge": ops.greater_equal,
    "and": ops.logical_and,
    "or": ops.logical_or,
}.items():
    setattr(KerasTensor, f"__{_name}__", _binary(_op))
KerasTensor.__neg__ = lambda self: call_symbolic(ops.negative, (self,), {})  # type: ignore[attr-defined]
KerasTensor.__abs__ = lambda self: call_symbolic(ops.abs, (self,), {})  # type: ignore[attr-defined]
KerasTensor.__invert__ = lambda self: call_symbolic(ops.logical_not, (self,), {})  # type: ignore[attr-defined]


def is_symbolic(structure: Any) -> bool:
    return any(isinstance(leaf, KerasTensor) for leaf in tree.leaves(structure))


def example(symbolic: KerasTensor, run: int, sizes: tuple[int, int] = _EXAMPLE_SIZES[0]) -> Any:
    """Zeros of ``symbolic``'s shape, its unfixed dimensions at their size for ``run``
    (``sizes``: the two runs' sizes of dimensions other than the batch); for a text input,
    texts of as many words as that size, so that their sequences differ in length too."""
    shape = tuple((_BATCH_SIZES if i == 0 else sizes)[run] if d is None else d for i, d in enumerate(symbolic.shape))
    if symbolic.dtype is TEXT:
        return np.full(shape, " ".join(["a"] * sizes[run]), dtype=object).astype(str)
    value = ops.zeros(shape, symbolic.dtype)
    if symbolic._keras_mask is not None:  # every step kept: a layer reading the mask sees one
        value._keras_mask = ops.ones(shape[: symbolic._keras_mask.ndim], "bool")
    return value


class _ExampleRuns(threading.local):
    depth = 0


_EXAMPLE_RUNS = _ExampleRuns()


@contextlib.contextmanager
def example_runs() -> Iterator[None]:
    _EXAMPLE_RUNS.depth += 1
    try:
        yield
    finally:
        _EXAMPLE_RUNS.depth -= 1


def shapes_only() -> bool:
    """Whether this call runs on example inputs to find a symbolic call's output shapes (a
    layer that needs data it has not seen yet, such as an unadapted one, may return
    zeros of the right shape then)."""
    return _EXAMPLE_RUNS.depth > 0


def call_symbolic(call: Callable, args: tuple, kwargs: dict, layer: Any = None) -> Any:
    """Record ``call(*args, **kwargs)`` on symbolic tensors as a node and return its
    symbolic outputs, with their shapes found by example runs (see the module's text)."""
    node = Node(call, args, kwargs, layer)
    unfixed = any(
        None in a.shape[1:] or a.dtype is TEXT for a in tree.leaves((args, kwargs)) if isinstance(a, KerasTensor)
    )
    ladder = _EXAMPLE_SIZES if unfixed else _EXAMPLE_SIZES[:1]
    refused = None
    for k, sizes in enumerate(ladder):
        try:
            runs = [_example_run(call, args, kwargs, layer, run, sizes) for run in range(2)]
            larger = next((pair for pair in ladder[k + 1 :] if pair[0] > sizes[0]), None)
            break
        except Exception as error:  # noqa: BLE001 - raised again below if no sizes suit the call
            refused = refused or error
    else:
        reads_text = getattr(layer, "reads_text", False)
        if not reads_text and any(a.dtype is TEXT for a in tree.leaves((args, kwargs)) if isinstance(a, KerasTensor)):
            what = getattr(layer, "name", getattr(call, "__name__", "the call"))
            raise TypeError(
                f"{what} cannot read a text input ({refused}): braze holds text in NumPy arrays, which only the text "
                "layers (TextVectorization, StringLookup) read in a model; shape text before the model"
            ) from refused
        raise refused
    first, second = (tree.leaves(r) for r in runs)
    for value in first:
        if not isinstance(value, Tensor):
            what = getattr(layer, "name", getattr(call, "__name__", "the call"))
            raise TypeError(
                f"{what} returned a {type(value).__name__} on symbolic inputs; a layer must return tensors (a text "
                "input is read by the layers that turn text into tensors, such as TextVectorization)"
            )
    shapes = [_merged_shape(a.shape, b.shape) for a, b in zip(first, second, strict=True)]
    if larger and any(d is not None and d <= _COLLAPSED for shape in shapes for d in shape[1:]):
        shapes = _checked_larger(shapes, call, args, kwargs, layer, larger)
    name = getattr(layer, "name", getattr(call, "__name__", "op"))
    node.outputs = [KerasTensor(shape, a.dtype, node, name) for shape, a in zip(shapes, first, strict=True)]
    for output, value in zip(node.outputs, first, strict=True):
        if value._keras_mask is not None:
            output._keras_mask = KerasTensor(output.shape[: value._keras_mask.ndim], value._keras_mask.dtype, node)
    node.output_structure = runs[0]
    return tree.unflatten(runs[0], node.outputs)


def _checked_larger(
    shapes: list[tuple], call: Callable, args: tuple, kwargs: dict, layer: Any, sizes: tuple[int, int]
) -> list[tuple]:
    """``shapes`` with the dimensions that differ on examples of larger ``sizes`` unfixed
    too: strides and pooling bring small examples of two sizes down to one size (4 and 9
    steps pooled by 2 three times both give 1), which would look fixed."""
    try:
        runs = [tree.leaves(_example_run(call, args, kwargs, layer, run, sizes)) for run in range(2)]
    except Exception:  # noqa: BLE001 - the call took the smaller examples: their shapes stand
        return shapes
    return [
        tuple(None if d is None or d != x or d != y else d for d, x, y in zip(shape, a.shape, b.shape, strict=True))
        for shape, a, b in zip(shapes, *runs, strict=True)
    ]


def _example_run(call: Callable, args: tuple, kwargs: dict, layer: Any, run: int, sizes: tuple[int, int]) -> Any:
    run_args, run_kwargs = tree.map_leaves(
        lambda a: example(a, run, sizes) if isinstance(a, KerasTensor) else a, (args, kwargs)
    )
    if layer is not None:
        run_kwargs = {**run_kwargs, "training": False}  # no dropout draws, no moving-statistics updates
    with no_grad(), np.errstate(all="ignore"), example_runs():
        return call(*run_args, **run_kwargs)


def _merged_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int | None, ...]:
    return tuple(x if x == y else None for x, y in zip(a, b, strict=True))


def symbolic_op(op: Callable) -> Callable:
    """``op``, recording a node instead when any argument is symbolic (``keras.ops``)."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if is_symbolic((args, kwargs)):
            return call_symbolic(op, args, kwargs)
        return op(*args, **kwargs)

    wrapper.__name__ = wrapper.__qualname__ = getattr(op, "__name__", "op")
    wrapper.__doc__ = op.__doc__
    wrapper.__wrapped__ = op  # type: ignore[attr-defined]
    return wrapper


def spec(shape: Any, dtype: Any = "float32", name: str = "") -> KerasTensor:
    """A symbolic input of ``shape`` (batch first, None where unfixed); ``"string"`` makes
    a text input."""
    kind = TEXT if dtype is TEXT or str(dtype) in ("string", "str") else as_dtype(dtype, "Input")
    return KerasTensor(tuple(None if d is None else int(d) for d in shape), kind, None, name)
