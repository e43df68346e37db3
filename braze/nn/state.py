"""Module state that is not a computation: which tensors are buffers, and loading values.

A buffer (batch norm's moving statistics) is a tensor a module holds that is moved,
saved and loaded with its parameters but never trained; which tensors are buffers is kept
here by identity, so any container that holds one can say so. Loading a value replaces a
tensor's data on its device without recording an op, so a lazy device's next step does not
trace the load.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from braze.ir.dtypes import storage_array
from braze.tensor import Tensor, TensorMarks, executor_for

_BUFFERS = TensorMarks()  # the tensors that are some module's buffer


def mark_buffer(tensor: Tensor) -> Tensor:
    """Make ``tensor`` a buffer of whichever module holds it."""
    _BUFFERS.add(tensor)
    return tensor


def is_buffer(tensor: Tensor) -> bool:
    return tensor in _BUFFERS


def set_value(tensor: Tensor, values: Any) -> None:
    """Replace ``tensor``'s value by ``values`` (as the user reads them: bfloat16 as its
    float values, rounded here) as data on its device (a load, not a traced op)."""
    array = storage_array(values, tensor.dtype)
    tensor._value = executor_for(tensor.device).from_numpy(np.require(array, requirements="C"), tensor.device)
