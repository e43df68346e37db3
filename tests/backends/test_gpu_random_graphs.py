"""Random valid graphs through the whole pipeline and the GPU backend agree with the
reference interpreter: 300 graphs fused and 300 unfused, each batch of 60 one program,
whose kernels also compile as CUDA C for sm_90."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_device import compiles_for_h200, requires_gpu_runtime
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from random_graphs import assert_matches_reference, graphs

from braze.backends import gpu
from braze.backends.reference.interpreter import evaluate
from braze.ir.text import parse_graph
from braze.runtime.diskcache import DiskCache

pytestmark = requires_gpu_runtime
TOLERANCE = {"float32": 1e-5, "float64": 1e-12, "bfloat16": 2**-7}  # bfloat16: one unit in its 8th bit


@pytest.mark.parametrize("fusion", [True, False], ids=["fused", "unfused"])
# No shrinking: every example compiles a program, and the failing graph is printed instead.
@settings(
    max_examples=5,  # 5 batches of 60: 300 graphs
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],
)
@given(batch=st.lists(graphs(), min_size=60, max_size=60))
def test_random_graphs_on_gpu_match_reference(batch, fusion, tmp_path_factory):
    optimized = [gpu.optimize(g, verify=True, fusion=fusion) for g in batch]
    executables = gpu.compile_graphs(optimized, DiskCache(tmp_path_factory.mktemp("cache")))
    for graph, executable in zip(batch, executables, strict=True):
        assert_matches_reference(graph, executable, TOLERANCE)
    compiles_for_h200(optimized)


@pytest.mark.parametrize("fusion", [True, False], ids=["fused", "unfused"])
def test_a_convolution_tap_in_the_padding_multiplies_zero_by_the_other_operand(fusion, tmp_path):
    """Found by the unfused random graphs: the kernels skipped the taps that fall in the
    padding, where the reference multiplies a padded zero by the filter (or by the
    cotangent, for the filter's gradient), so an inf or NaN there gave it NaN and the GPU a
    number."""
    graph = parse_graph(
        "graph(%0: f32[1,2,3,1], %1: f32[2,2,1,1], %2: f32[1,2,3,1]) {\n"
        "  %3 = conv(%0, %1) {dilation=(1, 1), padding=((1, 0), (0, 1)), strides=(1, 1)} : f32[1,2,3,1]\n"
        "  %4 = conv_grad_filter(%0, %2) {dilation=(1, 1), filter_hw=(2, 2), padding=((1, 0), (0, 1)), "
        "strides=(1, 1)} : f32[2,2,1,1]\n"
        "  return (%3, %4)\n}"
    )
    x = np.arange(1, 7, dtype=np.float32).reshape(1, 2, 3, 1)
    w = np.array([1, np.inf, 2, 3], np.float32).reshape(2, 2, 1, 1)
    g = np.array([np.inf, 2, 3, 4, 5, 6], np.float32).reshape(1, 2, 3, 1)
    optimized = gpu.optimize(graph, verify=True, fusion=fusion)
    got = gpu.compile_graph(optimized, DiskCache(tmp_path))([x, w, g])
    with np.errstate(all="ignore"):
        expected = evaluate(graph, [x, w, g])
    for value, want in zip(got, expected, strict=True):
        assert np.isnan(want).any() and not np.isnan(want).all()  # the case this test is about
        np.testing.assert_allclose(value, want, rtol=1e-6, equal_nan=True)


def test_a_fused_bias_sum_reads_the_gradient_it_sums_in_a_kernel_after_it(tmp_path):
    """The pooling gradient's fusion holds its bias sum; on the GPU the sum is a kernel of
    its own over the stored gradient (in one kernel every work-group would recompute the
    whole pooling gradient per summed element), and both agree with the reference."""
    pool = "padding=((0, 0), (0, 0), (0, 0), (0, 0)), window_dimensions=(1, 2, 2, 1), window_strides=(1, 2, 2, 1)"
    graph = parse_graph(
        "graph(%0: f32[2,2,3,5], %1: f32[2,4,6,5]) {\n"
        f"  %2 = select_and_scatter_add(%0, %1) {{{pool}}} : f32[2,4,6,5]\n"
        "  %3 = sign(%1) : f32[2,4,6,5]\n"
        "  %4 = mul(%2, %3) : f32[2,4,6,5]\n"
        "  %5 = reduce_sum(%4) {axes=(0, 1, 2)} : f32[5]\n"
        "  return (%4, %5)\n}"
    )
    optimized = gpu.optimize(graph, verify=True)
    assert sum(1 for n in optimized.nodes() if n.op.name == "fusion") == 1  # one fusion...
    executable = gpu.compile_graph(optimized, DiskCache(tmp_path))
    assert len(executable.launches) == 2  # ...two kernels
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(p.aval.shape).astype(np.float32) for p in graph.params]
    for value, want in zip(executable(args), evaluate(graph, args), strict=True):
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6)
    compiles_for_h200([optimized])
