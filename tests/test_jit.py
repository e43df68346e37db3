"""@braze.jit: the same results as eager on the op table and on LeNet training steps, one
compile per signature, static and donated arguments."""

from __future__ import annotations

import weakref

import numpy as np
import pytest
from op_cases import CASES

import braze
from braze.bench.steps import lenet_workload
from braze.runtime import metrics


@pytest.fixture(autouse=True)
def private_cache(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path_factory.getbasetemp() / "jit-cache"))
    metrics.reset()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_jit_gives_the_same_values_as_eager(case):
    arrays = case.inputs()
    eager = case.fn(*[braze.tensor(a) for a in arrays]).numpy()
    compiled = braze.jit(case.fn)(*[braze.tensor(a) for a in arrays])
    assert compiled.device == braze.CPU
    scale = float(np.nanmax(np.abs(eager), initial=1.0)) if eager.dtype.kind == "f" else 0.0
    np.testing.assert_allclose(compiled.numpy(), eager, rtol=1e-5, atol=1e-5 * scale)


def test_jitted_lenet_steps_match_eager_and_compile_once():
    eager, jitted = lenet_workload(braze.CPU), lenet_workload(braze.CPU)
    x, y = eager.batch(braze.CPU)
    step = jitted.jit_step()
    for _ in range(6):
        expected = eager.step(x, y)
        got = step(jitted.model, jitted.optimizer, jitted.loss_fn, x, y)
        np.testing.assert_allclose(got.item(), expected.item(), rtol=1e-5)
    for p, q in zip(eager.model.parameters(), jitted.model.parameters(), strict=True):
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-5, atol=1e-6)
    # The second call starts from the gradients the first left, which its zero_grad drops:
    # traced again, with the first call's executable.
    assert step.compiles == 1 and metrics.counter("JitCacheHit") == 4
    assert metrics.counter("JitRetraceForGradients") == 1 and metrics.counter("JitRecompile") == 0


def test_a_new_signature_compiles_exactly_once_and_says_why(capsys, monkeypatch):
    monkeypatch.setenv("BRAZE_DEBUG", "1")
    double = braze.jit(lambda x: x * 2.0)
    for shape in [(4,), (4,), (3,), (3,), (4,)]:
        np.testing.assert_array_equal(double(braze.ones(shape)).numpy(), np.full(shape, 2.0))
    assert double.compiles == 2
    assert "args[0] shape changed from float32[4] to float32[3]" in capsys.readouterr().err


def test_static_arguments_are_part_of_the_signature():
    power = braze.jit(lambda x, n: x**n, static_argnums=(1,))
    x = braze.tensor([2.0, 3.0])
    assert power(x, 2.0).tolist() == [4.0, 9.0]
    assert power(x, 3.0).tolist() == [8.0, 27.0]
    assert power(x, 2.0).tolist() == [4.0, 9.0]
    assert power.traces == 2


def test_donated_parameters_are_updated_in_place():
    workload = lenet_workload(braze.CPU, batch_size=16)
    x, y = workload.batch(braze.CPU)
    step = braze.jit(lambda model, images, labels: workload.step(images, labels), donate_argnums=(0,))
    step(workload.model, x, y)
    kernel = workload.model.parameters()[0]
    buffer = weakref.ref(kernel._value)  # held strongly, the test would hold the old value too
    before = np.array(kernel._value)
    step(workload.model, x, y)
    assert kernel._value is buffer()  # the same array, written by the compiled step
    assert not np.array_equal(kernel.numpy(), before)


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=lambda c: c.name)
def test_jitted_gradients_match_eager(case):
    """Every VJP rule's kernels (conv transposes, max-pool scatter, ...) through native code."""
    arrays = case.inputs()
    wrt = tuple(i for i, a in enumerate(arrays) if a.dtype.kind == "f")
    gradient = braze.grad(lambda *ts: (case.fn(*ts) * 1.5).sum(), argnums=wrt)
    eager = gradient(*[braze.tensor(a) for a in arrays])
    compiled = braze.jit(gradient)(*[braze.tensor(a) for a in arrays])
    for e, c in zip(eager, compiled, strict=True):
        scale = float(np.max(np.abs(e.numpy()), initial=1.0))
        np.testing.assert_allclose(c.numpy(), e.numpy(), rtol=1e-4, atol=1e-5 * scale)
