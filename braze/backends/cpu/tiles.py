"""Building blocks shared by the contraction kernels (matrix products and convolutions):
register tiles sized from the CPU target, loops over tiles whose widths are compile-time
constants, and the fully unrolled multiply-add of one register tile.

A register tile of ``rows`` broadcast scalars times ``vectors`` vectors of a contiguous
operand is the inner loop of every contraction here; a bfloat16 or integer kernel keeps
the same tiles and changes only the multiply-add ``vector_tile`` writes.
"""

from __future__ import annotations

from collections.abc import Callable

from braze.backends.cpu.elemental import Emitter
from braze.backends.cpu.loops import close_loops, open_loop
from braze.backends.cpu.target import CpuTarget
from braze.ir.graph import Node
from braze.ir.primitive import Category


def operand(em: Emitter, node: Node) -> str:
    assert node.op.category is Category.PARAMETER, "contractions read their operands from buffers"
    return em.inputs[node.attr("index")]


def register_tiles(target: CpuTarget, rows: int, vectors: int, share: float = 5 / 8) -> list[tuple[int, int]]:
    """(rows, vectors) register tiles of ``rows`` broadcast values times ``vectors`` vectors
    (at most those available), best predicted first: the most accumulators within ``share``
    of the target's vector registers, such that the tile's operand vectors, a broadcast
    value and a spare register fit beside them; ties go to fewer loads per multiply-add.
    With 32 registers (AVX-512) the first is the tile measured best on the CNN's
    convolutions (20 accumulators: 5 columns x 4 vectors, 10 x 2, 20 x 1); with 16 (AVX2),
    at most 10 accumulators, e.g. 5 x 2. Matrix products, whose operands are packed, ask
    for three quarters of the registers: 6 x 4 with AVX-512, 6 x 2 with AVX2.
    The second, the autotuner's alternative, is the runner-up, or where there is none (a
    single vector of columns) the best tile with half the accumulators (less register
    pressure, where the compiler spills)."""
    registers = target.vector_registers

    def ranked(budget: int) -> list[tuple[int, int]]:
        def tile(v: int) -> tuple[int, int]:
            return min(rows, max(1, budget // v)), v

        fitting = [tile(v) for v in range(1, max(vectors, 1) + 1) if tile(v)[0] * v + v + 2 <= registers]
        return sorted(set(fitting) or {tile(1)}, key=lambda t: (-t[0] * t[1], t[0] + t[1], t[1]))

    budget = max(1, int(registers * share))
    best = ranked(budget)
    return best[:2] if len(best) > 1 else best + [t for t in ranked(max(1, budget // 2)) if t not in best][:1]


def register_tile(em: Emitter, rows: int, vectors: int, work: int, share: float = 5 / 8) -> tuple[int, int]:
    """The register tile for a kernel of ``work`` multiply-adds: register_tiles' first, or
    the autotuner's pick among them."""
    tiles = register_tiles(em.target, rows, vectors, share)
    return tiles[em.choice("register tile", len(tiles), work)]


def each_tile(em: Emitter, name: str, total: int, tile: int, body: Callable[[int, str], None]) -> None:
    """Full tiles of ``tile`` over [0, total) in a loop, then the remainder: every tile's
    width is a compile-time constant, so its accumulators can live in registers."""
    full = total - total % tile
    if full == tile:
        body(tile, "0")
    elif full:
        open_loop(em, name, full, step=tile)
        body(tile, name)
        close_loops(em, 1)
    if total % tile:
        body(total % tile, str(full))


# The fused multiply-adds of every module (vmath.py's scalar ones, emit.py's vector ones),
# by the C type of the operands.
_FUSED = {"float": "braze_fmaf", "double": "braze_fma", "braze_vf32": "braze_fmav32", "braze_vf64": "braze_fmav64"}


def multiply_add(t: str, a: str, b: str, c: str) -> str:
    """C for ``a * b + c`` of C type ``t`` (a float type or braze's vector of one; an
    integer's is a product and a sum), rounded once where the target has fused
    multiply-adds: the accumulation of a contraction (the modules are compiled without
    contraction, so that elementwise code rounds as eager does, see compiler.py)."""
    fused = _FUSED.get(t)
    return f"{fused}({a}, {b}, {c})" if fused else f"{c} + {a} * {b}"


def accumulate(t: str, acc: str, a: str, b: str, scalar_b: bool = False) -> str:
    """The C statement ``acc += a * b`` of a contraction's accumulation, fused (see
    ``multiply_add``); ``scalar_b``: ``acc`` and ``a`` are vectors of type ``t``, ``b`` a
    scalar."""
    if scalar_b and t in _FUSED:
        return f"{acc} = {_FUSED[t]}s({a}, {b}, {acc});"
    return f"{acc} = {multiply_add(t, a, b, acc)};"


def zero_accumulators(em: Emitter, vector: str, rows: int, vectors: int) -> None:
    """Set a register tile's accumulators ``acc[rows][vectors]`` (vectors of type ``vector``)
    to zero, each by a statement of its own: for a memset of the whole array (a tile of 6 x
    4 vectors is 1.5 KiB) GCC calls the C library and sends the tile through memory, a
    thirtieth of a transformer's step; zeroed one by one they start in registers."""
    zeros = " ".join(f"acc[{j}][{q}] = zero;" for j in range(rows) for q in range(vectors))
    em.emit(f"{{ const {vector} zero = {{0}}; {zeros} }}")


def load_accumulators(em: Emitter, width: int, row: str) -> None:
    """Fill a register tile's accumulator rows ``acc[j]`` (j below ``width``) from ``row``, a
    C pointer expression of ``j``: a tile that goes on summing into what it stored before."""
    open_loop(em, "j", width)
    em.emit(f"memcpy(acc[j], {row}, sizeof(acc[j]));")
    close_loops(em, 1)


def store_accumulators(em: Emitter, width: int, row: str) -> None:
    """Copy a register tile's accumulator rows ``acc[j]`` (j below ``width``) to ``row``, a
    C pointer expression of ``j``."""
    open_loop(em, "j", width)
    em.emit(f"memcpy({row}, acc[j], sizeof(acc[j]));")
    close_loops(em, 1)


def vector_tile(
    em: Emitter,
    t: str,
    rows: int,
    vectors: int,
    weights: str,
    scalar: Callable[[int], str],
    vector: tuple[str, int] | None = None,
    update: str | None = None,
) -> None:
    """acc[j][q] += weights[q-th vector] * scalar(j) over a register tile (fused
    multiply-adds, ``accumulate``), written out in full: GCC keeps named vectors in
    registers but spills a small array of vectors indexed in a loop (2.8x slower on the
    CNN's second convolution). ``vector``: the weights' vector type and elements per
    vector, where they are not the scalars' (``update`` then says how a weight vector
    ``w{q}`` and the scalar ``s`` go into accumulator ``acc[{j}][{q}]``)."""
    name, lanes = vector or ("braze_vf32" if t == "float" else "braze_vf64", em.target.lanes(4 if t == "float" else 8))
    if update is None:
        update = accumulate(name, "acc[{j}][{q}]", "w{q}", "s", scalar_b=True)
    for q in range(vectors):
        em.emit(f"{name} w{q};")
        em.emit(f"memcpy(&w{q}, {weights} + {q * lanes}, sizeof(w{q}));")
    for j in range(rows):
        updates = " ".join(update.format(j=j, q=q) for q in range(vectors))
        em.emit(f"{{ const {t} s = {scalar(j)}; {updates} }}")
