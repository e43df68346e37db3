"""One element of any fused node, on one GPU work-item.

The C-family element emitter (``backends/cstyle``) writes movement, source and elementwise
ops at an index in C that both dialects compile (each dialect's prelude defines its
helpers). What a CPU kernel leaves to loop nests, a GPU work-item does itself here: a
reduction, contraction, convolution or window op at one output position is a loop over
what that element sums, and everything fused into it is computed inside the loop at the
position the loop reads. This is the simple, always-correct form; kernels.py gives the
roots that repay it work-group reductions through local memory.
"""

from __future__ import annotations

from braze.backends.cstyle import CEmitter, Index, c_literal, c_type, goes_before, wrapping
from braze.backends.cstyle.emitter import clamped_start
from braze.ir.dtypes import DType, int64
from braze.ir.graph import Node
from braze.ir.prims.conv import conv
from braze.ir.prims.indexing import window_axes
from braze.ir.prims.linalg import free_dims
from braze.ir.prims.reductions import reduce_max, reduce_prod, reduce_sum
from braze.ir.prims.scans import argsort, cumsum

REDUCTIONS = {reduce_sum: "sum", reduce_prod: "prod", reduce_max: "max"}


def lowest(dtype: DType) -> str:
    """The identity of max in ``dtype``, as a C literal."""
    if dtype.kind == "f":
        return f"(({c_type(dtype)})(-INFINITY))"
    if dtype.kind == "b":
        return "0"
    return f"(({c_type(dtype)})({-(2 ** (8 * dtype.itemsize - 1)) + 1} - 1))"


def all_of(conditions: list[str]) -> str:
    return " && ".join(conditions) or "1"


def combine(kind: str, dtype: DType, acc: str, value: str) -> str:
    """``acc`` combined with ``value`` (NaN wins a max, as in NumPy)."""
    if kind in ("sum", "prod"):
        return wrapping(dtype, acc, "+" if kind == "sum" else "*", value)
    nan = f"({value} != {value}) | " if dtype.kind == "f" else ""
    return f"(({nan}({value} > {acc})) ? {value} : {acc})"


def identity(kind: str, dtype: DType) -> str:
    if kind == "prod":
        return c_literal(1, dtype)
    return c_literal(0, dtype) if kind == "sum" else lowest(dtype)


