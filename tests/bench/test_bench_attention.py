"""benchmarks/bench_attention.py measures what it says: braze's loss and gradient of causal
self-attention over a fused (batch, T, 3 C) projection, against the directional derivative
of a float64 NumPy forward pass taken by central differences."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_attention  # noqa: E402

SHAPE = (2, 3, 8, 4)  # batch, heads, block, head size


def numpy_loss(qkv: np.ndarray, cotangent: np.ndarray) -> float:
    """``sum(attention(qkv) * cotangent)`` in float64, the heads split and merged as the layer does."""
    batch, heads, block, size = SHAPE
    channels = heads * size
    q, k, v = (
        qkv[..., i * channels : (i + 1) * channels].reshape(batch, block, heads, size).transpose(0, 2, 1, 3)
        for i in range(3)
    )
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(size)
    scores = np.where(np.tril(np.ones((block, block), bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    y = (weights @ v).transpose(0, 2, 1, 3).reshape(batch, block, channels)
    return float((y * cotangent).sum())


def test_the_gradient_s_checksum_is_the_directional_derivative():
    qkv, cotangent, direction = (a.astype(np.float64) for a in bench_attention.inputs(SHAPE))
    step = 1e-5
    expected = (numpy_loss(qkv + step * direction, cotangent) - numpy_loss(qkv - step * direction, cotangent)) / (
        2 * step
    )
    measured = bench_attention.measure_braze(SHAPE, repeats=1)
    # Each of the 576 float32 gradient entries is off by a few ulps of its size (about 1):
    # their sum along a standard-normal direction by well under 1e-3.
    np.testing.assert_allclose(measured["checksum"], expected, rtol=1e-4, atol=1e-3)
    assert measured["median_ms"] > 0


def test_the_rate_counts_six_products_of_2_b_h_t_t_d_flops():
    batch, heads, block, size = SHAPE
    assert bench_attention.gflops(SHAPE, 1.0) == 6 * 2 * batch * heads * block * block * size / 1e6
