"""Reverse-mode automatic differentiation, in the forms users know, to any order.

``loss.backward()`` fills ``.grad`` of every leaf that requires grad and
``braze.autograd.grad(outputs, inputs)`` returns the gradients (PyTorch);
``braze.grad(f)``, ``braze.value_and_grad(f)`` and ``braze.vjp(f, *primals)`` differentiate
a function of tensors or nested lists/tuples/dicts of tensors (JAX). All of them walk the
``GradNode`` graph that ``bind`` recorded, in reverse topological order, applying each
primitive's VJP rule. VJP rules bind ordinary primitives, so on a lazy device the backward
pass is traced into the same graph as the forward pass.

Higher orders: a backward run with grad mode on (``create_graph``) hands each rule its
operands as differentiable tensors (the saved values, attached to the nodes or leaves that
produced them), so the ops the rules bind are recorded too and the gradients can be
differentiated again. The functional forms record the backward exactly when the gradient
depends on a tensor that requires grad other than the differentiated arguments (an outer
``grad``'s argument, a module's parameters): a gradient of a gradient is right, and a
first-order gradient costs what it always did. Tangents saved with the nodes are pushed
through the rules too (``braze.tangents``), so a forward-mode derivative of a gradient (a
Hessian-vector product) needs no graph at all.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from braze import backward_replay, lazy, trees
from braze.ir.errors import DeviceError
from braze.ir.prims import structural
from braze.tangents import LEVELS
from braze.tensor import GRAD_MODE, GradNode, Tensor, TensorMarks

Found = dict[int, tuple[Any, Tensor]]  # id of a leaf or of a target's node -> (it, its gradient)


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


def _topological_order(roots: Sequence[GradNode]) -> list[GradNode]:
    """Nodes reachable from ``roots``, each after every node that consumes it (a root that
    another root reads included: its cotangent is complete only after that root's rule ran)."""
    order: list[GradNode] = []
    seen: set[int] = set()
    for root in roots:
        if id(root) in seen:
            continue
        seen.add(id(root))
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


class Targets:
    """The tensors a backward computes gradients for, each found where its cotangent
    arrives: at the leaf itself, or at the node that produced a non-leaf tensor."""

    def __init__(self, tensors: Sequence[Tensor]) -> None:
        self.tensors = list(tensors)
        self.keys = [id(t._grad_node) if t._grad_node is not None else id(t) for t in self.tensors]
        self.nodes = {id(t._grad_node) for t in self.tensors if t._grad_node is not None}
        self.leaves = {id(t) for t in self.tensors if t._grad_node is None}

    def needed(self, order: list[GradNode]) -> set[int]:
        """The nodes through which a cotangent reaches a target: only their rules run."""
        needed: set[int] = set()
        for node in reversed(order):  # producers first
            for parent in node.parents:
                if isinstance(parent, GradNode):
                    if id(parent) in needed or id(parent) in self.nodes:
                        needed.add(id(node))
                        break
                elif parent is not None and id(parent) in self.leaves:
                    needed.add(id(node))
                    break
        return needed


def _accumulate(store: dict, key: int, value: Tensor) -> None:
    existing = store.get(key)
    store[key] = value if existing is None else existing + value


def _add_found(found: Found, key: int, owner: Any, grad: Tensor) -> None:
    previous = found.get(key)
    found[key] = (owner, grad if previous is None else previous[1] + grad)


def _operands(node: GradNode, create_graph: bool) -> tuple[list[Tensor], Tensor]:
    """The tensors a node's VJP rule reads: its saved inputs and output, with the tangents
    saved with them and, when the backward is recorded, the gradient edges they had."""
    if node.in_values is None:
        raise RuntimeError(
            "backward through a graph a second time: its saved values were released by the first "
            "backward; call backward(retain_graph=True) the first time"
        )
    saved = node.tangents
    inputs = []
    for i, (value, aval, parent) in enumerate(zip(node.in_values, node.in_avals, node.parents, strict=True)):
        t = Tensor._view(value, aval, node.device)
        if create_graph and isinstance(parent, GradNode):
            t._grad_node, t.requires_grad = parent, True
        elif create_graph and parent is not None:
            if parent._value is not value:
                raise RuntimeError(
                    "a differentiable backward (create_graph) through a leaf updated in place since its use "
                    "was recorded: its gradient graph would read the new value; update leaves after the "
                    "backward"
                )
            t = parent
        if saved is not None and t is not parent:
            t._tangents = saved[0][i]
        inputs.append(t)
    out = Tensor._view(node.out_value, node.out_aval, node.device)
    if create_graph:
        out._grad_node, out.requires_grad = node, True
    if saved is not None:
        out._tangents = saved[1]
    return inputs, out


def _walk(
    order: list[GradNode],
    seeds: dict[int, Tensor],
    retain_graph: bool,
    targets: Targets | None = None,
    create_graph: bool = False,
    reached: list[int] | None = None,
) -> Found:
    """Apply the VJP rules from the seeded nodes down, for every leaf (``targets`` None)
    or for the targets; ``reached`` collects the positions of the nodes whose rules ran
    (whose saved values were used)."""
    found: Found = {}
    pending = dict(seeds)
    needed = None if targets is None else targets.needed(order)
    for i, node in enumerate(order):
        g = pending.pop(id(node), None)
        if g is None:
            continue
        if targets is not None:
            if id(node) in targets.nodes:
                found[id(node)] = (node, g)
            if id(node) not in needed:
                continue
        if reached is not None:
            reached.append(i)
        inputs, out = _operands(node, create_graph)
        grads = node.primitive.vjp(g, *inputs, out=out, **node.attrs)
        if not retain_graph:
            node.in_values = node.out_value = node.tangents = None
        for parent, grad in zip(node.parents, grads, strict=True):
            if parent is None or grad is None:
                continue
            if isinstance(parent, GradNode):
                if needed is not None and id(parent) not in needed and id(parent) not in targets.nodes:
                    continue
                _accumulate(pending, id(parent), grad() if callable(grad) else grad)
            elif targets is None or id(parent) in targets.leaves:
                _add_found(found, id(parent), parent, grad() if callable(grad) else grad)
    return found


def _reaches_other_leaves(order: list[GradNode], targets: Targets) -> bool:
    """Whether the graph reads a tensor that requires grad besides the targets' leaves: then
    the gradient depends on it, and a later derivative needs the backward recorded."""
    return any(
        parent is not None and not isinstance(parent, GradNode) and id(parent) not in targets.leaves
        for node in order
        for parent in node.parents
    )


def _gradients(
    roots: Sequence[Tensor],
    seeds: Sequence[Tensor],
    targets: Targets | None,
    retain_graph: bool | None,
    create_graph: bool | None,
) -> tuple[Found, bool]:
    """Run the backward pass from ``roots`` (each seeded with its cotangent); return what
    reached the leaves (or the targets), and whether the backward was recorded.
    ``create_graph`` None records it when the gradient depends on more than the targets
    (other leaves, or seeds that require grad);
    ``retain_graph`` None keeps the saved values when it is recorded.

    Unless retained, each node's saved values are released once used (as in PyTorch):
    activations are freed early, and on a lazy device the old parameter buffers lose their
    last holder, so a step can update them in place."""
    found: Found = {}
    seeded: dict[int, Tensor] = {}
    starts: list[GradNode] = []
    for root, seed in zip(roots, seeds, strict=True):
        node = root._grad_node
        if node is None:
            if root.requires_grad and (targets is None or id(root) in targets.leaves):
                _add_found(found, id(root), root, seed)
            continue
        if id(node) not in seeded:
            starts.append(node)
        _accumulate(seeded, id(node), seed)
    if not starts:
        return found, False
    order = _topological_order(starts)
    if create_graph is None:
        # Recorded when the gradient depends on more than the targets: on other leaves, or
        # on a cotangent that is itself differentiated (a derivative of a vjp's pullback).
        create_graph = GRAD_MODE.enabled and (
            any(seed.requires_grad for seed in seeds) or (targets is not None and _reaches_other_leaves(order, targets))
        )
    retain = create_graph if retain_graph is None else retain_graph
    with enable_grad() if create_graph else no_grad():
        if len(starts) == 1 and not create_graph and not LEVELS.open and starts[0].device.is_lazy:
            (seed,) = seeded.values()
            walked = backward_replay.cotangents(
                order, seed, retain, targets, lambda reached: _walk(order, seeded, retain, targets, False, reached)
            )
        else:
            walked = _walk(order, seeded, retain, targets, create_graph)
        for key, (owner, grad) in walked.items():
            _add_found(found, key, owner, grad)
    return found, create_graph


def _seed(root: Tensor, gradient: Any, what: str = "backward") -> Tensor:
    from braze import ops

    if gradient is None:
        if root.size != 1:
            raise RuntimeError(
                f"{what}: gradients can only be created implicitly for a scalar output, "
                f"got shape {root.shape}; pass a gradient of that shape"
            )
        return ops.ones(root.shape, root.dtype, device=root.device)
    seed = ops.as_tensor(gradient, like=root)
    if seed.dtype != root.dtype:  # cast to the output's dtype, as PyTorch's engine does
        seed = ops.astype(seed, root.dtype)
    if seed.device != root.device:
        raise DeviceError(
            f"{what}: the gradient is on {seed.device!r}, the output on {root.device!r}; move it with .to(device)"
        )
    if seed.shape != root.shape:
        raise ValueError(f"{what}: gradient shape {seed.shape} does not match output shape {root.shape}")
    return seed


def _as_list(tensors: Tensor | Sequence[Tensor], what: str) -> list[Tensor]:
    items = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    for k, t in enumerate(items):
        if not isinstance(t, Tensor):
            raise TypeError(f"{what}: expected tensors, got {type(t).__name__} at position {k}")
    return items


def _weights(given: Any, roots: list[Tensor], what: str) -> list[Any]:
    """One cotangent (or None: ones for a scalar) per root."""
    if given is None:
        return [None] * len(roots)
    weights = list(given) if isinstance(given, (list, tuple)) else [given]
    if len(weights) != len(roots):
        raise ValueError(f"{what}: {len(roots)} outputs but {len(weights)} gradients for them")
    return weights


def _inputs(inputs: Tensor | Sequence[Tensor], what: str) -> Targets:
    tensors = _as_list(inputs, what)
    for k, t in enumerate(tensors):
        if not t.requires_grad:
            raise RuntimeError(f"{what}: input {k} does not require grad, so it has no gradient")
    return Targets(tensors)


def backward(
    roots: Tensor | Sequence[Tensor],
    gradients: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Sequence[Tensor] | None = None,
) -> None:
    """Add d(roots)/d(leaf) to ``leaf.grad`` for every leaf that requires grad (for each of
    ``inputs`` only, when given), each root weighted by its entry of ``gradients`` (ones for
    a scalar); with ``create_graph`` the gradients added are differentiable, and the graph's
    saved values are kept unless ``retain_graph`` is False."""
    tensors = _as_list(roots, "backward")
    for root in tensors:
        if not root.requires_grad:
            raise RuntimeError("backward: the tensor does not require grad and has no gradient graph")
    seeds = [
        _seed(root, weight) for root, weight in zip(tensors, _weights(gradients, tensors, "backward"), strict=True)
    ]
    targets = None if inputs is None else _inputs(inputs, "backward")
    found, _ = _gradients(tensors, seeds, targets, retain_graph, create_graph)
    if targets is None:
        receivers = [(leaf, grad) for leaf, grad in found.values()]
    else:
        receivers = [(t, found[key][1]) for t, key in zip(targets.tensors, targets.keys, strict=True) if key in found]
    given: set[int] = set()
    for t, grad in receivers:
        if id(grad) in given and not grad.requires_grad:
            # One gradient for two leaves (``(a + b) * x``): each its own tensor, as PyTorch's,
            # so that updating one in place (``a.grad *= 2``) leaves the other as it is.
            grad = Tensor._make(grad._value, grad._aval, grad.device)
        given.add(id(grad))
        t.grad = grad if t.grad is None else t.grad + grad


def gradients(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool = False,
) -> tuple[Tensor | None, ...]:
    """The sum of the gradients of ``outputs`` (each weighted by its ``grad_outputs`` entry,
    ones for a scalar) with respect to each of ``inputs``, as PyTorch's
    ``torch.autograd.grad``; see :func:`braze.autograd.grad`."""
    roots = _as_list(outputs, "autograd.grad")
    weights = _weights(grad_outputs, roots, "autograd.grad")
    for k, root in enumerate(roots):
        if not root.requires_grad:
            raise RuntimeError(f"autograd.grad: output {k} does not require grad and has no gradient graph")
    targets = _inputs(inputs, "autograd.grad")
    seeds = [_seed(root, weight, "autograd.grad") for root, weight in zip(roots, weights, strict=True)]
    found, _ = _gradients(roots, seeds, targets, retain_graph, create_graph)
    result: list[Tensor | None] = []
    for k, key in enumerate(targets.keys):
        if key in found:
            result.append(found[key][1])
        elif allow_unused:
            result.append(None)
        else:
            raise RuntimeError(
                f"autograd.grad: input {k} was not used to compute the outputs; pass allow_unused=True to get "
                "None for it"
            )
    return tuple(result)


# Functional gradients over nested containers ----------------------------------------


# The variables of the open reverse-mode transforms (grad, vjp, jacrev): a jitted function
# given one runs as plain code, since an executable's results carry no gradient graph.
_VARIABLES = TensorMarks()


def any_differentiated(tensors: Sequence[Tensor]) -> bool:
    """Whether an enclosing derivative will differentiate through one of ``tensors``: a
    reverse-mode transform's variable, or the result of ops recorded on tensors that require
    grad. (Every jitted call asks: outside the transforms no variable is alive.)"""
    if not GRAD_MODE.enabled:
        return False
    if _VARIABLES:
        return any(t._grad_node is not None or t in _VARIABLES for t in tensors)
    return any(t._grad_node is not None for t in tensors)


def _variable(t: Tensor) -> Tensor:
    """A tensor to differentiate with respect to, standing for ``t``: a new leaf of its value
    and tangents, or, when ``t`` requires grad itself (an outer derivative differentiates
    it), an identity op on it, through which the outer derivative sees."""
    if GRAD_MODE.enabled and t.requires_grad:
        return structural.reshape.bind(t, new_sizes=t.shape)
    fresh = Tensor._make(t._value, t._aval, t.device).requires_grad_()
    fresh._tangents = t._tangents
    _VARIABLES.add(fresh)
    return fresh


def _without_graph(t: Tensor) -> Tensor:
    """``t`` cut from a gradient graph that nothing outside will differentiate (its tangents kept)."""
    value = Tensor._make(t._value, t._aval, t.device)
    value._tangents = t._tangents
    return value


def _variables(args: list, positions: Sequence[int], what: str) -> list[tuple[list[Tensor], trees.Rebuild]]:
    """Replace ``args[p]`` for each position by the same structure of variables."""
    structures = []
    for position in positions:
        if position >= len(args):
            raise TypeError(f"{what}: argnums {position} but the function got {len(args)} positional args")
        leaves, rebuild = trees.flatten(args[position], what)
        fresh = [_variable(t) for t in leaves]
        args[position] = rebuild(fresh)
        structures.append((fresh, rebuild))
    return structures


def _rebuilt(structures: list[tuple[list[Tensor], trees.Rebuild]], found: Found) -> list[Any]:
    """The gradients of each structure of variables (zeros where nothing reached one)."""
    from braze import ops

    grads = []
    for fresh, rebuild in structures:
        keys = Targets(fresh).keys
        grads.append(
            rebuild([found[k][1] if k in found else ops.zeros_like(t) for t, k in zip(fresh, keys, strict=True)])
        )
    return grads


def value_and_grad(
    fun: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False
) -> Callable[..., tuple[Any, Any]]:
    """A function returning ``(fun(*args), d fun / d args[argnums])``, as in JAX.

    ``fun`` must return a float scalar tensor (or ``(scalar, aux)`` with ``has_aux``).
    Gradients have the structure of the differentiated arguments; a tensor the output does
    not depend on gets zeros. It composes with itself and the other transformations to any
    order: ``grad(lambda x: grad(f)(x).sum())`` is the sum of the Hessian's columns.
    """
    single = isinstance(argnums, int)
    positions = (argnums,) if single else tuple(argnums)

    @functools.wraps(fun)
    def wrapped(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        from braze import ops

        args = list(args)
        structures = _variables(args, positions, "grad")
        with enable_grad():
            result = fun(*args, **kwargs)
        loss = result[0] if has_aux else result
        if not isinstance(loss, Tensor) or loss.size != 1 or not loss.dtype.is_float:
            raise TypeError("grad: the function must return a float scalar tensor")
        found, recorded = {}, False
        if loss.requires_grad:
            targets = Targets([t for fresh, _ in structures for t in fresh])
            seed = ops.ones(loss.shape, loss.dtype, device=loss.device)
            found, recorded = _gradients([loss], [seed], targets, None, None)
        grads = _rebuilt(structures, found)
        loss = loss if recorded else _without_graph(loss)
        value = (loss, result[1]) if has_aux else loss
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


def vjp(fun: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """``(fun(*primals), vjp_fn)`` as in JAX: ``vjp_fn(cotangent)`` (a cotangent of the
    output's structure) returns one cotangent per primal, of its structure; it may be called
    any number of times. With ``has_aux``, ``fun`` returns ``(output, aux)`` and ``vjp``
    returns ``(output, vjp_fn, aux)``."""
    args = list(primals)
    structures = _variables(args, range(len(args)), "vjp")
    with enable_grad():
        result = fun(*args)
    out = result[0] if has_aux else result
    outs, rebuild_out = trees.flatten(out, "vjp")
    targets = Targets([t for fresh, _ in structures for t in fresh])
    starts = [o._grad_node for o in outs if o._grad_node is not None]
    kept = GRAD_MODE.enabled and bool(starts) and _reaches_other_leaves(_topological_order(starts), targets)

    def vjp_fn(cotangent: Any) -> tuple[Any, ...]:
        cotangents, _ = trees.flatten(cotangent, "vjp")
        if len(cotangents) != len(outs):
            raise ValueError(f"vjp: the output has {len(outs)} tensors but the cotangent {len(cotangents)}")
        roots, seeds = [], []
        for k, (o, ct) in enumerate(zip(outs, cotangents, strict=True)):
            if ct.shape != o.shape or ct.dtype != o.dtype:
                raise ValueError(
                    f"vjp: cotangent {k} is {ct.dtype.name}{ct.shape} but the output is {o.dtype.name}{o.shape}"
                )
            if o.requires_grad:
                roots.append(o)
                seeds.append(ct)
        found, _ = _gradients(roots, seeds, targets, True, None) if roots else ({}, False)
        return tuple(_rebuilt(structures, found))

    value = rebuild_out([o if kept else _without_graph(o) for o in outs])
    return (value, vjp_fn, result[1]) if has_aux else (value, vjp_fn)


class GradientTape:
    """TensorFlow's ``tf.GradientTape``: ``tape.gradient(target, sources)`` after a block
    that computed ``target`` from ``sources`` (parameters, or tensors given to ``watch``).

    braze records every op on tensors that require grad, so the block only marks which
    computation is asked about; a source the target does not depend on gets None, as in
    TensorFlow. Unless ``persistent``, one ``gradient`` call releases what it used. A
    gradient taken inside another tape's block is recorded, so the outer tape can
    differentiate it again (TensorFlow's nested tapes)."""

    _open: list[GradientTape] = []  # the tapes whose blocks are running, innermost last

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True) -> None:
        self.persistent = persistent
        self._used = False

    def __enter__(self) -> GradientTape:
        if not GradientTape._open:
            lazy.step_boundary()  # a hand-written training loop's step starts here
        GradientTape._open.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        GradientTape._open.remove(self)

    def watch(self, tensor: Any) -> None:
        """Record gradients for ``tensor`` (or each tensor of a structure); one computed
        from recorded tensors (WGAN-GP's interpolated images, inside the outer tape) is
        recorded already, and a gradient by it stops there."""
        for t in trees.flatten(tensor, "GradientTape.watch")[0]:
            if not t.requires_grad:
                t.requires_grad_()

    def gradient(self, target: Tensor, sources: Any, output_gradients: Tensor | None = None) -> Any:
        """d(target)/d(source) for each source, in the sources' structure; a target with more
        than one element is summed first, as TensorFlow does."""
        from braze import ops

        if self._used and not self.persistent:
            raise RuntimeError("GradientTape.gradient can only be called once on a tape that is not persistent")
        self._used = True
        leaves, rebuild = trees.flatten(sources, "GradientTape.gradient")
        if not target.requires_grad:
            return rebuild([None] * len(leaves))
        seed = _seed(target, output_gradients) if output_gradients is not None else ops.ones_like(target)
        targets = Targets(leaves)
        outer = any(tape is not self for tape in GradientTape._open)
        found, _ = _gradients([target], [seed], targets, self.persistent or outer, outer)
        return rebuild([found[key][1] if key in found else None for key in targets.keys])
