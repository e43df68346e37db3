"""Every op of the op table through the GPU backend, fused and unfused, values and
gradients, in float32 and float64, against the reference interpreter. Without a GPU this
runs the OpenCL kernels on a CPU OpenCL device; the whole table is one program per
configuration. Every fused kernel is also rendered as CUDA C and compiled by NVRTC for
sm_90, in each dtype (the unfused configuration's kernels are single ops the fused one
renders through the same emitters)."""

from __future__ import annotations

import pytest
from gpu_device import compiles_for_h200, requires_gpu_runtime
from op_cases import CASES
from op_graphs import TOLERANCE, assert_matches, traced, traced_gradients

from braze.backends import gpu
from braze.backends.reference.interpreter import evaluate
from braze.runtime.diskcache import DiskCache

pytestmark = requires_gpu_runtime


def collective(trace) -> bool:
    return any(n.op.name == "all_reduce" for n in trace.graph.nodes())


# float64 once, fused: the simulator that stands in for a GPU in CI takes minutes per table.
CONFIGURATIONS = [(True, "float32"), (False, "float32"), (True, "float64")]


@pytest.fixture(
    scope="module", params=CONFIGURATIONS, ids=[f"{'fused' if f else 'unfused'}-{d}" for f, d in CONFIGURATIONS]
)
def compiled(request, tmp_path_factory):
    """{(case name, dtype): (GPU outputs, reference outputs)} for the whole table in one dtype."""
    fusion, dtype = request.param
    runs = [(case.name, dtype, traced(case, dtype)) for case in CASES]
    runs += [(f"{c.name}.grad", dtype, traced_gradients(c, dtype)) for c in CASES if c.grad]
    runs = [r for r in runs if not collective(r[2])]
    graphs = [gpu.optimize(t.graph, verify=True, fusion=fusion) for _, _, t in runs]
    executables = gpu.compile_graphs(graphs, DiskCache(tmp_path_factory.mktemp("cache")))
    results = {
        (name, dtype): (executable(t.args), evaluate(t.graph, t.args))
        for (name, dtype, t), executable in zip(runs, executables, strict=True)
    }
    return results, graphs, fusion


def _check(compiled, name, dtype):
    results, _, _ = compiled
    if not any(key[1] == dtype for key in results):
        pytest.skip(f"this configuration runs the table in {next(iter(results))[1]}")
    if (name, dtype) not in results:
        pytest.skip("all_reduce is a collective: it runs on the CPU transport, not in GPU kernels")
    assert_matches(*results[(name, dtype)], TOLERANCE[dtype])


def test_every_kernel_of_the_table_compiles_as_cuda_for_sm90(compiled):
    _, graphs, fusion = compiled
    if not fusion:
        pytest.skip("the fused configurations compile the table's kernels as CUDA")
    compiles_for_h200(graphs)


@pytest.mark.parametrize("dtype", list(TOLERANCE))
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_op_on_gpu_matches_reference(case, dtype, compiled):
    _check(compiled, case.name, dtype)


@pytest.mark.parametrize("dtype", list(TOLERANCE))
@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=lambda c: c.name)
def test_gradient_on_gpu_matches_reference(case, dtype, compiled):
    _check(compiled, f"{case.name}.grad", dtype)
