"""Matrix products as batched GEMMs (braze/backends/cpu/gemm.py): dense, batched and
transposed-operand layouts, edge sizes (1, odd, not a multiple of the vector width),
with a fused epilogue, against the reference interpreter on every CPU target the host
runs, through the predicted register tile and another and through the parallel code."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_targets import runnable_targets, use_target, with_parallel

import braze
from braze.backends import cpu
from braze.backends.cpu import gemm, loops
from braze.backends.cpu.compiler import find_compiler
from braze.backends.cpu.gemm import Gemm, gemm_layout, row_blocks
from braze.backends.reference.interpreter import evaluate
from braze.ir.prims.linalg import dot_general
from braze.lazy import EXECUTOR, build_graph

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")

# (lhs shape, rhs shape, lhs contracting, rhs contracting, lhs batch, rhs batch[, dtype])
CASES = {
    "dense": ((17, 64), (64, 33), (1,), (0,), (), ()),
    "one row": ((1, 3), (3, 65), (1,), (0,), (), ()),
    "depth one": ((5, 1), (1, 9), (1,), (0,), (), ()),
    "x @ W over batch and time": ((3, 7, 20), (20, 24), (2,), (0,), (), ()),
    "g @ W^T": ((3, 7, 24), (20, 24), (2,), (1,), (), ()),
    "weight gradient x^T g": ((3, 7, 20), (3, 7, 17), (0, 1), (0, 1), (), ()),
    "q @ k^T": ((2, 3, 11, 8), (2, 3, 13, 8), (3,), (3,), (0, 1), (0, 1)),
    "scores @ v": ((2, 3, 11, 13), (2, 3, 13, 9), (3,), (2,), (0, 1), (0, 1)),
    "batch not leading": ((5, 3, 7), (3, 5, 9), (0,), (1,), (1,), (0,)),
    "size-one dims": ((1, 6, 1, 10), (10, 1, 12), (3,), (0,), (), ()),
    "free dims apart (plain loops)": ((4, 6, 5), (6, 10), (1,), (0,), (), ()),
    "few columns (plain loops)": ((9, 16), (16, 5), (1,), (0,), (), ()),
    # Big enough to be packed on any host (a depth sweep over more than 32 KiB, half of
    # the largest L1 cache): B into panels, a transposed A into row tiles.
    "packed panels of B": ((9, 110), (110, 80), (1,), (0,), (), ()),
    "packed rows of a transposed A": ((130, 70), (130, 24), (0,), (0,), (), ()),
    # Deep, several panels wide, the last one partly padding: each task packs the panels
    # it reads.
    "deep panels": ((9, 1100), (1100, 70), (1,), (0,), (), ()),
    "deep panels of a transposed A": ((1100, 20), (1100, 70), (0,), (0,), (), ()),
    "deep panels of a transposed B": ((9, 1100), (70, 1100), (1,), (1,), (), ()),
    # A transposed and deep, read in place with prefetches where the tile is wide enough
    # (on AVX-512), else packed: rows in several tasks and a remainder tile, batched.
    "many rows of a transposed A": ((700, 150), (700, 70), (0,), (0,), (), ()),
    "batched deep transposed A": ((3, 300, 40), (3, 300, 70), (1,), (1,), (0,), (0,)),
    # Few rows and whole panels: on several cores, each task takes a group of panels.
    "columns split among the cores": ((40, 96), (96, 128), (1,), (0,), (), ()),
    "weight gradient split by columns": ((300, 24), (300, 128), (0,), (0,), (), ()),
    "dense float64": ((13, 40), (40, 19), (1,), (0,), (), (), "float64"),
    "q @ k^T float64": ((2, 3, 11, 8), (2, 3, 13, 8), (3,), (3,), (0, 1), (0, 1), "float64"),
}


def _graph(case, seed: int):
    lhs, rhs, lc, rc, lb, rb, *rest = case
    dtype = rest[0] if rest else "float32"
    rng = np.random.default_rng(seed)
    device = braze.LAZY_CPU
    x = braze.tensor(rng.standard_normal(lhs).astype(dtype), device=device)
    y = braze.tensor(rng.standard_normal(rhs).astype(dtype), device=device)
    out = dot_general.bind(x, y, lhs_contracting=lc, rhs_contracting=rc, lhs_batch=lb, rhs_batch=rb)
    bias = braze.tensor(rng.standard_normal(out.shape[-1]).astype(dtype), device=device)
    result = braze.maximum(out * 0.5 + bias, 0.0)  # scale, bias and activation in the epilogue
    traced = build_graph([result._value])
    EXECUTOR._live.clear()
    depth = int(np.prod([lhs[d] for d in lc]))
    return cpu.optimize(traced.graph), traced.args, depth, np.finfo(dtype).eps / 2


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("target", with_parallel())
def test_products_agree_with_the_reference_for_every_register_tile(name, target, tmp_path, monkeypatch):
    target = use_target(target, monkeypatch)
    graph, args, depth, unit = _graph(CASES[name], seed=len(name))
    (want,) = evaluate(graph, args)
    predicted = gemm.register_tiles
    # The predicted tile, and one of odd rows and vectors (other panel widths and packed
    # row tiles of A, a remainder tile in both directions).
    for tile in (None, (3, 3)):
        monkeypatch.setattr(gemm, "register_tiles", (lambda *_, tile=tile: [tile]) if tile else predicted)
        (got,) = cpu.compile_graph(graph, cpu.DiskCache(tmp_path))(args)
        # Both sum the same products in some order: each result is within
        # depth roundings (unit: half an ulp of 1) of the largest partial sum (standard-normal
        # operands: a few sqrt(depth)).
        bound = 4 * depth * unit * (float(np.abs(want).max()) + 4 * np.sqrt(depth))
        np.testing.assert_allclose(got, want, rtol=0, atol=bound, err_msg=f"tile {tile}")


_SIZES = (1, 2, 3, 5, 7, 8, 13, 16, 17, 33)


def _random_case(rng: np.random.Generator):
    """dot_general dimension numbers with 0-2 batch, 0-2 lhs free, 1-2 rhs free and 1-2
    contracting dimensions of edge sizes, each operand's dimensions in a random order (so
    transposed layouts, and ones that do not collapse to one stride, come up)."""
    groups = {"b": int(rng.integers(0, 3)), "l": int(rng.integers(0, 3)), "r": int(rng.integers(1, 3))}
    groups["c"] = int(rng.integers(1, 3))
    labels = {g: [f"{g}{i}" for i in range(count)] for g, count in groups.items()}
    size = {label: int(rng.choice(_SIZES)) for names in labels.values() for label in names}
    lhs = list(rng.permutation(labels["b"] + labels["l"] + labels["c"]))
    rhs = list(rng.permutation(labels["b"] + labels["c"] + labels["r"]))
    return (
        tuple(size[d] for d in lhs),
        tuple(size[d] for d in rhs),
        tuple(lhs.index(d) for d in labels["c"]),
        tuple(rhs.index(d) for d in labels["c"]),
        tuple(lhs.index(d) for d in labels["b"]),
        tuple(rhs.index(d) for d in labels["b"]),
    )


@pytest.mark.parametrize("seed", range(12))
def test_random_products_agree_with_the_reference(seed, tmp_path, monkeypatch):
    monkeypatch.setattr(loops, "PARALLEL_MIN_MACS", 0)  # the batch and row-block tasks in threads
    case = _random_case(np.random.default_rng(seed))
    graph, args, depth, unit = _graph(case, seed)
    (want,) = evaluate(graph, args)
    (got,) = cpu.compile_graph(graph, cpu.DiskCache(tmp_path))(args)
    bound = 4 * depth * unit * (float(np.abs(want).max()) + 4 * np.sqrt(depth))
    np.testing.assert_allclose(got, want, rtol=0, atol=bound, err_msg=str(case))


def _layout(lhs, rhs, lc, rc, lb=(), rb=()) -> Gemm | None:
    x = braze.tensor(np.zeros(lhs, np.float32), device=braze.LAZY_CPU)
    y = braze.tensor(np.zeros(rhs, np.float32), device=braze.LAZY_CPU)
    out = dot_general.bind(x, y, lhs_contracting=lc, rhs_contracting=rc, lhs_batch=lb, rhs_batch=rb)
    traced = build_graph([out._value])
    EXECUTOR._live.clear()
    (root,) = [n for n in traced.graph.nodes() if n.op is dot_general]
    return gemm_layout(root)


def test_transformer_layouts_collapse_to_one_gemm():
    x_at_w = _layout((12, 64, 128), (128, 384), (2,), (0,))
    assert x_at_w == Gemm((), m=768, n=384, k=128, a_row=128, a_k=1, b_k=384, b_col=1)
    weight_gradient = _layout((12, 64, 128), (12, 64, 512), (0, 1), (0, 1))
    assert weight_gradient == Gemm((), m=128, n=512, k=768, a_row=1, a_k=128, b_k=512, b_col=1)
    step = 64 * 32
    q_at_kt = _layout((12, 4, 64, 32), (12, 4, 64, 32), (3,), (3,), (0, 1), (0, 1))
    assert q_at_kt == Gemm(((12, 4 * step, 4 * step), (4, step, step)), 64, 64, 32, 32, 1, 1, 32)
    assert _layout((4, 6, 5), (6, 10), (1,), (0,)) is None  # free dims 0 and 2 are not one stride


def test_row_blocks_keep_a_within_half_the_l2_and_give_every_core_work():
    compiler = find_compiler("native")

    class Stub:
        target = compiler.target

    target = compiler.target
    gemm = Gemm((), m=768, n=128, k=512, a_row=512, a_k=1, b_k=128, b_col=1)
    rows = row_blocks(Stub(), gemm, 5, 4)
    assert rows % 5 == 0 and rows * 512 * 4 <= max(target.l2_bytes // 2, 5 * 512 * 4)
    assert -(-768 // rows) >= min(target.cores, 768 // 5)
    batched = Gemm(((48, 0, 0),), m=64, n=64, k=32, a_row=32, a_k=1, b_k=1, b_col=32)
    assert row_blocks(Stub(), batched, 5, 4) >= 60  # a batch per task where batches outnumber cores


@pytest.mark.parametrize("target", runnable_targets())
def test_a_weight_gradient_reads_its_activations_in_place_where_the_tile_is_wide(target, monkeypatch):
    """x^T g: with AVX-512's tile (four cache lines of B a depth) the transposed activations
    are read in place, the tiles prefetching the rows ahead; with AVX2's (one line a depth)
    they are copied into depth-major row tiles."""
    use_target(target, monkeypatch)
    kernel = _product_kernel(((768, 512), (768, 128), (0,), (0,)))
    wide = find_compiler(target).target.vector_bytes == 64
    assert ("__builtin_prefetch(ahead" in kernel) is wide, kernel
    assert ("apack" in kernel) is not wide, kernel


def _product_kernel(shapes) -> str:
    graph, _, _, _ = _graph((*shapes, (), ()), seed=0)
    (kernel,) = [k for k in cpu.compile_graph(graph).plan.kernel_sources if "acc[" in k]
    return kernel


def test_few_rows_split_the_columns_among_the_cores():
    """A weight gradient of 128 rows (22 tiles) on several cores: each task takes its own
    panels of B (and packs only those), rather than half the rows and every panel; x @ W
    over 768 rows still splits its rows."""
    cores = find_compiler("native").target.cores
    weight_gradient = _product_kernel(((768, 128), (768, 512), (0,), (0,)))
    assert ("first_panel" in weight_gradient) is (cores > 1), weight_gradient
    assert "first_panel" not in _product_kernel(((768, 128), (128, 512), (1,), (0,)))
