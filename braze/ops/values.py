"""Functions whose result's shape depends on their operands' values (``nonzero``,
``unique_*``, boolean-mask indexing, ``repeat`` by an array of counts) read those values on
the host. On a lazy device that is a barrier: every pending computation of the device runs
first (``braze.metrics`` counts each as ``DataDependentShape``), and the results go on
as device data. Under ``@jit`` it is an error that says so, since a compiled call cannot
know the shape it would produce."""

from __future__ import annotations

import numpy as np

from braze import lazy
from braze.ir.errors import TraceError
from braze.runtime import metrics
from braze.tensor import Tensor, user_location


def read(op: str, x: Tensor) -> np.ndarray:
    """``x``'s values for ``op``, whose result's shape depends on them."""
    if lazy.is_recording():
        raise TraceError(
            f"{op}: the shape of its result depends on the values of its operand, which a compiled call "
            f"cannot know (at {user_location()}); call it outside @jit, or keep shapes fixed (where() "
            "selects by a mask without changing the shape)"
        )
    metrics.count("DataDependentShape")
    if x.device.backend == "LAZY":
        lazy.barrier(x.device)
    return np.asarray(x.numpy())


def constant_like(array: np.ndarray, like: Tensor) -> Tensor:
    """``array`` (values read and computed on the host) as a tensor on ``like``'s device."""
    return Tensor.from_numpy(np.require(array, requirements="C"), like.device)
