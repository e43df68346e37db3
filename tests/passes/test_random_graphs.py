"""Thousands of random valid graphs give the same outputs under the reference interpreter
before and after the whole pass pipeline (with the verifier between passes)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from random_graphs import graphs, random_args

from braze.backends.reference.interpreter import evaluate
from braze.passes import pipeline


@settings(max_examples=3000, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(graphs())
def test_pipeline_preserves_semantics(graph):
    args = random_args(graph, seed=1)
    optimized, _ = pipeline.run(graph, verify=True)
    expected = evaluate(graph, args)
    got = evaluate(optimized, args)
    for e, g in zip(expected, got, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=0, equal_nan=True)
