"""The input gradient of a strided convolution, computed one phase of its pixels at a time
(contractions.py, _phases_of_strided_grad_input), against the reference interpreter on
every CPU target the host runs: strides that divide the image and strides that do not,
filters narrower than the stride, as wide and wider, explicit and SAME padding, with an
epilogue."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_targets import use_target, with_parallel

import braze
from braze.backends import cpu
from braze.backends.cpu import contractions
from braze.backends.reference.interpreter import evaluate
from braze.lazy import EXECUTOR, build_graph

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")

# (image NHWC, filter HWIO, conv2d's options)
CASES = [
    ((2, 8, 8, 16), (3, 3, 16, 32), {"stride": 2, "padding": "SAME"}),  # ResNet's downsampling
    ((2, 9, 7, 8), (3, 3, 8, 16), {"stride": 2, "padding": "SAME"}),  # odd sides
    ((1, 8, 8, 16), (2, 2, 16, 16), {"stride": 2, "padding": "VALID"}),  # one tap per phase
    ((1, 11, 10, 8), (5, 5, 8, 16), {"stride": 3, "padding": ((2, 1), (0, 2))}),
    ((2, 6, 9, 16), (3, 3, 16, 8), {"stride": (1, 2), "padding": "VALID"}),
    ((1, 7, 6, 12), (3, 2, 12, 20), {"stride": (2, 1), "padding": ((1, 1), (1, 0))}),
    # filters narrower than the stride: phases that meet no tap store the epilogue of zero
    ((2, 8, 8, 16), (1, 1, 16, 32), {"stride": 2, "padding": "SAME"}),  # ResNet's projection
    ((1, 9, 10, 8), (2, 1, 8, 16), {"stride": 3, "padding": ((1, 0), (0, 0))}),
    ((1, 5, 7, 8), (1, 2, 8, 8), {"stride": (2, 3), "padding": "VALID"}),
    ((2, 8, 8, 12), (1, 1, 12, 8), {"stride": 2, "padding": "SAME"}),  # plain arrays, the cotangent in place
    ((1, 1, 1, 8), (1, 1, 8, 8), {"stride": 3, "padding": ((1, 1), (0, 0))}),  # no phase meets a tap
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: "-".join("x".join(map(str, shape)) for shape in case[:2]))
@pytest.mark.parametrize("target", with_parallel())
def test_strided_input_gradients_agree_with_the_reference(case, target, tmp_path, monkeypatch):
    use_target(target, monkeypatch)
    image, filters, options = case
    rng = np.random.default_rng(0)
    x = braze.tensor(rng.standard_normal(image).astype(np.float32), device=braze.LAZY_CPU)
    w = braze.tensor(rng.standard_normal(filters).astype(np.float32), device=braze.LAZY_CPU)
    y = braze.conv2d(x, w, **options)
    cotangent = braze.tensor(rng.standard_normal(y.shape).astype(np.float32), device=braze.LAZY_CPU)
    # the ReLU's derivative and a residual's cotangent: the epilogue of ResNet's gradients
    gradient = braze.grad(lambda x: (braze.conv2d(braze.relu(x), w, **options) * cotangent).sum() + (x * x).sum())(x)
    traced = build_graph([gradient._value])
    EXECUTOR._live.clear()
    graph = cpu.optimize(traced.graph)
    phased = []
    split = contractions._phases_of_strided_grad_input
    monkeypatch.setattr(contractions, "_phases_of_strided_grad_input", lambda *a: phased.append(1) or split(*a))
    (got,) = cpu.compile_graph(graph, cpu.DiskCache(tmp_path))(traced.args)
    assert phased, "the gradient should be computed phase by phase"
    (want,) = evaluate(graph, traced.args)
    # the same sums as the reference's, in another order: float32's epsilon times the terms
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))
