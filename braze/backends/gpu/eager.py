"""Eager GPU execution: each primitive as a single-op kernel, compiled once per signature
(the op, its attributes and its operands' types), as JAX dispatches op by op. Eager and
lazy share the one kernel emitter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from braze.backends import gpu
from braze.backends.gpu.executable import GpuExecutable
from braze.backends.gpu.module import as_computation
from braze.ir.dtypes import as_dtype
from braze.ir.graph import Node, freeze, parameter
from braze.ir.primitive import Aval
from braze.runtime import metrics

_KERNELS: dict[tuple, GpuExecutable] = {}


def apply(name: str, arrays: Sequence[np.ndarray], attrs: dict[str, Any], aval: Aval) -> np.ndarray:
    """``name`` applied to host arrays by its single-op GPU kernel."""
    avals = tuple(Aval(tuple(a.shape), as_dtype(a.dtype)) for a in arrays)
    key = (name, tuple(sorted((k, freeze(v)) for k, v in attrs.items())), avals)
    executable = _KERNELS.get(key)
    if executable is None:
        metrics.count("EagerKernelCompile")
        params = tuple(parameter(k, a) for k, a in enumerate(avals))
        executable = _KERNELS[key] = gpu.compile_graph(as_computation(Node.make(name, params, attrs, aval)))
    (result,) = executable(list(arrays))
    return result
