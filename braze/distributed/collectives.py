"""All-reduce and broadcast of tensors and of trees of them (lists, tuples, dicts).

``all_reduce`` binds the ``all_reduce`` primitive, so it runs at once on eager tensors and
is recorded into the step on lazy ones and under ``braze.jit``; NumPy arrays and Python
numbers (metrics) are reduced at once. ``broadcast`` is a host-side copy of the root's
values, for starting every rank from the same parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from braze import ops
from braze.autodiff import no_grad
from braze.distributed.world import init
from braze.ir.dtypes import float32
from braze.ir.prims.collectives import REDUCE_OPS
from braze.ir.prims.collectives import all_reduce as all_reduce_p
from braze.tensor import Tensor


def _map(tree: Any, leaf: Callable[[Any], Any]) -> Any:
    if isinstance(tree, dict):
        return {key: _map(value, leaf) for key, value in tree.items()}
    if isinstance(tree, (list, tuple)):
        mapped = [_map(value, leaf) for value in tree]
        return type(tree)(*mapped) if hasattr(tree, "_fields") else type(tree)(mapped)
    return leaf(tree)


def all_reduce(tree: Any, op: str = "sum") -> Any:
    """The sum, mean or maximum over all ranks of every tensor, array or number in ``tree``
    (a new tree of the same structure; every rank must pass the same structure)."""
    if op not in REDUCE_OPS:
        raise ValueError(f"all_reduce: op must be one of {REDUCE_OPS}, got {op!r}")
    world = init()

    def reduce(value: Any) -> Any:
        if isinstance(value, Tensor):
            if op == "mean" and value.dtype.kind in "iu":
                value = ops.astype(value, float32)  # the mean of counts, as braze.mean gives it
            return all_reduce_p.bind(value, op=op)
        array = np.asarray(value)
        if array.dtype.kind not in "if":
            raise TypeError(f"all_reduce: cannot reduce {type(value).__name__} {value!r}")
        if op == "mean" and array.dtype.kind == "i":
            array = array.astype(np.float64)  # the mean of counts, as np.mean gives it
        result = world(array, op)
        return result if isinstance(value, np.ndarray) else result.item()

    return _map(tree, reduce)


def broadcast(tree: Any, root: int = 0) -> Any:
    """Root's values of every tensor, array or number in ``tree`` on every rank; tensors are
    updated in place (as Horovod's ``broadcast_parameters``) and also returned."""
    world = init()
    if not 0 <= root < world.size:
        raise ValueError(f"broadcast: root {root} is not a rank of this {world.size}-process job")

    def copy(value: Any) -> Any:
        if isinstance(value, Tensor):
            with no_grad():
                return value.assign(world.broadcast(value.numpy(), root))
        result = world.broadcast(np.asarray(value), root)
        return result if isinstance(value, np.ndarray) else result.item()

    return _map(tree, copy)
