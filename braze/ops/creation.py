"""Creating tensors: from data, filled, ranges, one-hot."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from braze.ir.dtypes import DEFAULT_FLOAT, as_dtype, default_dtype_for
from braze.ir.errors import DTypeError
from braze.ir.prims import elementwise, sources, structural
from braze.ops import core
from braze.runtime.device import Device, as_device
from braze.tensor import Tensor, user_error


def _shape(shape: Any) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)


def tensor(data: Any, dtype: Any = None, device: Device | str | None = None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (a number, nested list, array or tensor)."""
    if isinstance(data, Tensor):
        out = data.to(device, dtype)
        out = out.detach() if out is data else out
    else:
        out = core.as_tensor(data, dtype=dtype, device=device)
    return out.requires_grad_() if requires_grad else out


def full(shape: Sequence[int] | int, fill_value: bool | int | float, dtype: Any = None, device: Any = None) -> Tensor:
    """A tensor of ``shape`` filled with ``fill_value`` (its dtype from the value unless given)."""
    dt = as_dtype(dtype, "full") if dtype is not None else default_dtype_for(fill_value)
    return core.full(_shape(shape), fill_value, dt, as_device(device))


def zeros(shape: Sequence[int] | int, dtype: Any = DEFAULT_FLOAT, device: Any = None) -> Tensor:
    """A tensor of zeros."""
    return full(shape, 0, as_dtype(dtype, "zeros"), device)


def ones(shape: Sequence[int] | int, dtype: Any = DEFAULT_FLOAT, device: Any = None) -> Tensor:
    """A tensor of ones."""
    return full(shape, 1, as_dtype(dtype, "ones"), device)


def empty(shape: Sequence[int] | int, dtype: Any = DEFAULT_FLOAT, device: Any = None) -> Tensor:
    """PyTorch's ``empty``: a tensor to be filled (by ``nn.init`` or in place); braze's are
    zeros, never whatever memory held before, so a run is reproducible."""
    return full(shape, 0, as_dtype(dtype, "empty"), device)


def zeros_like(x: Tensor, dtype: Any = None) -> Tensor:
    """Zeros of ``x``'s shape, dtype (unless given) and device."""
    return full(x.shape, 0, dtype or x.dtype, x.device)


def ones_like(x: Tensor, dtype: Any = None) -> Tensor:
    """Ones of ``x``'s shape, dtype (unless given) and device."""
    return full(x.shape, 1, dtype or x.dtype, x.device)


def full_like(x: Tensor, fill_value: bool | int | float, dtype: Any = None) -> Tensor:
    """``fill_value`` in ``x``'s shape, dtype (unless given) and device."""
    return full(x.shape, fill_value, dtype or x.dtype, x.device)


def arange(
    start: int | float, stop: int | float | None = None, step: int | float = 1, dtype: Any = None, device: Any = None
) -> Tensor:
    """Evenly spaced values in [start, stop), as ``np.arange``."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    count = max(0, math.ceil((stop - start) / step))
    kind_of = float if any(isinstance(v, float) for v in (start, stop, step)) else int
    dt = as_dtype(dtype, "arange") if dtype is not None else default_dtype_for(kind_of(0))
    target = as_device(device)
    index = sources.iota.bind(shape=(int(count),), dimension=0, dtype=dt, like=target)
    if step != 1:
        index = index * step
    return index + start if start != 0 else index


def one_hot(labels: Tensor, num_classes: int, dtype: Any = DEFAULT_FLOAT) -> Tensor:
    """``out[..., k] = (labels[...] == k)`` as ``dtype``; labels outside [0, n) give zeros."""
    labels = core.as_tensor(labels)
    if labels.dtype.kind != "i":
        raise user_error(DTypeError, f"one_hot: labels must be integers, got {labels.dtype.name}")
    shape = (*labels.shape, int(num_classes))
    classes = sources.iota.bind(shape=shape, dimension=labels.ndim, dtype=labels.dtype, like=labels.device)
    expanded = structural.broadcast_in_dim.bind(labels, shape=shape, broadcast_dimensions=tuple(range(labels.ndim)))
    return elementwise.convert.bind(elementwise.eq.bind(expanded, classes), dtype=as_dtype(dtype, "one_hot"))
