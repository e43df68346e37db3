"""Tiled contractions: a dot_general (with batch dimensions, several free or contracted
dimensions, and a fused bias and activation epilogue) computed through operand tiles in
work-group-local memory, for random shapes whose edges leave remainder tiles, agrees with
the reference interpreter on the OpenCL device at several work-group sizes; the same
kernels, tiled for an H200, compile as CUDA C for sm_90."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_device import assert_tiled_kernels_match_reference, requires_gpu_runtime

from braze.backends.gpu.target import H200
from braze.backends.gpu.tiled import dot_tiles

pytestmark = requires_gpu_runtime
RNG = np.random.default_rng(13)


def _size() -> int:
    return int(RNG.integers(2, 20))


def _graphs(dtype: str) -> list[tuple[str, list[tuple[int, ...]]]]:
    """(graph text, operand shapes) for random sizes: a matrix product, a batched product
    contracting the operands' other axes, several free and contracted axes, and a product
    with a bias and relu fused after it."""
    t = {"float32": "f32", "float64": "f64"}[dtype]
    b, m, n, k, m2, k2 = _size() % 4 + 1, _size(), _size(), _size(), _size() % 3 + 1, _size() % 3 + 1

    def dot(x: tuple, y: tuple, out: tuple, attrs: str, tail: str = "", extra: str = "") -> tuple:
        header = f"%0: {t}[{','.join(map(str, x))}], %1: {t}[{','.join(map(str, y))}]{extra}"
        shape = f"{t}[{','.join(map(str, out))}]"
        body = f"  %2 = dot_general(%0, %1) {{{attrs}}} : {shape}\n{tail}"
        result = "%5" if tail else "%2"
        return f"graph({header}) {{\n{body}  return ({result})\n}}", [x, y]

    plain = "lhs_batch=(), lhs_contracting=(1,), rhs_batch=(), rhs_contracting=(0,)"
    epilogue = (
        f"  %3 = broadcast_in_dim(%9) {{broadcast_dimensions=(1,), shape=({m}, {n})}} : {t}[{m},{n}]\n"
        f"  %4 = add(%2, %3) : {t}[{m},{n}]\n"
        f"  %6 = broadcast_in_dim(%8) {{broadcast_dimensions=(), shape=({m}, {n})}} : {t}[{m},{n}]\n"
        f"  %5 = max(%4, %6) : {t}[{m},{n}]\n"
    )
    with_bias, bias_shapes = dot((m, k), (k, n), (m, n), plain, epilogue, f", %9: {t}[{n}], %8: {t}[]")
    return [
        dot((m, k), (k, n), (m, n), plain),
        dot(
            (b, k, m),
            (n, b, k),
            (b, m, n),
            "lhs_batch=(0,), lhs_contracting=(1,), rhs_batch=(1,), rhs_contracting=(2,)",
        ),
        dot(
            (m2, k, m, k2),
            (k2, n, k),
            (m2, m, n),
            "lhs_batch=(), lhs_contracting=(1, 3), rhs_batch=(), rhs_contracting=(2, 0)",
        ),
        (with_bias, [*bias_shapes, (n,), ()]),
    ]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("warp", [1, 8], ids=["group4", "group32"])
def test_tiled_contractions_match_the_reference(dtype, warp, monkeypatch, tmp_path):
    # The simulator reports a warp of 1 (4 work-items a group, 2 x 2 tiles); a warp of 8
    # gives 32 work-items and 8 x 8 tiles, two outputs per work-item.
    assert_tiled_kernels_match_reference(_graphs(dtype), dtype, warp, monkeypatch, tmp_path, RNG)


def test_tiles_come_from_the_work_group_size_and_local_memory():
    h200 = H200.launch_shape()
    assert dot_tiles(h200.local_size, h200.local_memory, 4) == dot_tiles(128, 48 * 1024, 4)
    assert dot_tiles(128, 48 * 1024, 4).rows == 16 and dot_tiles(128, 48 * 1024, 4).per_item == 2
    assert dot_tiles(256, 48 * 1024, 8).rows == 16 and dot_tiles(256, 48 * 1024, 8).per_item == 1
    small = dot_tiles(256, 1024, 8)  # two 16 x TK tiles in half of 1 KiB: TK = 2
    assert small.depth == 2 and 2 * small.rows * small.depth * 8 <= 512
    # Six columns (a conv's output channels): 8 columns of 32 rows, no wider than needed,
    # still two outputs per work-item, the two tiles in half of the local memory.
    narrow = dot_tiles(128, 48 * 1024, 4, columns=6)
    assert (narrow.rows, narrow.cols, narrow.per_item) == (32, 8, 2)
    assert (32 + 8) * narrow.depth * 4 <= 24 * 1024
    assert dot_tiles(128, 48 * 1024, 4, columns=100) == dot_tiles(128, 48 * 1024, 4)
