"""Shared validation for shape rules: every failure names the primitive and what it got."""

from __future__ import annotations

from collections.abc import Sequence

from braze.ir.dtypes import DType
from braze.ir.errors import DTypeError, ShapeError
from braze.ir.primitive import Aval


def fmt_shape(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def same_shapes(op: str, *avals: Aval) -> tuple[int, ...]:
    first = avals[0].shape
    if any(a.shape != first for a in avals[1:]):
        shapes = " and ".join(fmt_shape(a.shape) for a in avals)
        raise ShapeError(f"{op}: operand shapes differ: {shapes}")
    return first


def same_dtypes(op: str, *avals: Aval) -> DType:
    first = avals[0].dtype
    if any(a.dtype != first for a in avals[1:]):
        dtypes = " and ".join(a.dtype.name for a in avals)
        raise DTypeError(
            f"{op}: operand dtypes differ: {dtypes}; braze never mixes dtypes implicitly, "
            "convert one operand with .astype()"
        )
    return first


def require_kinds(op: str, aval: Aval, kinds: str, what: str) -> None:
    if aval.dtype.kind not in kinds:
        raise DTypeError(f"{op}: expected {what} operand, got {aval.dtype.name}{fmt_shape(aval.shape)}")


def check_axes(op: str, axes: Sequence[int], ndim: int) -> tuple[int, ...]:
    """Validate non-negative, unique axes below ``ndim`` (the ops layer normalises negatives)."""
    for axis in axes:
        if not 0 <= axis < ndim:
            raise ShapeError(f"{op}: axis {axis} is out of range for a tensor of rank {ndim}")
    if len(set(axes)) != len(axes):
        raise ShapeError(f"{op}: repeated axis in {tuple(axes)}")
    return tuple(axes)


def check_rank(op: str, aval: Aval, rank: int, what: str) -> None:
    if aval.ndim != rank:
        raise ShapeError(f"{op}: {what} must have rank {rank}, got shape {fmt_shape(aval.shape)}")


def check_pairs(op: str, name: str, pairs: Sequence[Sequence[int]], count: int) -> None:
    if len(pairs) != count or any(len(p) != 2 for p in pairs):
        raise ShapeError(f"{op}: {name} needs {count} (low, high) pairs, got {tuple(pairs)}")


def check_positive(op: str, name: str, values: Sequence[int], count: int) -> None:
    if len(values) != count or any(v < 1 for v in values):
        raise ShapeError(f"{op}: {name} needs {count} positive integers, got {tuple(values)}")
