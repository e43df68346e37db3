"""Loops with a body traced once (JAX's ``jax.lax`` control flow): ``scan``, ``fori_loop``
and ``while_loop`` over tensors and nested tuples, lists and dicts of them. On a lazy device
or under ``@braze.jit`` a loop is one node of the graph, whatever its number of steps."""

from braze.lax import gradient, tangent  # noqa: F401 - install the loops' VJP and JVPs
from braze.lax.control_flow import fori_loop, scan, while_loop

__all__ = ["fori_loop", "scan", "while_loop"]
