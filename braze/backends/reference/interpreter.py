"""The reference interpreter: evaluates any graph node by node with NumPy.

It is the oracle every pass and every backend is tested against, and the executor of the
lazy device when ``BRAZE_BACKEND=reference``. Intermediate arrays are released as soon as
their last reader has run, so peak memory follows the graph's live set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from braze.backends.reference.twins import apply_primitive
from braze.ir.graph import Graph, use_counts
from braze.ir.primitive import Category
from braze.ir.prims.fusion import fusion


def evaluate(graph: Graph, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run ``graph`` on ``args`` (one array per parameter) and return its outputs."""
    if len(args) != len(graph.params):
        raise ValueError(f"the graph takes {len(graph.params)} arguments, got {len(args)}")
    values: dict[int, Any] = {}
    remaining = use_counts(graph)
    for p, arg in zip(graph.params, args, strict=True):
        array = np.asarray(arg)
        if array.shape != p.aval.shape or array.dtype != p.aval.dtype.numpy:
            raise ValueError(f"argument {p.attr('index')} is {array.dtype}{array.shape}, the graph expects {p.aval}")
        values[id(p)] = array
    for node in graph.nodes():
        if node.op.category is Category.PARAMETER:
            continue
        inputs = [values[id(i)] for i in node.inputs]
        if node.op is fusion:
            results = evaluate(node.attr("computation"), inputs)
            values[id(node)] = results[0] if len(results) == 1 else tuple(results)
        else:  # get_element's twin picks one of a multi-output fusion's results
            values[id(node)] = apply_primitive(node.op, inputs, node.attr_dict, node.aval)
        for i in node.inputs:
            remaining[id(i)] -= 1
            if remaining[id(i)] == 0:
                del values[id(i)]
    return [values[id(o)] for o in graph.outputs]


class ReferenceExecutable:
    """A graph prepared for repeated evaluation by the interpreter."""

    target = "reference"

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        # The parameters whose buffers take a result (donated ones): callers hand over a
        # buffer nobody else holds there (``lazy.run``, ``braze.jit``).
        self.overwritten = frozenset(graph.donated.values())

    def run(self, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        return self(args)

    def __call__(self, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        results = evaluate(self.graph, args)
        for output, param in self.graph.donated.items():
            # Input/output aliasing: the result lives on in the donated argument's buffer,
            # unless that buffer is read-only (it keeps its value; the result is its own).
            target = args[param]
            if not (isinstance(target, np.ndarray) and target.flags.writeable):
                continue
            for k, result in enumerate(results):
                # Another result that is the argument, or a view of it (a reshape), keeps
                # the value the argument had: it is copied before the argument is written.
                if k != output and isinstance(result, np.ndarray) and np.may_share_memory(result, target):
                    results[k] = np.array(result)
            np.copyto(target, results[output])
            results[output] = target
        return results


def compile_graph(graph: Graph) -> ReferenceExecutable:
    return ReferenceExecutable(graph)
