"""Collectives: ``all_reduce`` across the replicas of a data-parallel job (XLA's AllReduce,
X10's cross-replica sum).

Every replica runs the same program; an ``all_reduce`` node gives each of them the sum,
mean or maximum of its operand over all replicas. The IR does not know how values travel
between processes: the NumPy twin hands the array to the *transport*, which the runtime
installs when a job starts (MPI). Without one there is a single replica, whose reduction
is its own value, so a data-parallel program also runs, unchanged, as one process.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from braze.ir.errors import ShapeError
from braze.ir.primitive import Aval, Category, Primitive, register
from braze.ir.prims import checks, elementwise

REDUCE_OPS = ("sum", "mean", "max")

# (array, op) -> the reduction of ``array`` over every replica, a new array of its shape and dtype.
Transport = Callable[[np.ndarray, str], np.ndarray]


def _single_replica(array: np.ndarray, op: str) -> np.ndarray:
    return array.copy()


_TRANSPORT: list[Transport] = [_single_replica]


def set_transport(transport: Transport | None) -> None:
    """Install how all-reduces reach the other replicas (None: back to a single replica)."""
    _TRANSPORT[0] = transport or _single_replica


def transport() -> Transport:
    return _TRANSPORT[0]


def _all_reduce_rule(x: Aval, *, op: str) -> Aval:
    if op not in REDUCE_OPS:
        raise ShapeError(f"all_reduce: op must be one of {REDUCE_OPS}, got {op!r}")
    checks.require_kinds("all_reduce", x, "f" if op == "mean" else "if", "a float" if op == "mean" else "a numeric")
    return x


def _all_reduce_impl(x: np.ndarray, *, op: str) -> np.ndarray:
    return _TRANSPORT[0](np.require(x, requirements="C"), op)  # ascontiguousarray makes 0-d 1-d


def _all_reduce_vjp(g, x, out, *, op):
    # Every replica's result depends on every replica's operand: the cotangent of a sum (or
    # mean) is the sum (or mean) of all replicas' cotangents, as JAX's psum transposes to psum.
    if op != "max":
        return (all_reduce.bind(g, op=op),)
    # The maximum's cotangent goes to the replicas (and elements) holding it, shared by ties.
    mask = elementwise.convert.bind(elementwise.eq.bind(x, out), dtype=x.dtype)
    return (all_reduce.bind(g, op="sum") / all_reduce.bind(mask, op="sum") * mask,)


def _all_reduce_jvp(tangents, x, out, *, op):
    if op != "max":
        return all_reduce.bind(tangents[0], op=op)
    # The mean of the tangents of the replicas (and elements) holding the maximum.
    mask = elementwise.convert.bind(elementwise.eq.bind(x, out), dtype=x.dtype)
    return all_reduce.bind(tangents[0] * mask, op="sum") / all_reduce.bind(mask, op="sum")


all_reduce = register(
    Primitive(
        "all_reduce",
        _all_reduce_rule,
        _all_reduce_impl,
        _all_reduce_vjp,
        ("op",),
        category=Category.COLLECTIVE,
        jvp=_all_reduce_jvp,
    )
)

__all__ = ["REDUCE_OPS", "Transport", "all_reduce", "set_transport", "transport"]
