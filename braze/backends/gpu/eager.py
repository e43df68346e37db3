"""Eager GPU execution: each primitive as a single-op kernel, compiled once per signature
(the op, its attributes and its operands' types), as JAX dispatches op by op. Eager and
lazy share the one kernel emitter.

Values stay on the device between ops: a tensor's data is uploaded once when it is made
from host data, and downloaded only when it is read; each copy is counted in
``braze.metrics`` (``TransferToDevice``, ``TransferFromDevice``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from braze.backends import gpu
from braze.backends.gpu.executable import DeviceArray, GpuExecutable
from braze.backends.gpu.module import as_computation
from braze.backends.reference.twins import apply_primitive
from braze.ir.graph import Node, freeze, parameter
from braze.ir.primitive import Aval, Literal, Primitive
from braze.ir.prims.sources import constant
from braze.runtime import metrics
from braze.runtime.cache import BoundedCache

_KERNELS: BoundedCache[tuple, GpuExecutable] = BoundedCache(1024)


def apply(primitive: Primitive, arrays: Sequence[DeviceArray], attrs: dict[str, Any], aval: Aval) -> DeviceArray:
    """``primitive`` applied to device arrays by its single-op GPU kernel; no host copy."""
    avals = tuple([a.aval for a in arrays])
    key = (primitive, tuple(sorted((k, freeze(v)) for k, v in attrs.items())), avals)
    executable = _KERNELS.get(key)
    if executable is None:
        metrics.count("EagerKernelCompile")
        params = tuple(parameter(k, a) for k, a in enumerate(avals))
        executable = _KERNELS.put(key, gpu.compile_graph(as_computation(Node.make(primitive, params, attrs, aval))))
    (result,) = executable.run(arrays)
    return result


# Device copies of the 0-d literals eager ops have used (the op library shares one Literal
# per number): an expression's Python scalars are uploaded once, not at every op, and on
# CUDA every upload waits for the stream. Device values are never written in place, so
# every tensor holding a literal may share its copy.
_SCALARS: BoundedCache[Literal, DeviceArray] = BoundedCache(1024, recency=False)


def apply_on_host(
    primitive: Primitive, arrays: Sequence[DeviceArray], attrs: dict[str, Any], aval: Aval
) -> DeviceArray:
    """A primitive that has no kernel (a literal, a collective over the host transport):
    its operands are downloaded, it runs with its NumPy twin, and the result is uploaded
    (a 0-d literal once)."""
    literal = attrs.get("value") if primitive is constant and not aval.shape else None
    found = _SCALARS.get(literal) if literal is not None else None
    if found is not None:
        return found
    result = gpu.upload(apply_primitive(primitive, [a.numpy() for a in arrays], attrs, aval))
    if literal is not None:
        _SCALARS.put(literal, result)
    return result
