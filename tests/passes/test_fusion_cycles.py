"""Fusion never makes two kernels read each other's results.

Found by the differential fuzzer: two contractions (dots, or convolution gradients) whose
epilogues reached the same elementwise op both took it, so it sat in two kernels and each
kernel read the other's result (``fusion groups depend on each other in a cycle``)."""

from __future__ import annotations

import numpy as np
import pytest

import braze as B
from braze.ir.text import parse_graph
from braze.passes import pipeline
from braze.passes.fuse import plan_fusion


def program(t0, t1, t2):
    t3 = B.reshape(t0, (5,))
    t4 = t1 / (B.abs(t0) + 0.5)
    t5 = t3 + t4
    t6 = B.clip(t1, -0.57, 0.43)
    t7 = B.sum(t0, axis=1, keepdims=True)
    t8 = t1 @ t1
    t9 = t1 @ t1
    total = (t3 * 0.69).sum() + (t4 * 1.30).sum() + (t5 * 0.77).sum() + (t6 * 1.47).sum()
    return total + (t7 * 1.49).sum() + (t8 * 1.08).sum() + (t9 * 0.81).sum()


def program2(t0, t1):
    t2 = B.conv2d(t0, t1, stride=2, padding="VALID")
    t3 = B.conv2d(t2, t1, stride=1, padding="SAME")
    t4 = B.exp(B.clip(t2, -5.0, 5.0))
    t5 = B.transpose(t2, (3, 2, 1, 0))
    return (t2 * 1.14).sum() + (t3 * 1.14).sum() + (t4 * 0.89).sum() + (t5 * 0.86).sum()


@pytest.mark.parametrize(
    ("fn", "shapes"),
    [(program, [(5, 1), (1, 1), (2, 6)]), (program2, [(3, 11, 6, 1), (3, 1, 1, 1)])],
    ids=["dots", "convs"],
)
def test_value_and_grad_compiles_and_matches_eager(fn, shapes):
    rng = np.random.default_rng(93)
    xs = [B.tensor(rng.standard_normal(s).astype(np.float32)) for s in shapes]
    vg = B.value_and_grad(fn, argnums=tuple(range(len(shapes))))
    value, grads = vg(*xs)
    jit_value, jit_grads = B.jit(vg)(*xs)
    np.testing.assert_allclose(jit_value.numpy(), value.numpy(), rtol=1e-5)
    for got, want in zip(jit_grads, grads, strict=True):
        scale = float(np.abs(want.numpy()).max(initial=1.0))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5 * scale)


def test_second_epilogue_stops_before_an_op_another_kernel_took():
    graph = parse_graph(
        """graph(%0: f32[4,4], %1: f32[4,4]) {
  %2 = dot_general(%0, %1) {lhs_batch=(), lhs_contracting=(0,), rhs_batch=(), rhs_contracting=(0,)} : f32[4,4]
  %3 = dot_general(%1, %0) {lhs_batch=(), lhs_contracting=(0,), rhs_batch=(), rhs_contracting=(0,)} : f32[4,4]
  %4 = add(%2, %3) : f32[4,4]
  %5 = exp(%4) : f32[4,4]
  return (%5)
}"""
    )
    plan = plan_fusion(graph)
    owners = [sum(node in group.members for group in plan.groups) for node in graph.nodes()[2:]]
    assert owners == [1, 1, 1, 1]
    assert any("epilogue stops before add f32[4,4]: it is in the epilogue of dot_general" in r for r in plan.refusals)
    optimized, _ = pipeline.run(graph, verify=True)
    assert sum(node.op.name == "fusion" for node in optimized.nodes()) == 2
