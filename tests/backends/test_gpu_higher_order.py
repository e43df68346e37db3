"""Second derivatives on a GPU device: a Hessian-vector product on the lazy GPU device and a
WGAN-GP critic's penalized gradient jitted for the GPU give what the CPU gives (on a CPU
OpenCL device without a GPU), and the kernels also compile as CUDA C for sm_90."""

from __future__ import annotations

import numpy as np
from gpu_device import compiles_for_h200, recording_gpu_graphs, requires_gpu_runtime

import braze
from braze.backends.gpu import GpuExecutable

pytestmark = requires_gpu_runtime

RNG = np.random.default_rng(0)
X, V = RNG.uniform(-1, 1, (3, 4)), RNG.uniform(-1, 1, (3, 4))


def loss(x):
    return (braze.logsumexp(braze.tanh(x) * x, axis=1) * x.sum(axis=1)).sum()


def test_a_lazy_gpu_hvp_matches_the_cpu(monkeypatch):
    lazy_gpu = braze.Device("GPU", 0, "LAZY")
    with recording_gpu_graphs(monkeypatch) as compiled:
        (got,) = braze.hvp(loss, (braze.tensor(X, device=lazy_gpu),), (braze.tensor(V, device=lazy_gpu),))
        got = got.numpy()
    (expected,) = braze.hvp(loss, (braze.tensor(X),), (braze.tensor(V),))
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-10, atol=1e-12)
    compiles_for_h200(compiled)


def test_a_jitted_gradient_penalty_on_the_gpu_matches_the_cpu(monkeypatch):
    def penalized_gradient(w, x):
        points = x.detach().requires_grad_()
        (slope,) = braze.autograd.grad(braze.tanh(points @ w).sum(), points, create_graph=True)
        ((slope * slope).sum() + (points @ w).sum()).backward()
        return w.grad

    step = braze.jit(penalized_gradient)
    gpu = braze.device("gpu")
    w = braze.tensor(RNG.uniform(-1, 1, (4, 2)).astype(np.float32), device=gpu).requires_grad_()
    x = braze.tensor(X.astype(np.float32), device=gpu)
    with recording_gpu_graphs(monkeypatch) as compiled:
        got = step(w, x).numpy()
    (executable,) = [c.executable for c in step._compiled.values()]
    assert isinstance(executable, GpuExecutable)
    cpu_w = braze.tensor(w.numpy()).requires_grad_()
    expected = penalized_gradient(cpu_w, braze.tensor(x.numpy())).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    compiles_for_h200(compiled)
