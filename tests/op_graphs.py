"""The op table's cases as traced graphs, for backend tests that compile whole tables, and
the comparison every backend's results get against the reference interpreter."""

from __future__ import annotations

import numpy as np

import braze
from braze.ir.dtypes import from_bfloat16, storage_array
from braze.lazy import EXECUTOR, build_graph

TOLERANCE = {"float32": 1e-5, "float64": 1e-12, "bfloat16": 2**-7}  # bfloat16: one unit in its 8th bit


def lazy_tensor(array: np.ndarray, requires_grad: bool = False) -> braze.Tensor:
    """``array`` on the lazy CPU; a uint16 array holds bfloat16 bit patterns."""
    if array.dtype == np.uint16:
        return braze.Tensor.from_numpy(array, braze.LAZY_CPU).requires_grad_(requires_grad)
    return braze.tensor(array, device=braze.LAZY_CPU, requires_grad=requires_grad)


def traced(case, dtype):
    tensors = [lazy_tensor(a) for a in case.inputs(dtype)]
    result = build_graph([case.fn(*tensors)._value])
    EXECUTOR._live.clear()
    return result


def traced_gradients(case, dtype):
    """The graph of the gradients of sum(case(x...) * c) for a fixed random cotangent c."""
    arrays = case.inputs(dtype)
    tensors = [lazy_tensor(a, requires_grad=a.dtype.kind == "f" or a.dtype == np.uint16) for a in arrays]
    out = case.fn(*tensors)
    cotangent = storage_array(np.random.default_rng(1).uniform(-1, 1, out.shape), out.dtype)
    (out * lazy_tensor(cotangent)).sum().backward()
    result = build_graph([t.grad._value for t in tensors if t.requires_grad])
    EXECUTOR._live.clear()
    return result


def assert_matches(got, expected, rtol: float) -> None:
    """Equal shapes and dtypes, values within ``rtol`` relative to the result's scale (sums
    that cancel lose absolute, not relative, precision)."""
    rtol = rtol if any(a.dtype.kind == "f" or a.dtype == np.uint16 for a in expected) else 0
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape and g.dtype == e.dtype
        g, e = (from_bfloat16(a) if a.dtype == np.uint16 else a for a in (g, e))  # bfloat16 by value
        scale = float(np.nanmax(np.abs(e), initial=0.0, where=np.isfinite(e))) if e.size else 0.0
        np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol * scale, equal_nan=True)
