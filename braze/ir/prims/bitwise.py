"""Bitwise primitives of integers and booleans: and, or, xor, not, and the shifts.

A shift by a count outside [0, bits) is defined here as NumPy computes it (C leaves it
undefined): a left shift gives 0, a right shift (arithmetic) gives 0 or -1 by the sign
of the shifted value. None of them has a gradient.
"""

from __future__ import annotations

import numpy as np

from braze.ir.prims import elementwise as ew

INTEGRAL = "bi"
INTEGER = "i"


def _in_range(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    inside = (y >= 0) & (y < 8 * x.dtype.itemsize)
    return inside, np.where(inside, y, 0).astype(x.dtype)


def _shift_left(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    inside, count = _in_range(x, y)
    return np.where(inside, np.left_shift(x, count), 0).astype(x.dtype)


def _shift_right(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    inside, count = _in_range(x, y)
    return np.where(inside, np.right_shift(x, count), np.where(x < 0, -1, 0)).astype(x.dtype)


and_ = ew.binary("and", np.bitwise_and, None, INTEGRAL, commutative=True)
or_ = ew.binary("or", np.bitwise_or, None, INTEGRAL, commutative=True)
xor = ew.binary("xor", np.bitwise_xor, None, INTEGRAL, commutative=True)
not_ = ew.unary("not", np.invert, None, INTEGRAL)
shift_left = ew.binary("shift_left", _shift_left, None, INTEGER)
shift_right = ew.binary("shift_right", _shift_right, None, INTEGER)
