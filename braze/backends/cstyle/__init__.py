"""The C-family renderer that the CPU's C and the GPU's CUDA and OpenCL share (tinygrad's
``CStyleLanguage``): one type map and exact literals (``language.py``), one op table of
elementwise C expressions (``ops.py``), and the emitter computing any fused element at an
index, with the rules of the movement and source primitives (``emitter.py``). A dialect
specialises a few fields of ``CLanguage``; a backend builds its lowering table from the
rules here and adds its own (loops, kernels)."""

from braze.backends.cstyle.emitter import (
    ELEMENT_RULES,
    CEmitter,
    ElementRule,
    Index,
    Split,
    elementwise,
    unflatten,
)
from braze.backends.cstyle.language import BFLOAT16_HELPERS, CLanguage, c_literal, c_type, wrapping
from braze.backends.cstyle.ops import OPS
from braze.backends.cstyle.order import goes_before

__all__ = [
    "BFLOAT16_HELPERS",
    "ELEMENT_RULES",
    "OPS",
    "CEmitter",
    "CLanguage",
    "ElementRule",
    "Index",
    "Split",
    "c_literal",
    "c_type",
    "elementwise",
    "goes_before",
    "unflatten",
    "wrapping",
]
