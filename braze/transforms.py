"""Forward mode and the derivatives built from both modes, as JAX spells them: ``jvp``,
``jacfwd``, ``jacrev``, ``hessian`` and ``hvp``.

``jvp`` runs the function once with a tangent on each input (``braze.tangents``); the
Jacobians take one JVP per input element (``jacfwd``) or one VJP per output element
(``jacrev``), so ``jacfwd`` suits functions with few inputs and ``jacrev`` few outputs;
``hessian`` is ``jacfwd`` of ``jacrev``, and ``hvp`` is forward over reverse (a JVP of the
gradient), which costs a small multiple of one gradient. Each is ordinary tensor code, so
all of them nest, run lazily and compile under ``braze.jit`` as one executable.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from braze import trees
from braze.autodiff import GRAD_MODE, grad, vjp
from braze.ir.prims import structural
from braze.tangents import new_level
from braze.tensor import Tensor


def _seeded(x: Tensor, tangent: Any, level: int) -> Tensor:
    """A tensor standing for ``x`` with ``tangent`` at ``level``, its other tangents and (when
    ``x`` requires grad) its gradient edge kept: an identity op on ``x``."""
    from braze import ops

    if not x.dtype.is_float:
        raise TypeError(f"jvp: only float tensors have tangents, got a {x.dtype.name} primal")
    tangent = ops.as_tensor(tangent, like=x)
    if tangent.shape != x.shape or tangent.dtype != x.dtype:
        raise ValueError(
            f"jvp: a tangent must have its primal's shape and dtype: {tangent.dtype.name}{tangent.shape} "
            f"for a {x.dtype.name}{x.shape} primal"
        )
    if GRAD_MODE.enabled and x.requires_grad:
        seeded = structural.reshape.bind(x, new_sizes=x.shape)
    else:
        seeded = Tensor._make(x._value, x._aval, x.device)
        seeded._tangents = x._tangents
    seeded._tangents = {**(seeded._tangents or {}), level: tangent}
    return seeded


def _tangent(out: Tensor, level: int) -> Tensor:
    from braze import ops

    found = out._tangents.get(level) if out._tangents else None
    return ops.zeros_like(out) if found is None else found


def jvp(fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False) -> tuple:
    """``(fun(*primals), the derivative of fun at primals in the direction tangents)``, as
    ``jax.jvp``: ``primals`` and ``tangents`` are sequences of the same structures (tensors
    or nested lists/tuples/dicts of float tensors), the output tangent has the output's
    structure. With ``has_aux``, ``fun`` returns ``(output, aux)`` and ``jvp`` returns
    ``(output, output_tangent, aux)``."""
    if not isinstance(primals, (list, tuple)) or not isinstance(tangents, (list, tuple)):
        raise TypeError("jvp: primals and tangents must be tuples (or lists) of the function's arguments")
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    with new_level() as level:
        args = []
        for k, (primal, tangent) in enumerate(zip(primals, tangents, strict=True)):
            leaves, rebuild = trees.flatten(primal, "jvp")
            directions, _ = _same_structure(primal, tangent, k)
            args.append(rebuild([_seeded(x, t, level) for x, t in zip(leaves, directions, strict=True)]))
        result = fun(*args)
    out = result[0] if has_aux else result
    outs, rebuild_out = trees.flatten(out, "jvp")
    pair = (out, rebuild_out([_tangent(o, level) for o in outs]))
    return (*pair, result[1]) if has_aux else pair


def _same_structure(primal: Any, tangent: Any, k: int) -> tuple[list[Tensor], trees.Rebuild]:
    primal_leaves, _ = trees.flatten(primal, "jvp")
    if isinstance(tangent, Tensor) or not isinstance(tangent, (list, tuple, dict)):
        if not isinstance(primal, Tensor):
            raise ValueError(f"jvp: tangent {k} does not have the structure of its primal")
        return [tangent], lambda leaves: leaves[0]
    leaves, rebuild = trees.flatten(tangent, "jvp")
    if len(leaves) != len(primal_leaves):
        raise ValueError(f"jvp: tangent {k} has {len(leaves)} tensors but its primal {len(primal_leaves)}")
    return leaves, rebuild


def _positions(argnums: int | Sequence[int]) -> tuple[bool, tuple[int, ...]]:
    return (True, (argnums,)) if isinstance(argnums, int) else (False, tuple(argnums))


def _basis(x: Tensor, i: int) -> Tensor:
    """The one-hot tensor of ``x``'s shape, dtype and device with a 1 at flat index ``i``."""
    from braze import ops

    return (ops.arange(x.size, device=x.device) == i).astype(x.dtype).reshape(x.shape)


def _directions(leaves: list[Tensor], rebuild: trees.Rebuild) -> list[Any]:
    """One basis direction of the structure ``leaves`` make per element, in order."""
    from braze import ops

    zeros = [ops.zeros_like(x) for x in leaves]
    return [
        rebuild([_basis(x, i) if m == j else zero for m, zero in enumerate(zeros)])
        for j, x in enumerate(leaves)
        for i in range(x.size)
    ]


