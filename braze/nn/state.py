"""Module state that is not a computation: which tensors are buffers, and loading values.

A buffer (batch norm's moving statistics) is a tensor a module holds that is moved,
saved and loaded with its parameters but never trained; which tensors are buffers is kept
here by identity, so any container that holds one can say so. Loading a value replaces a
tensor's data on its device without recording an op, so a lazy device's next step does not
trace the load.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from braze.ir.dtypes import storage_array
from braze.tensor import Tensor, executor_for

# Tensors that are some module's buffer, by id; an entry goes when its tensor does.
_BUFFERS: dict[int, weakref.ref] = {}


def mark_buffer(tensor: Tensor) -> Tensor:
    """Make ``tensor`` a buffer of whichever module holds it."""
    key = id(tensor)
    _BUFFERS[key] = weakref.ref(tensor, lambda _: _BUFFERS.pop(key, None))
    return tensor


def is_buffer(tensor: Tensor) -> bool:
    ref = _BUFFERS.get(id(tensor))
    return ref is not None and ref() is tensor


def set_value(tensor: Tensor, values: Any) -> None:
    """Replace ``tensor``'s value by ``values`` (as the user reads them: bfloat16 as its
    float values, rounded here) as data on its device (a load, not a traced op)."""
    array = storage_array(values, tensor.dtype)
    tensor._value = executor_for(tensor.device).from_numpy(np.require(array, requirements="C"), tensor.device)
