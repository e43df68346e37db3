"""A compiled GPU module: one launch sequence over one device arena.

The arena (every temporary of the step, at the buffer assignment's offsets) and the
constants are allocated once, when the executable is made. ``run`` takes device arrays and
returns new ones, with no host copy (eager tensors and chained steps stay on the device);
``__call__`` takes and returns NumPy arrays, copying in and out, each copy counted in
``braze.metrics`` as X10 counts them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from braze.backends.gpu.module import ModulePlan
from braze.ir.dtypes import as_dtype, storage_dtype
from braze.ir.primitive import Aval
from braze.runtime import metrics


class DeviceArray:
    """An array in a GPU runtime's memory; freed with the object."""

    __slots__ = ("runtime", "buffer", "aval")

    def __init__(self, runtime: Any, aval: Aval, buffer: Any = None) -> None:
        self.runtime = runtime
        self.aval = aval
        self.buffer = runtime.allocate(aval.nbytes) if buffer is None else buffer

    @staticmethod
    def from_numpy(runtime: Any, array: np.ndarray) -> DeviceArray:
        array = np.require(array, requirements="C")  # ascontiguousarray would make a 0-d array 1-d
        result = DeviceArray(runtime, Aval(tuple(array.shape), storage_dtype(array.dtype)))
        runtime.upload(result.buffer, array)
        metrics.count("TransferToDevice")
        return result

    def numpy(self) -> np.ndarray:
        metrics.count("TransferFromDevice")
        return self.runtime.download(self.buffer, self.aval)

    def __reduce__(self) -> tuple:
        """Copied (``copy.deepcopy`` of a model) or pickled through the host: the copy gets a
        buffer of its own on this process's GPU runtime (two owners of one buffer would
        release it twice)."""
        from braze.backends.gpu import upload

        return upload, (self.numpy(),)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    def copy(self) -> DeviceArray:
        """A new device array holding this one's values."""
        copy = DeviceArray(self.runtime, self.aval)
        self.runtime.copy(self.buffer, copy.buffer, self.aval.nbytes)
        return copy

    def __del__(self) -> None:
        buffer, self.buffer = getattr(self, "buffer", None), None
        if buffer is not None:
            self.runtime.release(buffer)


class GpuExecutable:
    target = "gpu"

    def __init__(self, plan: ModulePlan, kernels: dict[str, Any], runtime: Any) -> None:
        self.graph = plan.graph
        self.plan = plan
        self.runtime = runtime
        self.launches = [(kernels[k.name], k.groups, k.local_size) for k in plan.kernels]
        self.arena = DeviceArray(runtime, Aval((plan.arena_bytes,), as_dtype("bool")))
        self.constants = [DeviceArray.from_numpy(runtime, c) for c in plan.constants]

    def run(self, inputs: Sequence[DeviceArray]) -> list[DeviceArray]:
        """Launch every kernel over device inputs; the results stay on the device."""
        results = [DeviceArray(self.runtime, node.aval) for node in self.plan.results]
        buffers = [self.arena.buffer] + [a.buffer for a in (*inputs, *results, *self.constants)]
        arguments = self.runtime.arguments(buffers)
        for kernel, groups, local in self.launches:
            self.runtime.launch(kernel, groups, local, arguments)
        outputs = []
        for output in self.plan.outputs:
            if output.kind == "result":
                outputs.append(results[output.index])
            elif output.kind == "param":
                outputs.append(inputs[output.index].copy())
            else:
                outputs.append(DeviceArray.from_numpy(self.runtime, output.array))
        return outputs

    def __call__(self, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        return run_on_host(self, args)


def run_on_host(executable: Any, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """An executable's ``run`` on NumPy arrays: copied to the device, the results back."""
    inputs = [DeviceArray.from_numpy(executable.runtime, a) for a in args]
    results = [r.numpy() for r in executable.run(inputs)]
    for output, param in executable.graph.donated.items():
        # Input/output aliasing, as the other backends give it: the result lives on in
        # the donated argument's array (unless that array is a read-only host copy of
        # device data, which must keep the value it was read with).
        if args[param].flags.writeable:
            np.copyto(args[param], results[output])
            results[output] = args[param]
    return results
