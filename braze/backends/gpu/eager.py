"""Eager GPU execution: each primitive as a single-op kernel, compiled once per signature
(the op, its attributes and its operands' types), as JAX dispatches op by op. Eager and
lazy share the one kernel emitter.

Values stay on the device between ops: a tensor's data is uploaded once when it is made
from host data, and downloaded only when it is read; each copy is counted in
``braze.metrics`` (``TransferToDevice``, ``TransferFromDevice``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from braze.backends import gpu
from braze.backends.gpu.executable import DeviceArray, GpuExecutable
from braze.backends.gpu.module import as_computation
from braze.backends.reference import apply_primitive
from braze.ir.graph import Node, freeze, parameter
from braze.ir.primitive import Aval, Primitive
from braze.runtime import metrics

_KERNELS: dict[tuple, GpuExecutable] = {}


def apply(name: str, arrays: Sequence[DeviceArray], attrs: dict[str, Any], aval: Aval) -> DeviceArray:
    """``name`` applied to device arrays by its single-op GPU kernel; no host copy."""
    avals = tuple([a.aval for a in arrays])
    key = (name, tuple(sorted((k, freeze(v)) for k, v in attrs.items())), avals)
    executable = _KERNELS.get(key)
    if executable is None:
        metrics.count("EagerKernelCompile")
        params = tuple(parameter(k, a) for k, a in enumerate(avals))
        executable = _KERNELS[key] = gpu.compile_graph(as_computation(Node.make(name, params, attrs, aval)))
    (result,) = executable.run(arrays)
    return result


def apply_on_host(
    primitive: Primitive, arrays: Sequence[DeviceArray], attrs: dict[str, Any], aval: Aval
) -> DeviceArray:
    """A primitive that has no kernel (a literal, a collective over the host transport):
    its operands are downloaded, it runs with its NumPy twin, and the result is uploaded."""
    return upload(apply_primitive(primitive, [a.numpy() for a in arrays], attrs, aval))


def upload(array: np.ndarray) -> DeviceArray:
    """``array`` copied to the device (a counted ``TransferToDevice``)."""
    return DeviceArray.from_numpy(gpu.runtime(), array)
