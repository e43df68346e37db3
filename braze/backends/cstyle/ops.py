"""The op table: each elementwise primitive as a C expression of its operands' values.

A row is a template, formatted with the operands (``{0}``, ``{1}``, ``{2}``), the result's
C type (``{t}``) and ``{f}``, the suffix of the float32 spelling of a math function
(``expf``) when the first operand is a float32; or a function of the operands and the node
where the spelling depends on the dtypes. The ``braze_`` functions are each prelude's:
vmath's branch-free versions on the CPU (libm's are calls, which keep a loop from
vectorizing), the device's own on a GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from braze.backends.cstyle.language import c_literal, c_type, wrapping
from braze.ir.dtypes import DType, bfloat16, float32
from braze.ir.graph import Node
from braze.ir.primitive import Primitive
from braze.ir.prims import bitwise as bits
from braze.ir.prims import elementwise as ew
from braze.ir.prims import math as m

OpRule = str | Callable[[Sequence[str], Node], str]


def _neg(x: Sequence[str], node: Node) -> str:
    (a,) = x
    return wrapping(node.dtype, "0", "-", a) if node.dtype.kind == "i" else f"(-{a})"


def _abs(x: Sequence[str], node: Node) -> str:
    (a,) = x
    if node.dtype.is_float:
        return f"fabs{_suffix(node)}({a})"
    return f"({a} < 0 ? {wrapping(node.dtype, '0', '-', a)} : {a})"


def _arithmetic(symbol: str) -> Callable[[Sequence[str], Node], str]:
    def rule(x: Sequence[str], node: Node) -> str:
        a, b = x
        return wrapping(node.dtype, a, symbol, b)

    return rule


def _sign(x: Sequence[str], node: Node) -> str:
    (a,) = x
    t = c_type(node.dtype)
    body = f"(({t})(({a}) > 0) - ({t})(({a}) < 0))"
    return f"(({a}) != ({a}) ? ({a}) : {body})" if node.dtype.is_float else body


def _div(x: Sequence[str], node: Node) -> str:
    a, b = x
    if node.dtype.is_float:
        return f"({a} / {b})"
    t = c_type(node.dtype)
    # x / -1 is -x, wrapping: the one overflowing quotient (INT_MIN / -1) traps on x86.
    negated = wrapping(node.dtype, "0", "-", a)
    return f"({b} == 0 ? ({t})0 : {b} == -1 ? {negated} : ({t})({a} / {b}))"


def _pow(x: Sequence[str], node: Node) -> str:
    a, b = x
    return f"braze_powf({a}, {b})" if _suffix(node) else f"pow({a}, {b})"


def _extremum(better: str) -> Callable[[Sequence[str], Node], str]:
    def rule(x: Sequence[str], node: Node) -> str:
        a, b = x
        # Bitwise | rather than ||: no branch, so the select vectorizes; NaN propagates.
        nan = f"({a} != {a}) | " if node.dtype.is_float else ""
        return f"(({nan}({a} {better} {b})) ? {a} : {b})"

    return rule


def _convert(x: Sequence[str], node: Node) -> str:
    (a,) = x
    dtype, source = node.dtype, node.inputs[0].dtype
    if source is bfloat16:  # through its float32 value, exactly
        a, source = f"braze_from_bf16({a})", float32
    if dtype is bfloat16:  # through float32, as the reference computes it
        return f"braze_to_bf16({_converted(a, source, float32)})"
    return _converted(a, source, dtype)


def _converted(a: str, source: DType, dtype: DType) -> str:
    if dtype.kind == "b":
        return f"(unsigned char)({a} != 0)"
    if dtype.is_float and dtype.itemsize == 4 and source.is_float and source.itemsize == 8:
        return f"braze_narrow({a})"
    if dtype.kind == "i" and source.is_float:
        return _float_to_int(a, source, dtype)
    return f"(({c_type(dtype)}){a})"


def _float_to_int(x: str, source: DType, dtype: DType) -> str:
    """``(dtype)x`` saturating, NaN to 0 (XLA's and JAX's rule, which the NumPy twin of
    ``convert`` follows): C leaves NaN and out-of-range values undefined."""
    bits = 8 * dtype.itemsize - 1
    low, high = c_literal(-(2**bits), dtype), c_literal(2**bits - 1, dtype)
    bound = c_literal(2.0**bits, source)
    t = c_type(dtype)
    return f"({x} != {x} ? ({t})0 : {x} >= {bound} ? {high} : {x} <= -{bound} ? {low} : ({t}){x})"


def _bitwise(symbol: str) -> str:
    return f"(({{t}})({{0}} {symbol} {{1}}))"


def _not(x: Sequence[str], node: Node) -> str:
    (a,) = x
    return f"(unsigned char)!{a}" if node.dtype.kind == "b" else f"(({c_type(node.dtype)})~{a})"


def _shift(direction: str) -> Callable[[Sequence[str], Node], str]:
    """A shift by a count outside [0, bits) as the primitive defines it (C leaves it
    undefined): 0 to the left; to the right 0, or -1 for a negative value."""

    def rule(x: Sequence[str], node: Node) -> str:
        a, b = x
        t, width = c_type(node.dtype), 8 * node.dtype.itemsize
        inside = f"(uint{width}_t){b} < {width}u"
        if direction == "left":
            return f"({inside} ? ({t})((uint{width}_t){a} << {b}) : ({t})0)"
        return f"({inside} ? ({t})({a} >> {b}) : ({t})({a} < 0 ? -1 : 0))"

    return rule


def _compare(operator: str) -> str:
    return f"(unsigned char)({{0}} {operator} {{1}})"


OPS: dict[Primitive, OpRule] = {
    ew.exp: "braze_exp{f}({0})",
    ew.log: "braze_log{f}({0})",
    ew.sqrt: "sqrt{f}({0})",
    ew.rsqrt: "(({t})1 / sqrt{f}({0}))",
    ew.tanh: "braze_tanh{f}({0})",
    ew.logistic: "braze_logistic{f}({0})",
    ew.erf: "braze_erf{f}({0})",
    ew.neg: _neg,
    ew.abs_: _abs,
    ew.relu: "({0} <= 0 ? ({t})0 : {0})",  # NaN stays NaN and -0 gives +0, as NumPy's maximum(x, 0)
    ew.sign: _sign,
    ew.add: _arithmetic("+"),
    ew.sub: _arithmetic("-"),
    ew.mul: _arithmetic("*"),
    ew.div: _div,
    ew.pow_: _pow,
    ew.max_: _extremum(">"),
    ew.min_: _extremum("<"),
    ew.eq: _compare("=="),
    ew.ne: _compare("!="),
    ew.lt: _compare("<"),
    ew.le: _compare("<="),
    ew.gt: _compare(">"),
    ew.ge: _compare(">="),
    ew.select: "({0} ? {1} : {2})",
    ew.convert: _convert,
    bits.and_: _bitwise("&"),
    bits.or_: _bitwise("|"),
    bits.xor: _bitwise("^"),
    bits.not_: _not,
    bits.shift_left: _shift("left"),
    bits.shift_right: _shift("right"),
    # C99's math library (each GPU prelude gives OpenCL the float spellings)
    m.sin: "sin{f}({0})",
    m.cos: "cos{f}({0})",
    m.tan: "tan{f}({0})",
    m.asin: "asin{f}({0})",
    m.acos: "acos{f}({0})",
    m.atan: "atan{f}({0})",
    m.sinh: "sinh{f}({0})",
    m.cosh: "cosh{f}({0})",
    m.asinh: "asinh{f}({0})",
    m.acosh: "acosh{f}({0})",
    m.atanh: "atanh{f}({0})",
    m.log1p: "log1p{f}({0})",
    m.expm1: "expm1{f}({0})",
    m.floor: "floor{f}({0})",
    m.ceil: "ceil{f}({0})",
    m.trunc: "trunc{f}({0})",
    m.round_: "rint{f}({0})",  # halves to even, in the default rounding mode
    m.atan2: "atan2{f}({0}, {1})",
    m.copysign: "copysign{f}({0}, {1})",
    m.hypot: "hypot{f}({0}, {1})",
    m.nextafter: "nextafter{f}({0}, {1})",
    m.rem: "fmod{f}({0}, {1})",
}


def _suffix(node: Node) -> str:
    operand = node.inputs[0].dtype
    return "f" if operand.is_float and operand.itemsize == 4 else ""


def render(rule: OpRule, operands: Sequence[str], node: Node) -> str:
    """The C expression of ``node`` from its operands' values."""
    if isinstance(rule, str):
        return rule.format(*operands, t=c_type(node.dtype), f=_suffix(node))
    return rule(operands, node)
