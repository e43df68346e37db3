"""Adding a primitive is one declaration, one lowering per compiling backend and one
op-table row. ``softplus`` (log(1 + e^x)) is declared here as the built-in elementwise
primitives are (its NumPy twin is the reference backend's lowering), with one C lowering
for the CPU and one for the GPU's CUDA and OpenCL; its op-table row then runs eagerly,
lazily, jitted and fused on the reference, CPU and GPU backends against NumPy, and its
gradient agrees with float64 finite differences, eagerly and compiled."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_device import compiles_for_h200, requires_gpu_runtime
from gradcheck import assert_gradients_match
from op_cases import F, OpCase
from op_graphs import TOLERANCE, assert_matches, traced, traced_gradients

import braze
from braze import lazy
from braze.backends import cpu
from braze.backends.cstyle import elementwise
from braze.backends.reference import evaluate
from braze.ir.primitive import withdraw
from braze.ir.prims import elementwise as ew
from braze.ir.prims.fusion import fusion
from braze.runtime.backend import backend_named, missing_lowerings, register_lowering, withdraw_lowerings

requires_compiler = pytest.mark.skipif(not cpu.available(), reason="no C compiler")
FLOATS = ["float32", "float64"]  # NumPy's own: the row's reference is its NumPy twin
BACKENDS = [
    pytest.param("reference"),
    pytest.param("cpu", marks=requires_compiler),
    pytest.param("gpu", marks=requires_gpu_runtime),
]


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(x, x.dtype.type(0))


@pytest.fixture(scope="module")
def softplus():
    # The declaration: its name, NumPy twin and gradient (the category and shape rule come with `unary`).
    primitive = ew.unary("softplus", _softplus, lambda g, x, out: (g * ew.logistic.bind(x),))
    # One lowering per compiling backend: its element in the CPU's C, and in both GPU dialects.
    cpu_element = "(({0} > 0 ? {0} : ({t})0) + log1p{f}(braze_exp{f}(-fabs{f}({0}))))"
    register_lowering(primitive, elementwise(cpu_element), platform="cpu")
    register_lowering(primitive, elementwise("(fmax({0}, ({t})0) + log1p(exp(-fabs({0}))))"), platform="gpu")
    yield primitive
    withdraw_lowerings(primitive)
    withdraw(primitive)


@pytest.fixture(scope="module")
def row(softplus) -> OpCase:
    """Its row of the op table."""
    return OpCase("softplus", lambda x: softplus.bind(x), _softplus, (F(3, 4, low=-4.0, high=4.0),))


def _chain(softplus):
    """Softplus among other elementwise ops: fused, one kernel computes them all."""
    return lambda x, y: softplus.bind(x * 2.0 + y) * y


def _on(backend: str, monkeypatch, tmp_path, lazy_device: bool) -> braze.Device:
    """The device whose graphs ``backend`` compiles (on the CPU, by ``BRAZE_BACKEND``)."""
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path))
    if backend == "gpu":
        return braze.Device("GPU", 0, "LAZY" if lazy_device else "EAGER")
    monkeypatch.setenv("BRAZE_BACKEND", backend)
    return braze.LAZY_CPU if lazy_device else braze.CPU


def _last_target() -> str:
    return lazy.EXECUTOR.cache.executables()[-1].target


def test_a_primitive_without_lowerings_is_named_by_the_coverage_check():
    square = ew.unary("unlowered_square", np.square, lambda g, x, out: (g * x * 2.0,))
    try:
        for name in ("cpu", "gpu"):
            assert square in missing_lowerings(backend_named(name))
        assert square not in missing_lowerings(backend_named("reference"))  # its twin is its lowering
    finally:
        withdraw(square)


def test_declared_once_it_is_lowered_everywhere(softplus):
    for name in ("reference", "cpu", "gpu"):
        assert softplus not in missing_lowerings(backend_named(name))


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=requires_gpu_runtime)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_eager(row, device, dtype):
    arrays = row.inputs(dtype)
    out = row.fn(braze.tensor(arrays[0], device=device))
    assert out.device.kind == device.upper()
    assert_matches([out.numpy()], [row.ref(*arrays)], TOLERANCE[dtype])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_lazy(row, backend, dtype, monkeypatch, tmp_path):
    device = _on(backend, monkeypatch, tmp_path, lazy_device=True)
    arrays = row.inputs(dtype)
    out = row.fn(braze.tensor(arrays[0], device=device))
    braze.barrier()
    assert _last_target() == backend
    assert_matches([out.numpy()], [row.ref(*arrays)], TOLERANCE[dtype])


@pytest.mark.parametrize("backend", BACKENDS)
def test_jit(row, softplus, backend, monkeypatch, tmp_path):
    device = _on(backend, monkeypatch, tmp_path, lazy_device=False)
    step = braze.jit(_chain(softplus))
    x, y = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4), np.full((3, 4), 0.5, np.float32)
    for scale in (1.0, -2.0):  # the second call runs the compiled step again
        out = step(braze.tensor(x * scale, device=device), braze.tensor(y, device=device))
        assert out.device == device
        assert_matches([out.numpy()], [_softplus(x * scale * 2 + y) * y], TOLERANCE["float32"])
    (compiled,) = step._compiled.values()
    assert step.compiles == 1 and compiled.executable.target == backend


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_fused(row, softplus, backend, dtype, tmp_path, monkeypatch):
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path))
    compiler = backend_named(backend)
    x, y = (np.random.default_rng(k).uniform(-3, 3, (4, 5)).astype(dtype) for k in range(2))
    tensors = [braze.tensor(a, device=braze.LAZY_CPU) for a in (x, y)]
    graph = lazy.build_graph([_chain(softplus)(*tensors)._value])
    lazy.EXECUTOR._live.clear()
    optimized = compiler.optimize(graph.graph, verify=True)
    (kernel,) = [n for n in optimized.nodes() if n.op is fusion]
    assert softplus in {n.op for n in kernel.attr("computation").nodes()}
    (got,) = compiler.lower(optimized)(graph.args)
    assert_matches([got], [_softplus(x * 2 + y) * y], TOLERANCE[dtype])
    if backend == "gpu":
        compiles_for_h200([optimized])  # the CUDA dialect's spelling of the lowering compiles too


def test_gradient_matches_finite_differences(row):
    arrays = row.inputs("float64")
    assert_gradients_match(row.fn, arrays, [0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_compiled_value_and_gradient(row, backend, dtype, tmp_path, monkeypatch):
    """The traced value and gradient graphs, compiled by ``backend``, agree with the
    reference interpreter (whose gradient the finite differences check)."""
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path))
    compiler = backend_named(backend)
    for trace in (traced(row, dtype), traced_gradients(row, dtype)):
        got = compiler.compile(trace.graph)(trace.args)
        assert_matches(got, evaluate(trace.graph, trace.args), TOLERANCE[dtype])