def _blocks(outs: list[Tensor], leaves: list[Tensor], rebuild: trees.Rebuild, parts: list, axis: int) -> list[Any]:
    """The Jacobian with respect to one argument, per output leaf: the argument's structure
    of blocks of shape ``out.shape + x.shape``; ``parts[e][k]`` is the part for output leaf
    ``k`` of basis direction ``e``, directions running over the input's elements
    (``axis=-1``, forward mode) or the output's (``axis=0``, reverse mode)."""
    from braze import ops

    def block(k: int, j: int) -> Tensor:
        o, x = outs[k], leaves[j]
        if axis == -1:
            start = sum(leaf.size for leaf in leaves[:j])
            columns = [parts[e][k] for e in range(start, start + x.size)]
        else:
            start = sum(other.size for other in outs[:k])
            columns = [parts[e][j] for e in range(start, start + o.size)]
        if not columns:
            return ops.zeros(o.shape + x.shape, o.dtype, device=o.device)
        return ops.stack(columns, axis=axis).reshape(o.shape + x.shape)

    return [rebuild([block(k, j) for j in range(len(leaves))]) for k in range(len(outs))]


def _assembled(rebuild_out: trees.Rebuild, found: list[list[Any]], single: bool) -> Any:
    """The Jacobians of each argument (``found[p][k]``: argument ``p``, output leaf ``k``)
    nested as JAX nests them: the output's structure outside, then the tuple of arguments
    (for a tuple ``argnums``), then each argument's structure."""
    if single:
        return rebuild_out(found[0])
    return rebuild_out([tuple(per_argument[k] for per_argument in found) for k in range(len(found[0]))])


def jacfwd(fun: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable[..., Any]:
    """The Jacobian of ``fun`` with respect to ``args[argnums]`` by forward mode (one JVP per
    input element), as ``jax.jacfwd``: for an output ``y`` and an input ``x``, a tensor of
    shape ``y.shape + x.shape``; nested structures give nested results (the output's
    structure outside, the input's inside)."""
    single, positions = _positions(argnums)

    @functools.wraps(fun)
    def jacobian(*args: Any) -> Any:
        found = []
        for position in positions:

            def along(value: Any, position: int = position) -> Any:
                return fun(*args[:position], value, *args[position + 1 :])

            leaves, rebuild = trees.flatten(args[position], "jacfwd")
            out, parts = None, []
            for direction in _directions(leaves, rebuild):
                out, tangent = jvp(along, (args[position],), (direction,))
                parts.append(trees.flatten(tangent, "jacfwd")[0])
            outs, rebuild_out = trees.flatten(fun(*args) if out is None else out, "jacfwd")
            found.append(_blocks(outs, leaves, rebuild, parts, axis=-1))
        return _assembled(rebuild_out, found, single)

    return jacobian


def jacrev(fun: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable[..., Any]:
    """The Jacobian of ``fun`` with respect to ``args[argnums]`` by reverse mode (one VJP per
    output element), as ``jax.jacrev``: the same shapes and structures as :func:`jacfwd`."""
    single, positions = _positions(argnums)

    @functools.wraps(fun)
    def jacobian(*args: Any) -> Any:
        def of_differentiated(*chosen: Any) -> Any:
            full = list(args)
            for position, value in zip(positions, chosen, strict=True):
                full[position] = value
            return fun(*full)

        out, pullback = vjp(of_differentiated, *[args[p] for p in positions])
        outs, rebuild_out = trees.flatten(out, "jacrev")
        rows = [pullback(direction) for direction in _directions(outs, rebuild_out)]
        found = []
        for p, position in enumerate(positions):
            leaves, rebuild = trees.flatten(args[position], "jacrev")
            parts = [trees.flatten(row[p], "jacrev")[0] for row in rows]
            found.append(_blocks(outs, leaves, rebuild, parts, axis=0))
        return _assembled(rebuild_out, found, single)

    return jacobian


def hessian(fun: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable[..., Any]:
    """The Hessian of a scalar ``fun`` with respect to ``args[argnums]``: ``jacfwd(jacrev(fun))``,
    as ``jax.hessian``; for an input ``x``, a tensor of shape ``x.shape + x.shape``."""
    return jacfwd(jacrev(fun, argnums), argnums)


def hvp(fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> tuple:
    """The Hessian of a scalar ``fun`` at ``primals`` times ``tangents``, forward over
    reverse (JAX's ``jvp(grad(f), primals, tangents)``): one result per primal, of its
    structure. Its cost is a small multiple of one gradient's, never the Hessian's."""
    if not isinstance(primals, (list, tuple)):
        raise TypeError("hvp: primals must be a tuple (or list) of the function's arguments")
    gradient = grad(fun, argnums=tuple(range(len(primals))))
    return jvp(gradient, primals, tangents)[1]
