"""Kernels for scans along one axis: cumulative sums and products, and stable sorts.

A scan's operand is read from its buffer (``scans`` are roots that read materialized
operands), as lines of ``n`` elements ``inner`` apart; the lines run on all cores when
there is enough work. A sort is a bottom-up merge sort of each line's positions, in two
per-thread scratch arrays: stable, O(n log n), and branch-light in its inner loop.
"""

from __future__ import annotations

import math

from braze.backends.cpu.elemental import Emitter
from braze.backends.cpu.loops import close_loops, open_loop, open_thread_block, parallel_pragma
from braze.backends.cstyle import c_type, goes_before
from braze.ir.graph import Graph, Node
from braze.ir.primitive import Category
from braze.ir.prims.scans import argsort, cumsum


def _lines(root: Node) -> tuple[int, int, int]:
    """(lines, length, inner): the operand as ``lines`` lines of ``length`` elements, each
    element ``inner`` after the previous one."""
    shape, d = root.inputs[0].shape, root.attr("dimension")
    inner = math.prod(shape[d + 1 :])
    return math.prod(shape[:d]) * inner, shape[d], inner


def _operand_and_result(em: Emitter, computation: Graph, outputs: list[str], root: Node) -> tuple[str, str]:
    source = root.inputs[0]
    assert source.op.category is Category.PARAMETER, "scans read their operands from buffers"
    assert list(computation.outputs) == [root], "a scan's kernel computes the scan alone"
    return em.inputs[source.attr("index")], outputs[0]


def _open_line(em: Emitter, lines: int, length: int, inner: int) -> None:
    """Inside the loop over lines: ``base``, the line's first element."""
    open_loop(em, "l", lines)
    em.emit(f"const int64_t base = (l / {inner}) * {length * inner} + l % {inner};")


def emit_scan_kernel(em: Emitter, computation: Graph, outputs: list[str], root: Node) -> None:
    """Each line's running sum or product, as the twins compute them (``ir/prims/scans.py``):
    a float sum in double, as braze's sums are, from -0.0 (so that a line of -0.0 sums to
    -0.0), each prefix rounded once; a product in the element type, as ``reduce_prod`` and
    NumPy multiply (a prefix that overflows stays infinite); integers wrap."""
    x, out = _operand_and_result(em, computation, outputs, root)
    lines, length, inner = _lines(root)
    t = c_type(root.dtype)
    summing = root.op is cumsum
    acc_type = "double" if summing and root.dtype.is_float else t
    symbol = "+" if summing else "*"
    pragma = parallel_pragma(lines * length, lines)
    if pragma:
        em.emit(pragma)
    _open_line(em, lines, length, inner)
    start = ("-0.0" if root.dtype.is_float else "0") if summing else "1"
    em.emit(f"{acc_type} acc = {start};")
    open_loop(em, "k", length)
    em.emit(f"const int64_t at = base + k * {inner};")
    em.emit(f"acc = acc {symbol} ({acc_type}){x}[at];")
    em.emit(f"{out}[at] = ({t})acc;")
    close_loops(em, 2)


def _open(em: Emitter, head: str) -> None:
    em.emit(head)
    em.push()


def emit_sort_kernel(em: Emitter, computation: Graph, outputs: list[str], root: Node) -> None:
    """Each line's stable order: positions merged in runs of 1, 2, 4, ... between two
    scratch arrays; a merge takes from the right run only what goes strictly before the
    left run's next element, which keeps ties in their order."""
    x, out = _operand_and_result(em, computation, outputs, root)
    lines, length, inner = _lines(root)
    source = root.inputs[0]
    descending = root.attr("descending")
    right_value, left_value = f"{x}[base + a[right] * {inner}]", f"{x}[base + a[left] * {inner}]"
    pragma = parallel_pragma(lines * length * max(1, length.bit_length()), lines)
    em.scratch_buffer("int64_t", "order", length, per_thread=True)
    em.scratch_buffer("int64_t", "merged", length, per_thread=True)
    open_thread_block(em, pragma, "int64_t", [("order", length, "from"), ("merged", length, "into")])
    _open_line(em, lines, length, inner)
    em.emit("int64_t* a = from;")
    em.emit("int64_t* b = into;")
    em.emit(f"for (int64_t k = 0; k < {length}; k++) a[k] = k;")
    _open(em, f"for (int64_t width = 1; width < {length}; width *= 2) {{")
    _open(em, f"for (int64_t lo = 0; lo < {length}; lo += 2 * width) {{")
    em.emit(f"const int64_t mid = lo + width < {length} ? lo + width : {length};")
    em.emit(f"const int64_t hi = lo + 2 * width < {length} ? lo + 2 * width : {length};")
    em.emit("int64_t left = lo, right = mid;")
    open_loop(em, "k", "hi", "lo")
    takes_right = goes_before(right_value, left_value, source.dtype, descending)
    em.emit(f"const int right_first = right < hi && (left >= mid || {takes_right});")
    em.emit("b[k] = right_first ? a[right++] : a[left++];")
    close_loops(em, 2)
    em.emit("int64_t* swap = a;")
    em.emit("a = b;")
    em.emit("b = swap;")
    close_loops(em, 1)
    t = c_type(root.dtype)
    taken = "(" + t + ")a[k]" if root.op is argsort else f"{x}[base + a[k] * {inner}]"
    em.emit(f"for (int64_t k = 0; k < {length}; k++) {out}[base + k * {inner}] = {taken};")
    close_loops(em, 2)
