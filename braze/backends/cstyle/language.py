"""What C dialects share and what each spells its own way.

Every dialect names the element types alike (the GPU preludes typedef ``int32_t`` and the
rest) and writes literals alike (hex floats, which round-trip bit for bit, and
``INFINITY``/``NAN``, which each prelude defines). A ``CLanguage`` holds the few fields
that differ: the qualifiers of kernels and of pointers to kernel memory, and the suffix
of a source file; the GPU dialects add their work-item indices and barrier.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from braze.ir.dtypes import DType, bfloat16, bool_, float32, float64, int32, int64, to_bfloat16

TYPES: dict[DType, str] = {
    float32: "float",
    float64: "double",
    int32: "int32_t",
    int64: "int64_t",
    bool_: "unsigned char",
    bfloat16: "uint16_t",  # its bit pattern: only moved and converted, never computed on
}

# bfloat16 <-> float32 in every dialect (a union, as OpenCL C has no memcpy), ``{fn}`` the
# dialect's qualifier of a helper. Rounding is to nearest even, as ``vcvtneps2bf16``: the
# upper half plus 0x7fff plus its own lowest bit; a NaN keeps its sign and top payload bits
# and is made quiet rather than rounded (it could carry into infinity).
BFLOAT16_HELPERS = """\
typedef union {{ float f; uint32_t u; }} braze_bf16_bits;
{fn} float braze_from_bf16(uint16_t h) {{
  braze_bf16_bits b;
  b.u = (uint32_t)h << 16;
  return b.f;
}}
{fn} uint16_t braze_to_bf16(float x) {{
  braze_bf16_bits b;
  b.f = x;
  if ((b.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((b.u >> 16) | 0x40u);
  return (uint16_t)((b.u + 0x7fffu + ((b.u >> 16) & 1u)) >> 16);
}}
"""


def c_type(dtype: DType) -> str:
    return TYPES[dtype]


def c_literal(value: float | int | bool, dtype: DType) -> str:
    """An exact C literal of ``value`` in ``dtype`` (hex floats round-trip bit for bit)."""
    if dtype.kind == "b":
        return "1" if value else "0"
    if dtype is bfloat16:
        return f"((uint16_t)0x{int(to_bfloat16(np.float32(value))):04x})"
    if dtype.kind == "i":
        if int(value) == -(2**63):  # 9223372036854775808LL has no signed type to be negated in
            return "((int64_t)(-9223372036854775807LL - 1))"
        return f"((int64_t){int(value)}LL)" if dtype.itemsize == 8 else f"((int32_t){int(value)})"
    value = float(np.asarray(value, dtype=dtype.numpy))
    suffix = "f" if dtype.itemsize == 4 else ""
    if math.isnan(value):
        return f"(({c_type(dtype)})NAN)"
    if math.isinf(value):
        return f"(({c_type(dtype)})({'-' if value < 0 else ''}INFINITY))"
    return f"{value.hex()}{suffix}"


def wrapping(dtype: DType, a: str, symbol: str, b: str) -> str:
    """``a symbol b`` (+, - or *) wrapping around as NumPy's integers do. Signed overflow is
    undefined in C, so compilers assume it never happens (GCC folds ``x + 1 > x`` to true):
    integers are combined as unsigned, which wrap by definition, and converted back (modulo
    2^n in every C, CUDA and OpenCL compiler)."""
    if dtype.kind != "i":
        return f"({a} {symbol} {b})"
    unsigned = f"uint{8 * dtype.itemsize}_t"
    return f"(({c_type(dtype)})(({unsigned}){a} {symbol} ({unsigned}){b}))"


@dataclass(frozen=True)
class CLanguage:
    """One C dialect: ``kernel`` precedes a kernel's return type, ``buffer`` qualifies a
    pointer to the memory kernels read and write."""

    name: str
    source_suffix: str  # of a source file, for dumps and kept failures
    kernel: str = ""
    buffer: str = ""

    def pointer(self, ctype: str, const: bool) -> str:
        return f"{self.buffer}{'const ' if const else ''}{ctype}*"
