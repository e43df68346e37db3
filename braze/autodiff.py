"""Reverse-mode automatic differentiation, in the two forms users know.

``loss.backward()`` fills ``.grad`` of every leaf that requires grad (PyTorch), and
``braze.grad(f)`` / ``braze.value_and_grad(f)`` return gradients of a function with respect
to tensors or nested lists/tuples/dicts of tensors (JAX). Both walk the ``GradNode`` graph
that ``bind`` recorded, in reverse topological order, applying each primitive's VJP rule.
VJP rules bind ordinary primitives, so on a lazy device the backward pass is traced into the
same graph as the forward pass.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

from braze import backward_replay
from braze.tensor import GRAD_MODE, GradNode, Tensor


@contextlib.contextmanager
def no_grad() -> Iterator[None]:
    """Record no gradients inside the block (optimizer updates, evaluation)."""
    previous, GRAD_MODE.enabled = GRAD_MODE.enabled, False
    try:
        yield
    finally:
        GRAD_MODE.enabled = previous


@contextlib.contextmanager
def enable_grad() -> Iterator[None]:
    """Record operations for autodiff again inside a ``no_grad()`` block (a context manager)."""
    previous, GRAD_MODE.enabled = GRAD_MODE.enabled, True
    try:
        yield
    finally:
        GRAD_MODE.enabled = previous


def _topological_order(root: GradNode) -> list[GradNode]:
    """Nodes reachable from ``root``, each after every node that consumes it."""
    order: list[GradNode] = []
    seen = {id(root)}
    stack: list[tuple[GradNode, int]] = [(root, 0)]
    while stack:
        node, i = stack.pop()
        if i < len(node.parents):
            stack.append((node, i + 1))
            parent = node.parents[i]
            if isinstance(parent, GradNode) and id(parent) not in seen:
                seen.add(id(parent))
                stack.append((parent, 0))
        else:
            order.append(node)
    order.reverse()
    return order


# The ids of the differentiated arguments of each value_and_grad whose function is running.
_DIFFERENTIATING: list[set[int]] = []


def _check_first_order(tensors: list[Tensor], what: str) -> None:
    """Refuse a differentiation inside a function being differentiated when ``tensors`` are,
    or were computed from, the outer one's arguments: its gradient would be computed as a
    constant of the outer function, so the outer gradient would silently lose that term
    (``grad(lambda x: grad(f)(x).sum())`` gave zeros)."""
    outer = set().union(*_DIFFERENTIATING)
    for t in tensors:
        nodes = _topological_order(t._grad_node) if t._grad_node is not None else []
        if id(t) in outer or any(id(p) in outer for node in nodes for p in node.parents if isinstance(p, Tensor)):
            raise NotImplementedError(
                f"higher-order derivatives are not supported yet: {what} inside a function that braze.grad "
                "or braze.value_and_grad is differentiating, of a value that depends on that function's "
                "arguments (a gradient of a gradient)"
            )


def _accumulate(store: dict, key: int, value: Tensor) -> None:
    existing = store.get(key)
    store[key] = value if existing is None else existing + value


def _cotangents(root: Tensor, seed: Tensor, retain_graph: bool = False) -> dict[int, tuple[Tensor, Tensor]]:
    """Run the backward pass from ``root``; return {id(leaf): (leaf, gradient)}.

    Unless ``retain_graph``, each node's saved values are released once used (as in
    PyTorch): activations are freed early, and on a lazy device the old parameter buffers
    lose their last holder, so a step can update them in place."""
    leaves: dict[int, tuple[Tensor, Tensor]] = {}
    if root._grad_node is None:
        if root.requires_grad:
            leaves[id(root)] = (root, seed)
        return leaves
    order = _topological_order(root._grad_node)
    with no_grad():
        if root.device.is_lazy:
            return backward_replay.cotangents(
                order, seed, retain_graph, lambda reached: _walk(order, seed, retain_graph, reached)
            )
        return _walk(order, seed, retain_graph)


def _walk(
    order: list[GradNode], seed: Tensor, retain_graph: bool, reached: list[int] | None = None
) -> dict[int, tuple[Tensor, Tensor]]:
    """Apply the VJP rules from the root (``order[0]``) down; ``reached`` collects the
    positions of the nodes a cotangent reached (whose saved values were used)."""
    leaves: dict[int, tuple[Tensor, Tensor]] = {}
    pending: dict[int, Tensor] = {id(order[0]): seed}
    for i, node in enumerate(order):
        g = pending.pop(id(node), None)
        if g is None:
            continue
        if reached is not None:
            reached.append(i)
        if node.in_values is None:
            raise RuntimeError(
                "backward through a graph a second time: its saved values were released by the first "
                "backward; call backward(retain_graph=True) the first time"
            )
        inputs = [Tensor._view(v, a, node.device) for v, a in zip(node.in_values, node.in_avals, strict=True)]
        out = Tensor._view(node.out_value, node.out_aval, node.device)
        grads = node.primitive.vjp(g, *inputs, out=out, **node.attrs)
        if not retain_graph:
            node.in_values = node.out_value = None
        for parent, grad in zip(node.parents, grads, strict=True):
            if parent is None or grad is None:
                continue
            if callable(grad):
                grad = grad()
            if isinstance(parent, GradNode):
                _accumulate(pending, id(parent), grad)
            else:
                previous = leaves.get(id(parent))
                leaves[id(parent)] = (parent, grad if previous is None else previous[1] + grad)
    return leaves


def _seed(root: Tensor, gradient: Tensor | None) -> Tensor:
    from braze import ops

    if gradient is None:
        if root.size != 1:
            raise RuntimeError(
                f"backward: gradients can only be created implicitly for a scalar output, "
                f"got shape {root.shape}; pass a gradient of that shape"
            )
        return ops.ones(root.shape, root.dtype, device=root.device)
    seed = ops.as_tensor(gradient, like=root)
    if seed.shape != root.shape:
        raise ValueError(f"backward: gradient shape {seed.shape} does not match output shape {root.shape}")
    return seed


def backward(root: Tensor, gradient: Tensor | None = None, retain_graph: bool = False) -> None:
    """Add d(root)/d(leaf) to ``leaf.grad`` for every leaf that requires grad."""
    if not root.requires_grad:
        raise RuntimeError("backward: the tensor does not require grad and has no gradient graph")
    if _DIFFERENTIATING:
        _check_first_order([root], "backward()")
    for leaf, grad in _cotangents(root, _seed(root, gradient), retain_graph).values():
        leaf.grad = grad if leaf.grad is None else leaf.grad + grad


# Functional gradients over nested containers ----------------------------------------


def _flatten(tree: Any) -> tuple[list[Tensor], Callable[[list], Any]]:
    """The tensors of a nested list/tuple/dict, and a function rebuilding it from new leaves."""
    if isinstance(tree, Tensor):
        return [tree], lambda leaves: leaves[0]
    if isinstance(tree, (list, tuple)):
        parts = [_flatten(item) for item in tree]
        return _join(parts, lambda items: type(tree)(items) if isinstance(tree, list) else tuple(items))
    if isinstance(tree, dict):
        keys = list(tree)
        parts = [_flatten(tree[k]) for k in keys]
        return _join(parts, lambda items: dict(zip(keys, items, strict=True)))
    raise TypeError(f"grad: expected tensors or nested lists/tuples/dicts of tensors, got {type(tree).__name__}")


def _join(parts, build) -> tuple[list[Tensor], Callable[[list], Any]]:
    leaves = [leaf for part_leaves, _ in parts for leaf in part_leaves]
    sizes = [len(part_leaves) for part_leaves, _ in parts]

    def unflatten(new_leaves: list) -> Any:
        items, offset = [], 0
        for (_, rebuild), size in zip(parts, sizes, strict=True):
            items.append(rebuild(new_leaves[offset : offset + size]))
            offset += size
        return build(items)

    return leaves, unflatten


def value_and_grad(
    fun: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False
) -> Callable[..., tuple[Any, Any]]:
    """A function returning ``(fun(*args), d fun / d args[argnums])``, as in JAX.

    ``fun`` must return a float scalar tensor (or ``(scalar, aux)`` with ``has_aux``).
    Gradients have the structure of the differentiated arguments; a tensor the output does
    not depend on gets zeros.
    """
    single = isinstance(argnums, int)
    positions = (argnums,) if single else tuple(argnums)

    @functools.wraps(fun)
    def wrapped(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        from braze import ops

        args = list(args)
        structures, given = [], []
        for position in positions:
            if position >= len(args):
                raise TypeError(f"grad: argnums {position} but the function got {len(args)} positional args")
            leaves, rebuild = _flatten(args[position])
            fresh = [Tensor._make(t._value, t._aval, t.device).requires_grad_() for t in leaves]
            args[position] = rebuild(fresh)
            structures.append((fresh, rebuild))
            given += leaves
        _DIFFERENTIATING.append({id(t) for fresh, _ in structures for t in fresh})
        try:
            with enable_grad():
                result = fun(*args, **kwargs)
        finally:
            _DIFFERENTIATING.pop()
        loss = result[0] if has_aux else result
        if not isinstance(loss, Tensor) or loss.size != 1 or not loss.dtype.is_float:
            raise TypeError("grad: the function must return a float scalar tensor")
        if _DIFFERENTIATING:
            _check_first_order([*given, loss], "braze.grad or braze.value_and_grad")
        found = _cotangents(loss, ops.ones(loss.shape, loss.dtype, device=loss.device)) if loss.requires_grad else {}
        grads = []
        for fresh, rebuild in structures:
            grads.append(rebuild([found[id(t)][1] if id(t) in found else ops.zeros_like(t) for t in fresh]))
        value = (loss.detach(), result[1]) if has_aux else loss.detach()
        return value, grads[0] if single else tuple(grads)

    return wrapped


def grad(fun: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """A function returning the gradient of ``fun`` with respect to ``args[argnums]``."""
    both = value_and_grad(fun, argnums, has_aux)

    @functools.wraps(fun)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        value, grads = both(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapped
