"""Loops on the GPU backend: a host loop of the body's launch sequence between the
compiled stretches of the graph (on a CPU OpenCL device without a GPU). Values and
gradients of scans (nested, reversed) and while loops agree with the reference
interpreter; the bodies' kernels also compile as CUDA C for sm_90."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_device import compiles_for_h200, requires_gpu_runtime

import braze
from braze import lax, lazy
from braze.backends import gpu
from braze.backends.reference import evaluate

pytestmark = requires_gpu_runtime

RNG = np.random.default_rng(5)
XS = RNG.standard_normal((4, 3, 2)).astype(np.float32)
W = (RNG.standard_normal((2, 2)) * 0.5).astype(np.float32)


def scanned(xs, w):
    def outer(c, row):
        inner, ys = lax.scan(lambda d, v: (braze.tanh(d @ w + v), d * v), c, row, reverse=True)
        return inner, ys.sum(axis=0)

    final, ys = lax.scan(outer, braze.zeros((2,), device=xs.device) + 0.3, xs)
    return (ys * ys).sum() + final.sum()


def program(xs, w):
    """The scans, and a while loop (forward only) on their result."""
    loss = scanned(xs, w)
    _, doubled = lax.while_loop(
        lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * 2.0), (braze.zeros((), braze.int32, xs.device), loss)
    )
    return doubled


@pytest.mark.parametrize("fusion", [True, False], ids=["fused", "unfused"])
def test_loops_and_their_gradients_on_the_gpu_match_the_reference(fusion):
    xs, w = braze.tensor(XS, device=braze.LAZY_CPU), braze.tensor(W, device=braze.LAZY_CPU)
    results = (program(xs, w), *braze.grad(scanned, argnums=(0, 1))(xs, w))
    trace = lazy.Trace([r._value for r in results])  # its arguments: the data and the scalars it reads
    optimized = gpu.optimize(trace.graph, verify=True, fusion=fusion)
    (executable,) = gpu.compile_graphs([optimized])
    for got, want in zip(executable(trace.args), evaluate(trace.graph, trace.args), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    compiles_for_h200([optimized])


def test_a_gpu_tensor_program_with_loops_matches_the_cpu():
    device = braze.device("gpu:lazy")
    got = program(braze.tensor(XS, device=device), braze.tensor(W, device=device)).item()
    assert got == pytest.approx(program(braze.tensor(XS), braze.tensor(W)).item(), rel=1e-5)
