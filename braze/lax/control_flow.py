"""``scan``, ``fori_loop`` and ``while_loop`` over pytrees of tensors (JAX's ``lax``).

On an eager device the loop runs in Python over the body, one step after another (as JAX's
eager mode does), and gradients flow through the steps' ops. On a lazy device and under
``@braze.jit`` the body is traced once and the loop is one node of the graph (a ``scan`` or
``while_loop`` primitive), compiled as a loop around the body's kernels: its compile time
does not grow with the number of steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from braze import ops, trees
from braze.ir.dtypes import bool_, int32
from braze.ir.errors import ShapeError
from braze.ir.primitive import Aval
from braze.ir.prims import loops
from braze.ir.prims.fusion import get_element
from braze.lax.body import trace
from braze.runtime.device import default_device
from braze.tensor import Tensor


def _structure(tree: Any) -> Any:
    """A nested container's shape without its tensors, for comparing a body's carry with its input."""
    if isinstance(tree, Tensor):
        return "tensor"
    if isinstance(tree, (list, tuple)):
        return (type(tree).__name__, tuple(_structure(item) for item in tree))
    if isinstance(tree, dict):
        return ("dict", tuple((k, _structure(tree[k])) for k in trees.dict_keys(tree)))
    return type(tree).__name__


def _leaves(tree: Any, what: str) -> tuple[list[Tensor], trees.Rebuild]:
    return trees.flatten(tree, what, none_is_empty=True)


def _as_tensors(tree: Any, device: Any) -> Any:
    """``tree`` with its NumPy arrays, NumPy scalars and Python numbers made tensors on
    ``device`` (JAX's loops take them, as ``jnp.asarray`` would); other leaves are left for
    the flattening to refuse by name."""
    if isinstance(tree, (list, tuple)):
        return trees.sequence_builder(tree)([_as_tensors(item, device) for item in tree])
    if isinstance(tree, dict):
        return {key: _as_tensors(value, device) for key, value in tree.items()}
    if isinstance(tree, (np.ndarray, np.generic, bool, int, float)):
        return ops.as_tensor(tree, device=device)
    return tree


def _home(*tree: Any) -> Any:
    """The device of the first tensor in ``tree``, else the default device."""
    leaves = _tensors_in(tree)
    return leaves[0].device if leaves else default_device()


def _tensors_in(tree: Any) -> list[Tensor]:
    if isinstance(tree, Tensor):
        return [tree]
    items = tree.values() if isinstance(tree, dict) else tree if isinstance(tree, (list, tuple)) else ()
    return [t for item in items for t in _tensors_in(item)]


def _check_callable(fn: Any, what: str, name: str) -> None:
    if not callable(fn):
        raise TypeError(f"{what}: {name} must be a callable, got {type(fn).__name__}")


def _check_carry(what: str, before: Any, after: Any) -> list[Tensor]:
    """The new carry's tensors, after checking it has the structure, shapes and dtypes of the old."""
    if _structure(before) != _structure(after):
        raise TypeError(
            f"{what}: the body returned a carry of structure {_structure(after)}, its input has {_structure(before)}"
        )
    old, _ = _leaves(before, what)
    new, _ = _leaves(after, what)
    for k, (a, b) in enumerate(zip(old, new, strict=True)):
        if a.aval != b.aval:
            raise ShapeError(
                f"{what}: the body turns carry {k} from {a.aval} into {b.aval}; a carry keeps its shape and dtype"
            )
    return new


def _is_traced(tensors: list[Tensor]) -> bool:
    devices = [t.device for t in tensors] or [default_device()]
    return any(d.is_lazy for d in devices)


def _results(node: Tensor, count: int) -> list[Tensor]:
    return [get_element.bind(node, index=k) for k in range(count)]


def _step_pair(what: str, result: Any) -> tuple[Any, Any]:
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise TypeError(f"{what}: the body must return a pair (carry, y), got {type(result).__name__}")
    return result[0], result[1]


def scan(
    f: Callable[[Any, Any], tuple[Any, Any]],
    init: Any,
    xs: Any = None,
    length: int | None = None,
    reverse: bool = False,
) -> tuple[Any, Any]:
    """Loop ``carry, y = f(carry, x)`` over the leading axis of ``xs`` (JAX's ``lax.scan``):
    the final carry, and the ``y`` of every step stacked along a new leading axis.

    ``init``, ``xs`` and the ``y`` are tensors or nested tuples/lists/dicts of them; ``xs``
    may be None with ``length`` given; ``reverse`` runs the steps from the last to the first
    (the stacked ``y`` stays in the order of ``xs``). The body must return a carry of the
    structure, shapes and dtypes of ``init``."""
    _check_callable(f, "scan", "f")
    device = _home(init, xs)
    init, xs = _as_tensors(init, device), _as_tensors(xs, device)
    carry_leaves, carry_tree = _leaves(init, "scan")
    x_leaves, x_tree = _leaves(xs, "scan")
    lengths = {x.shape[0] if x.shape else None for x in x_leaves}
    if None in lengths:
        raise ShapeError("scan: every xs tensor needs a leading axis to step along; one is 0-dimensional")
    if length is not None:
        if not isinstance(length, (int, np.integer)) or isinstance(length, bool) or length < 0:
            raise ValueError(f"scan: length must be a non-negative integer, got {length!r}")
        lengths.add(int(length))
    if len(lengths) > 1:
        raise ShapeError(f"scan: xs have different leading lengths {sorted(lengths)} (length={length})")
    if not lengths:
        raise ValueError("scan: give xs or a length")
    (steps,) = lengths
    if not _is_traced(carry_leaves + x_leaves):
        return _scan_eagerly(f, init, x_leaves, x_tree, steps, reverse)
    x_avals = [Aval(x.shape[1:], x.dtype) for x in x_leaves]
    ys_tree: list[trees.Rebuild] = []

    def step(inputs: list[Tensor]) -> list[Tensor]:
        carry = carry_tree(inputs[: len(carry_leaves)])
        new_carry, y = _step_pair("scan", f(carry, x_tree(inputs[len(carry_leaves) :])))
        y_leaves, rebuild = _leaves(y, "scan")
        ys_tree.append(rebuild)
        return _check_carry("scan", init, new_carry) + y_leaves

    body, _ = trace(step, [t.aval for t in carry_leaves] + x_avals, device, "scan")
    node = loops.scan.bind(
        *carry_leaves,
        *x_leaves,
        *body.captured,
        body=body.graph,
        length=steps,
        reverse=bool(reverse),
        carries=len(carry_leaves),
        xs=len(x_leaves),
    )
    results = _results(node, len(body.graph.outputs))
    return carry_tree(results[: len(carry_leaves)]), ys_tree[0](results[len(carry_leaves) :])


def _scan_eagerly(f: Callable, init: Any, x_leaves: list[Tensor], x_tree: trees.Rebuild, steps: int, reverse: bool):
    if steps == 0:  # the body runs once on zeros, for the structure and types of its y
        _, y = _step_pair("scan", f(init, x_tree([ops.zeros(x.shape[1:], x.dtype, x.device) for x in x_leaves])))
        y_leaves, rebuild = _leaves(y, "scan")
        return init, rebuild([ops.zeros((0, *t.shape), t.dtype, t.device) for t in y_leaves])
    carry = init
    ys: list[list[Tensor]] = []
    for i in reversed(range(steps)) if reverse else range(steps):
        new_carry, y = _step_pair("scan", f(carry, x_tree([x[i] for x in x_leaves])))
        _check_carry("scan", init, new_carry)
        carry = new_carry
        y_leaves, rebuild = _leaves(y, "scan")
        ys.append(y_leaves)
    if reverse:
        ys.reverse()
    return carry, rebuild([ops.stack(list(column)) for column in zip(*ys, strict=True)])


def fori_loop(lower: int, upper: int, body_fun: Callable[[Tensor, Any], Any], init_val: Any) -> Any:
    """``val = body_fun(i, val)`` for ``i`` from ``lower`` to ``upper - 1`` (JAX's
    ``lax.fori_loop``). With Python integer bounds it is a ``scan`` over the indices (and
    differentiable); with tensor bounds a ``while_loop`` (forward only)."""
    _check_callable(body_fun, "fori_loop", "body_fun")
    init_val = _as_tensors(init_val, _home(init_val, lower, upper))
    for name, bound in (("lower", lower), ("upper", upper)):
        kind = bound.dtype.kind if isinstance(bound, Tensor) else np.asarray(bound).dtype.kind
        if kind not in "iu" or isinstance(bound, (bool, np.bool_)):
            raise TypeError(f"fori_loop: {name} must be an integer or an integer tensor, got {bound!r}")
    if not isinstance(lower, Tensor) and not isinstance(upper, Tensor):
        indices = ops.arange(int(lower), max(int(upper), int(lower)), dtype=int32, device=_device_of(init_val))
        carry, _ = scan(lambda val, i: (body_fun(i, val), None), init_val, indices)
        return carry
    device = _device_of(init_val)
    # The bounds in one dtype, the tensor's (the wider of two tensors'), as JAX converts them.
    dtype = _wider_bound(lower, upper)
    start = ops.astype(lower if isinstance(lower, Tensor) else ops.as_tensor(lower, device=device), dtype)
    stop = ops.astype(upper if isinstance(upper, Tensor) else ops.as_tensor(upper, device=device), dtype)
    _, result = while_loop(
        lambda state: state[0] < stop,
        lambda state: (state[0] + 1, body_fun(state[0], state[1])),
        (start, init_val),
    )
    return result


def _wider_bound(lower: Any, upper: Any) -> Any:
    dtypes = [b.dtype for b in (lower, upper) if isinstance(b, Tensor)]
    return max(dtypes, key=lambda d: d.itemsize)


def _device_of(tree: Any) -> Any:
    leaves, _ = _leaves(tree, "fori_loop")
    return leaves[0].device if leaves else default_device()


def _condition_holds(value: Any) -> bool:
    """A condition's value, which must be one boolean scalar (JAX's rule, and the compiled loop's)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if not isinstance(value, Tensor) or value.dtype is not bool_ or value.shape != ():
        described = value.aval if isinstance(value, Tensor) else type(value).__name__
        raise ShapeError(f"while_loop: the condition must return one boolean scalar, it returns {described}")
    return bool(value)


def while_loop(cond_fun: Callable[[Any], Tensor], body_fun: Callable[[Any], Any], init_val: Any) -> Any:
    """``val = body_fun(val)`` while ``cond_fun(val)`` (a boolean scalar) holds (JAX's
    ``lax.while_loop``). Compiled (a lazy device, ``braze.jit``) it is forward only: the
    number of steps is known only when it runs, so reverse-mode gradients through it raise
    (use ``fori_loop`` with static bounds or ``scan``); eagerly its steps are ops like any."""
    _check_callable(cond_fun, "while_loop", "cond_fun")
    _check_callable(body_fun, "while_loop", "body_fun")
    init_val = _as_tensors(init_val, _home(init_val))
    leaves, tree = _leaves(init_val, "while_loop")
    if not _is_traced(leaves):
        val = init_val
        while _condition_holds(cond_fun(val)):
            val = body_fun(val)
            _check_carry("while_loop", init_val, val)
        return val
    avals = [t.aval for t in leaves]
    device = leaves[0].device if leaves else default_device()

    def condition(inputs: list[Tensor]) -> list[Tensor]:
        return [ops.as_tensor(cond_fun(tree(inputs)))]

    cond, _ = trace(condition, avals, device, "while_loop")
    body, _ = trace(
        lambda inputs: _check_carry("while_loop", init_val, body_fun(tree(inputs))), avals, device, "while_loop"
    )
    node = loops.while_loop.bind(
        *leaves,
        *cond.captured,
        *body.captured,
        cond=cond.graph,
        body=body.graph,
        carries=len(leaves),
        cond_consts=len(cond.captured),
    )
    return tree(_results(node, len(leaves)))