class GpuEmitter(CEmitter):
    """The C-family element emitter plus the ops a work-item computes with its own loops
    (the lowerings of reductions, contractions and windows in ``lowering.py``)."""

    # Loops ------------------------------------------------------------------------------

    def loop(self, count: int | str) -> str:
        """Open ``for (v = 0; v < count; ++v) {`` in a new scope; ``close`` ends it."""
        var = self.fresh("r")
        self.emit(f"for (int64_t {var} = 0; {var} < {count}; ++{var}) {{")
        self.push()
        return var

    def close(self) -> None:
        self.pop()
        self.emit("}")

    def accumulator(self, dtype: DType, init: str) -> str:
        name = self.fresh("acc")
        self.emit(f"{c_type(dtype)} {name} = {init};")
        return name

    def guarded(self, conditions: list[str]) -> None:
        """Open ``if (all conditions) {`` in a new scope; ``close`` ends it."""
        self.emit(f"if ({all_of(conditions)}) {{")
        self.push()

    # Reductions and contractions ----------------------------------------------------------

    def reduce(self, node: Node, index: Index) -> str:
        kind = REDUCTIONS[node.op]
        source = node.inputs[0]
        axes = set(node.attr("axes"))
        acc = self.accumulator(node.dtype, identity(kind, node.dtype))
        out = iter(self.dims(index))
        dims = [self.loop(size) if d in axes else next(out) for d, size in enumerate(source.shape)]
        value = self.value(source, Index(source.shape, tuple(dims)))
        self.emit(f"{acc} = {combine(kind, node.dtype, acc, value)};")
        for _ in axes:
            self.close()
        return acc

    def scan(self, node: Node, index: Index) -> str:
        """A cumulative sum or product at one position: the line up to it, combined."""
        kind = "sum" if node.op is cumsum else "prod"
        source, d = node.inputs[0], node.attr("dimension")
        dims = list(self.dims(index))
        acc = self.accumulator(node.dtype, identity(kind, node.dtype))
        dims[d] = self.loop(f"{dims[d]} + 1")
        value = self.value(source, Index(source.shape, tuple(dims)))
        self.emit(f"{acc} = {combine(kind, node.dtype, acc, value)};")
        self.close()
        return acc

    def sort(self, node: Node, index: Index) -> str:
        """A sort (or argsort) at sorted position k: the element of the line whose stable
        rank is k, the rank of each counted over the line. Quadratic in the line's length
        per element: the simple, always-correct form."""
        source, d = node.inputs[0], node.attr("dimension")
        descending = node.attr("descending")
        dims = list(self.dims(index))
        position = dims[d]
        result = self.accumulator(node.dtype, c_literal(0, node.dtype))
        dims[d] = j = self.loop(source.shape[d])
        candidate = self.value(source, Index(source.shape, tuple(dims)))
        rank = self.accumulator(int64, "0")
        dims[d] = i = self.loop(source.shape[d])
        other = self.value(source, Index(source.shape, tuple(dims)))
        before = goes_before(other, candidate, source.dtype, descending)
        after = goes_before(candidate, other, source.dtype, descending)
        self.emit(f"{rank} += {before} | (!{after} & ({i} < {j}));")
        self.close()
        chosen = f"({c_type(node.dtype)}){j}" if node.op is argsort else candidate
        self.emit(f"if ({rank} == {position}) {result} = {chosen};")
        self.close()
        return result

    def dot(self, node: Node, index: Index) -> str:
        x, y = node.inputs
        lc, rc = node.attr("lhs_contracting"), node.attr("rhs_contracting")
        lb, rb = node.attr("lhs_batch"), node.attr("rhs_batch")
        out = list(self.dims(index))
        x_dims, y_dims = [""] * x.aval.ndim, [""] * y.aval.ndim
        for a, b in zip(lb, rb, strict=True):
            x_dims[a] = y_dims[b] = out.pop(0)
        for d in free_dims(x.aval.ndim, lc, lb):
            x_dims[d] = out.pop(0)
        for d in free_dims(y.aval.ndim, rc, rb):
            y_dims[d] = out.pop(0)
        acc = self.accumulator(node.dtype, c_literal(0, node.dtype))
        for a, b in zip(lc, rc, strict=True):
            x_dims[a] = y_dims[b] = self.loop(x.shape[a])
        product = f"{self.value(x, Index(x.shape, tuple(x_dims)))} * {self.value(y, Index(y.shape, tuple(y_dims)))}"
        self.emit(f"{acc} += {product};")
        for _ in lc:
            self.close()
        return acc

    def conv(self, node: Node, index: Index) -> str:
        """conv and conv_grad_filter: one output element's sum of products over the taps of
        the zero-padded input. A tap in the padding reads a zero that is still multiplied,
        as the reference's padded input is: 0 * inf and 0 * NaN are NaN there too."""
        (sh, sw), (dh, dw), ((pt, _), (pl, _)) = node.attr("strides"), node.attr("dilation"), node.attr("padding")
        a, b = node.inputs
        acc = self.accumulator(node.dtype, c_literal(0, node.dtype))
        if node.op is conv:  # out (n, oh, ow, o) += x[n, oh*s + kh*d - p, ..., c] * w[kh, kw, c, o]
            n, oh, ow, o = self.dims(index)
            kh, kw, c = self.loop(b.shape[0]), self.loop(b.shape[1]), self.loop(b.shape[2])
            other = Index(b.shape, (kh, kw, c, o))
        else:  # dw (kh, kw, c, o) += x[n, oh*s + kh*d - p, ..., c] * g[n, oh, ow, o]
            kh, kw, c, o = self.dims(index)
            n, oh, ow = self.loop(b.shape[0]), self.loop(b.shape[1]), self.loop(b.shape[2])
            other = Index(b.shape, (n, oh, ow, o))
        ih, iw = f"({oh} * {sh} + {kh} * {dh} - {pt})", f"({ow} * {sw} + {kw} * {dw} - {pl})"
        tap = self.accumulator(a.dtype, c_literal(0, a.dtype))
        self.guarded([f"{ih} >= 0", f"{ih} < {a.shape[1]}", f"{iw} >= 0", f"{iw} < {a.shape[2]}"])
        self.emit(f"{tap} = {self.value(a, Index(a.shape, (n, ih, iw, c)))};")
        self.close()
        self.emit(f"{acc} += {tap} * {self.value(b, other)};")
        for _ in range(3):
            self.close()
        return acc

    def conv_grad_input(self, node: Node, index: Index) -> str:
        """dx (n, ih, iw, c) += g[n, (ih + p - kh*d) / s, ..., o] * w[kh, kw, c, o] over the
        taps that reach (ih, iw); the reference crops the padding off dx, so a tap that does
        not reach it adds nothing."""
        (sh, sw), (dh, dw), ((pt, _), (pl, _)) = node.attr("strides"), node.attr("dilation"), node.attr("padding")
        g, w = node.inputs
        acc = self.accumulator(node.dtype, c_literal(0, node.dtype))
        n, ih, iw, c = self.dims(index)
        kh, kw, o = self.loop(w.shape[0]), self.loop(w.shape[1]), self.loop(w.shape[3])
        th, tw = f"({ih} + {pt} - {kh} * {dh})", f"({iw} + {pl} - {kw} * {dw})"
        oh, ow = f"({th} / {sh})", f"({tw} / {sw})"
        self.guarded(
            [f"{th} >= 0", f"{tw} >= 0", f"{th} % {sh} == 0", f"{tw} % {sw} == 0"]
            + [f"{oh} < {g.shape[1]}", f"{ow} < {g.shape[2]}"]
        )
        product = f"{self.value(g, Index(g.shape, (n, oh, ow, o)))} * {self.value(w, Index(w.shape, (kh, kw, c, o)))}"
        self.emit(f"{acc} += {product};")
        for _ in range(4):
            self.close()
        return acc

    # Windows ----------------------------------------------------------------------------

    def window_positions(self, node: Node, window: list[str]) -> tuple[list[str], list[str]]:
        """For window ``window`` (output coordinates), loop over its taps: (the tap's
        coordinates in the operand, the conditions that it is not padding)."""
        strides, padding = node.attr("window_strides"), node.attr("padding")
        sizes = node.attr("window_dimensions")
        operand = node.inputs[-1].shape
        coords, inside = [], []
        for d, (k, s, (lo, hi)) in enumerate(zip(sizes, strides, padding, strict=True)):
            tap = self.loop(k) if k > 1 else "0"
            coords.append(_affine(window[d], s, tap, -lo))
            # Without padding on a side, no window reaches past that side.
            inside += [f"{coords[-1]} >= 0"] * (lo > 0) + [f"{coords[-1]} < {operand[d]}"] * (hi > 0)
        return coords, inside

    def window_loops(self, node: Node) -> int:
        return sum(k > 1 for k in node.attr("window_dimensions"))

    def reduce_window(self, node: Node, index: Index) -> str:
        kind, source = node.attr("kind"), node.inputs[0]
        acc = self.accumulator(node.dtype, identity(kind, node.dtype))
        coords, inside = self.window_positions(node, list(self.dims(index)))
        self.guarded(inside)
        value = self.value(source, Index(source.shape, tuple(coords)))
        self.emit(f"{acc} = {combine(kind, node.dtype, acc, value)};")
        for _ in range(self.window_loops(node) + 1):
            self.close()
        return acc

    def argmax(self, node: Node, window: list[str]) -> str:
        """The linear position in the operand of window ``window``'s first maximum (NaN
        first), or -1 where it is in the padding (whose value is the lowest)."""
        operand = node.inputs[-1]
        best = self.accumulator(operand.dtype, lowest(operand.dtype))
        at = self.fresh("at")
        self.emit(f"int64_t {at} = -2;")  # -2: no tap read yet; the first tap always wins
        coords, inside = self.window_positions(node, window)
        position = f"({all_of(inside)}) ? {self.linear(Index(operand.shape, tuple(coords)))} : -1"
        tap = self.accumulator(operand.dtype, lowest(operand.dtype))
        self.guarded(inside)
        self.emit(f"{tap} = {self.value(operand, Index(operand.shape, tuple(coords)))};")
        self.close()
        wins = f"{tap} > {best}"
        if operand.dtype.kind == "f":  # a NaN is the maximum, and the first one stays
            wins = f"{best} == {best} && ({wins} || {tap} != {tap})"
        self.emit(f"if ({at} == -2 || ({wins})) {{ {best} = {tap}; {at} = {position}; }}")
        for _ in range(self.window_loops(node)):
            self.close()
        return at

    def gather(self, node: Node, index: Index) -> str:
        tangents, operand = node.inputs
        at = self.argmax(node, list(self.dims(index)))
        result = self.accumulator(node.dtype, c_literal(0, node.dtype))
        self.guarded([f"{at} >= 0"])
        self.emit(f"{result} = {self.value(tangents, Index(operand.shape, None, at))};")
        self.close()
        return result

    def scatter(self, node: Node, index: Index) -> str:
        """select_and_scatter_add at an operand position: the sum of the sources of the
        windows that hold it and whose first maximum it is."""
        source, operand = node.inputs
        strides, padding = node.attr("window_strides"), node.attr("padding")
        acc = self.accumulator(node.dtype, c_literal(0, node.dtype))
        position = self.linear(index)
        dims = self.dims(index)
        window, conditions = [], []
        for d, (k, s, (lo, _)) in enumerate(zip(node.attr("window_dimensions"), strides, padding, strict=True)):
            shifted = f"({dims[d]} + {lo} - {self.loop(k) if k > 1 else '0'})"
            window.append(f"({shifted} / {s})")
            conditions += [f"{shifted} >= 0", f"{shifted} % {s} == 0", f"{window[-1]} < {source.shape[d]}"]
        self.guarded(conditions)
        at = self.argmax(node, window)
        self.guarded([f"{at} == {position}"])
        self.emit(f"{acc} += {self.value(source, Index(source.shape, tuple(window)))};")
        for _ in range(2 + self.window_loops(node)):
            self.close()
        return acc

    # Indexing ---------------------------------------------------------------------------

    def scatter_add(self, node: Node, index: Index) -> str:
        """scatter_add at a result position: the sum, over the batch positions in order,
        of the update element whose window, at its clamped start, covers the position."""
        updates, indices = node.inputs
        positions, collapsed = node.attr("update_window_dims"), node.attr("inserted_window_dims")
        index_map = node.attr("scatter_dims_to_operand_dims")
        windows = dict(zip(window_axes(len(node.shape), collapsed), positions, strict=True))
        dims = self.dims(index)
        acc = self.accumulator(node.dtype, c_literal(0, node.dtype))
        batch = tuple(self.loop(size) for size in indices.shape[:-1])
        update_dims = dict(zip((p for p in range(updates.aval.ndim) if p not in positions), batch, strict=True))
        conditions = []
        for d, at in enumerate(dims):
            size = updates.shape[windows[d]] if d in windows else 1
            start = "0"
            if d in index_map:
                start = clamped_start(self, indices, batch, index_map.index(d), node.shape[d] - size)
            offset = f"({at} - {start})"
            if d in windows:
                conditions += [f"{offset} >= 0", f"{offset} < {size}"]
                update_dims[windows[d]] = offset
            else:
                conditions.append(f"{offset} == 0")
        self.guarded(conditions)
        value = self.value(updates, Index(updates.shape, tuple(update_dims[p] for p in range(updates.aval.ndim))))
        self.emit(f"{acc} = {combine('sum', node.dtype, acc, value)};")
        self.close()
        for _ in batch:
            self.close()
        return acc


def _affine(position: str, stride: int, tap: str, offset: int) -> str:
    """``position * stride + tap + offset``, without the terms that are zero or one."""
    terms = [position if stride == 1 else f"{position} * {stride}"] if position != "0" else []
    terms += [tap] if tap != "0" else []
    text = " + ".join(terms) or "0"
    return f"({text} {'+' if offset >= 0 else '-'} {abs(offset)})" if offset else f"({text})"
