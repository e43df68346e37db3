"""``scan``, ``fori_loop`` and ``while_loop`` over pytrees of tensors (JAX's ``lax``).

On an eager device the loop runs in Python over the body, one step after another (as JAX's
eager mode does), and gradients flow through the steps' ops. On a lazy device and under
``@braze.jit`` the body is traced once and the loop is one node of the graph (a ``scan`` or
``while_loop`` primitive), compiled as a loop around the body's kernels: its compile time
does not grow with the number of steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from braze import ops, trees
from braze.ir.dtypes import bool_, int32, weak_result_dtype
from braze.ir.errors import ShapeError
from braze.ir.primitive import Aval
from braze.ir.prims import loops
from braze.ir.prims.fusion import get_element
from braze.lax.body import trace, trace_device
from braze.runtime.device import default_device
from braze.tensor import Tensor


class LoopTypeError(ShapeError, TypeError):
    """A body that changes a carry's shape or dtype, or a while condition that is not one
    boolean scalar: a ``TypeError``, as JAX raises, and a ``ShapeError``, as braze raises for
    other shape mismatches. ``changed`` maps the positions of the carries the body changed
    to the avals it gave them, for the carry ``init``."""

    def __init__(self, message: str, init: Any = None, changed: dict[int, Aval] | None = None) -> None:
        super().__init__(message)
        self.init, self.changed = init, changed or {}


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


def _as_tensors(tree: Any, device: Any, weak: dict[int, Any] | None = None) -> Any:
    """``tree`` with its NumPy arrays, NumPy scalars and Python numbers made tensors on
    ``device`` (JAX's loops take them, as ``jnp.asarray`` would); other leaves are left for
    the flattening to refuse by name. ``weak`` maps the id of each tensor made from a Python
    int or float (JAX's weakly typed values) to that number."""
    if isinstance(tree, (list, tuple)):
        return trees.sequence_builder(tree)([_as_tensors(item, device, weak) for item in tree])
    if isinstance(tree, dict):
        return {key: _as_tensors(value, device, weak) for key, value in tree.items()}
    if isinstance(tree, (np.ndarray, np.generic, bool, int, float)):
        made = ops.as_tensor(tree, device=device)
        if weak is not None and not isinstance(tree, (np.generic, bool)):
            weak[id(made)] = tree
        return made
    return tree


def _paths(tree: Any, at: str = "") -> list[str]:
    """Where each tensor of ``tree`` sits (``['h']``, ``[1].total``), in the order of its leaves."""
    if isinstance(tree, Tensor):
        return [at]
    if isinstance(tree, dict):
        return [p for key in trees.dict_keys(tree) for p in _paths(tree[key], f"{at}[{key!r}]")]
    if isinstance(tree, (list, tuple)):
        fields = getattr(type(tree), "_fields", None)
        return [p for k, item in enumerate(tree) for p in _paths(item, f"{at}.{fields[k]}" if fields else f"{at}[{k}]")]
    return []


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
    changed = {k: b.aval for k, (a, b) in enumerate(zip(old, new, strict=True)) if a.aval != b.aval}
    if changed:
        paths = _paths(before)
        turned = "; ".join(
            f"carry {k}{f' (at {paths[k]})' if paths[k] else ''} from {old[k].aval} into {aval}"
            for k, aval in changed.items()
        )
        raise LoopTypeError(f"{what}: the body turns {turned}; a carry keeps its shape and dtype", before, changed)
    return new


def _promoting_weak(run: Callable[[Any], Any], init: Any, weak: dict[int, Any]) -> Any:
    """``run(init)``, or where the body gives a carry made from a Python number another dtype
    of its kind or a higher one, ``run`` again with that carry made in that dtype: JAX
    promotes such weakly typed carries (``fori_loop(0, n, lambda i, v: v + 0.5, 0)`` gives
    a float), and so traces its body a second time too."""
    try:
        return run(init)
    except LoopTypeError as error:
        if error.init is not init:  # a loop inside the body
            raise
        leaves, rebuild = _leaves(init, "")
        promoted = list(leaves)
        for k, aval in error.changed.items():
            value = weak.get(id(leaves[k]))
            if value is not None and aval.shape == () and weak_result_dtype(aval.dtype, value) is aval.dtype:
                promoted[k] = ops.as_tensor(value, dtype=aval.dtype, device=leaves[k].device)
        if all(a is b for a, b in zip(promoted, leaves, strict=True)):
            raise
        return run(rebuild(promoted))


def _is_traced(tensors: list[Tensor]) -> bool:
    devices = [t.device for t in tensors] or [default_device()]
    return any(d.is_lazy for d in devices)


def _results(node: Tensor, count: int) -> list[Tensor]:
    return [get_element.bind(node, index=k) for k in range(count)]


def _step_pair(what: str, result: Any, device: Any) -> tuple[Any, Any]:
    """A body's (carry, y), its NumPy arrays and Python numbers made tensors on ``device``
    (JAX takes them from a body, as from ``init``)."""
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise TypeError(f"{what}: the body must return a pair (carry, y), got {type(result).__name__}")
    return _as_tensors(result[0], device), _as_tensors(result[1], device)


def _check_unroll(unroll: Any) -> None:
    """JAX's ``unroll`` (a bool, or a positive number of steps per iteration) changes how a
    compiled loop is laid out, never its results, so braze checks it as JAX does and runs
    one step per iteration."""
    if isinstance(unroll, bool):
        return
    if not isinstance(unroll, (int, np.integer)) or unroll < 1:
        raise ValueError(f"scan: unroll must be a bool or a positive int, got {unroll!r}")


def scan(
    f: Callable[[Any, Any], tuple[Any, Any]],
    init: Any,
    xs: Any = None,
    length: int | None = None,
    reverse: bool = False,
    unroll: int | bool = 1,
) -> tuple[Any, Any]:
    """Loop ``carry, y = f(carry, x)`` over the leading axis of ``xs`` (JAX's ``lax.scan``):
    the final carry, and the ``y`` of every step stacked along a new leading axis.

    ``init``, ``xs`` and the ``y`` are tensors or nested tuples/lists/dicts of them; ``xs``
    may be None with ``length`` given; ``reverse`` runs the steps from the last to the first
    (the stacked ``y`` stays in the order of ``xs``); ``unroll`` is checked and does not
    change the results. The body must return a carry of the structure, shapes and dtypes of
    ``init`` (a Python number in ``init`` may take the dtype the body gives it, as in JAX)."""
    _check_callable(f, "scan", "f")
    _check_unroll(unroll)
    return _scan("scan", f, init, xs, length, reverse)


def _scan(what: str, f: Callable, init: Any, xs: Any, length: Any, reverse: bool) -> tuple[Any, Any]:
    """``scan``, its errors naming ``what`` (the loop the user called)."""
    device = _home(init, xs)
    weak: dict[int, Any] = {}
    init, xs = _as_tensors(init, device, weak), _as_tensors(xs, device)
    carry_leaves, _ = _leaves(init, what)
    x_leaves, x_tree = _leaves(xs, what)
    steps = _scan_length(what, x_leaves, length)
    run = _scan_traced if _is_traced(carry_leaves + x_leaves) else _scan_eagerly
    loop = _Scan(what, f, x_leaves, x_tree, steps, reverse, device)
    return _promoting_weak(lambda start: run(loop, start), init, weak)


def _scan_length(what: str, x_leaves: list[Tensor], length: Any) -> int:
    """The number of steps: the leading length of every ``xs`` tensor, and ``length`` if given."""
    lengths = {x.shape[0] if x.shape else None for x in x_leaves}
    if None in lengths:
        raise ShapeError(f"{what}: every xs tensor needs a leading axis to step along; one is 0-dimensional")
    if length is not None:
        if not isinstance(length, (int, np.integer)) or isinstance(length, bool) or length < 0:
            raise ValueError(f"{what}: length must be a non-negative integer, got {length!r}")
        lengths.add(int(length))
    if len(lengths) > 1:
        raise ShapeError(f"{what}: xs have different leading lengths {sorted(lengths)} (length={length})")
    if not lengths:
        raise ValueError(f"{what}: give xs or a length")
    (steps,) = lengths
    return steps


class _Scan(NamedTuple):
    """One scan's settings but its carry: the loop the user called (``what``), the body, the
    ``xs`` tensors and their tree, the number of steps, the direction and the device."""

    what: str
    f: Callable
    x_leaves: list[Tensor]
    x_tree: trees.Rebuild
    steps: int
    reverse: bool
    device: Any


def _scan_traced(loop: _Scan, init: Any) -> tuple[Any, Any]:
    """The scan as one ``scan`` node, its body traced once."""
    what, f, x_leaves, x_tree, steps, reverse, device = loop
    carry_leaves, carry_tree = _leaves(init, what)
    x_avals = [Aval(x.shape[1:], x.dtype) for x in x_leaves]
    ys_tree: list[trees.Rebuild] = []
    inside = trace_device(device)

    def step(inputs: list[Tensor]) -> list[Tensor]:
        carry = carry_tree(inputs[: len(carry_leaves)])
        new_carry, y = _step_pair(what, f(carry, x_tree(inputs[len(carry_leaves) :])), inside)
        y_leaves, rebuild = _leaves(y, what)
        ys_tree.append(rebuild)
        return _check_carry(what, init, new_carry) + y_leaves

    body, _ = trace(step, [t.aval for t in carry_leaves] + x_avals, device, what)
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


def _scan_eagerly(loop: _Scan, init: Any) -> tuple[Any, Any]:
    """The scan as a Python loop over the body."""
    what, f, x_leaves, x_tree, steps, reverse, device = loop
    if steps == 0:  # the body runs once on zeros, for the types of its carry (checked, as JAX does) and y
        zeros = x_tree([ops.zeros(x.shape[1:], x.dtype, x.device) for x in x_leaves])
        new_carry, y = _step_pair(what, f(init, zeros), device)
        _check_carry(what, init, new_carry)
        y_leaves, rebuild = _leaves(y, what)
        return init, rebuild([ops.zeros((0, *t.shape), t.dtype, t.device) for t in y_leaves])
    carry = init
    ys: list[list[Tensor]] = []
    for i in reversed(range(steps)) if reverse else range(steps):
        new_carry, y = _step_pair(what, f(carry, x_tree([x[i] for x in x_leaves])), device)
        _check_carry(what, init, new_carry)
        carry = new_carry
        y_leaves, rebuild = _leaves(y, what)
        ys.append(y_leaves)
    if reverse:
        ys.reverse()
    return carry, rebuild([ops.stack(list(column)) for column in zip(*ys, strict=True)])


def fori_loop(lower: int, upper: int, body_fun: Callable[[Tensor, Any], Any], init_val: Any) -> Any:
    """``val = body_fun(i, val)`` for ``i`` from ``lower`` to ``upper - 1`` (JAX's
    ``lax.fori_loop``). With Python integer bounds it is a ``scan`` over the indices (and
    differentiable); with tensor bounds a ``while_loop`` (forward only)."""
    _check_callable(body_fun, "fori_loop", "body_fun")
    for name, bound in (("lower", lower), ("upper", upper)):
        kind = bound.dtype.kind if isinstance(bound, Tensor) else np.asarray(bound).dtype.kind
        if kind not in "iu" or isinstance(bound, (bool, np.bool_)) or np.shape(bound) != ():
            # a tensor is named by its type: its value may be unknown (traced)
            shown = bound.aval if isinstance(bound, Tensor) else repr(bound)
            raise TypeError(f"fori_loop: {name} must be an integer or an integer scalar tensor, got {shown}")
    # init_val goes to the loop as given, so that its Python numbers stay weakly typed there.
    device = _home(init_val, lower, upper)
    if not isinstance(lower, Tensor) and not isinstance(upper, Tensor):
        indices = ops.arange(int(lower), max(int(upper), int(lower)), dtype=int32, device=device)
        carry, _ = _scan("fori_loop", lambda val, i: (body_fun(i, val), None), init_val, indices, None, False)
        return carry
    # The bounds in one dtype, the tensor's (the wider of two tensors'), as JAX converts them.
    dtype = _wider_bound(lower, upper)
    start = ops.astype(lower if isinstance(lower, Tensor) else ops.as_tensor(lower, device=device), dtype)
    stop = ops.astype(upper if isinstance(upper, Tensor) else ops.as_tensor(upper, device=device), dtype)
    _, result = _while_loop(
        "fori_loop",
        lambda state: state[0] < stop,
        lambda state: (state[0] + 1, body_fun(state[0], state[1])),
        (start, init_val),
    )
    return result


def _wider_bound(lower: Any, upper: Any) -> Any:
    dtypes = [b.dtype for b in (lower, upper) if isinstance(b, Tensor)]
    return max(dtypes, key=lambda d: d.itemsize)


def _condition(what: str, value: Any, device: Any) -> Tensor:
    """A condition's value as a tensor on ``device`` (a Python bool is one, as in JAX), which
    must be one boolean scalar (JAX's rule, and the compiled loop's)."""
    value = _as_tensors(value, device)
    if not isinstance(value, Tensor) or value.dtype is not bool_ or value.shape != ():
        described = value.aval if isinstance(value, Tensor) else type(value).__name__
        raise LoopTypeError(f"{what}: the condition must return one boolean scalar, it returns {described}")
    return value


def while_loop(cond_fun: Callable[[Any], Tensor], body_fun: Callable[[Any], Any], init_val: Any) -> Any:
    """``val = body_fun(val)`` while ``cond_fun(val)`` (a boolean scalar) holds (JAX's
    ``lax.while_loop``). Compiled (a lazy device, ``braze.jit``) it is forward only: the
    number of steps is known only when it runs, so reverse-mode gradients through it raise
    (use ``fori_loop`` with static bounds or ``scan``); eagerly its steps are ops like any."""
    _check_callable(cond_fun, "while_loop", "cond_fun")
    _check_callable(body_fun, "while_loop", "body_fun")
    return _while_loop("while_loop", cond_fun, body_fun, init_val)


def _while_loop(what: str, cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """``while_loop``, its errors naming ``what`` (the loop the user called)."""
    device = _home(init_val)
    weak: dict[int, Any] = {}
    init_val = _as_tensors(init_val, device, weak)
    leaves, _ = _leaves(init_val, what)
    loop = _while_traced if _is_traced(leaves) else _while_eagerly
    return _promoting_weak(lambda start: loop(what, cond_fun, body_fun, start, device), init_val, weak)


def _while_eagerly(what: str, cond_fun: Callable, body_fun: Callable, init_val: Any, device: Any) -> Any:
    """The loop in Python, its steps ordinary (differentiable) ops."""
    val = init_val
    while bool(_condition(what, cond_fun(val), device)):
        val = _as_tensors(body_fun(val), device)
        _check_carry(what, init_val, val)
    return val


def _while_traced(what: str, cond_fun: Callable, body_fun: Callable, init_val: Any, device: Any) -> Any:
    """The loop as one ``while_loop`` node, its condition and body traced once."""
    leaves, tree = _leaves(init_val, what)
    avals = [t.aval for t in leaves]
    inside = trace_device(device)

    def condition(inputs: list[Tensor]) -> list[Tensor]:
        return [_condition(what, cond_fun(tree(inputs)), inside)]

    def step(inputs: list[Tensor]) -> list[Tensor]:
        return _check_carry(what, init_val, _as_tensors(body_fun(tree(inputs)), inside))

    cond, _ = trace(condition, avals, device, what)
    body, _ = trace(step, avals, device, what)
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
