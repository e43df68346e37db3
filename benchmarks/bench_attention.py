"""Causal self-attention, forward and backward, at the GPT workloads' shapes: braze's
``scaled_dot_product_attention`` under ``@braze.jit`` against PyTorch eager's
``F.scaled_dot_product_attention`` (its fused CPU kernel, which never writes the T x T
scores) and ``torch.compile`` of it, the same inputs in both.

    python benchmarks/bench_attention.py [--repeats R] [--peers-python /work/peers-venv/bin/python]

Each call takes queries, keys and values split from one ``(batch, T, 3 C)`` tensor into heads
(as the GPT's layer does), computes the attention and merges the heads, and returns the
loss ``sum(y * g)`` with its gradient for the ``(batch, T, 3 C)`` tensor: the attention's
forward pass, its backward pass and the split and merge around them. The table gives the
median milliseconds of ``--repeats`` calls after a first (trace and compile; braze's from an
empty kernel cache, PyTorch's with whatever its own caches hold), the six
products' GFLOP/s, the megabytes one T x T matrix of every head takes (braze writes four
such: the scores, the probabilities and the gradients of both, and reads them back), and a checksum of the
gradient (its dot product with a fixed direction) that every framework must match.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

BENCHMARKS = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHMARKS))

from bench_chain import print_host, run_peer_script, timed  # noqa: E402 - the helpers every benchmark shares

# (batch, heads, block, head size): the gpt and gpt-wide workloads of bench_step.py
SHAPES = {"gpt": (12, 4, 64, 32), "gpt-wide": (8, 6, 256, 64)}


def inputs(shape: tuple[int, int, int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The layer's fused projection (batch, T, 3 C), the output's cotangent (batch, T, C) and
    the direction the gradient's checksum is taken along, float32."""
    batch, heads, block, size = shape
    channels = heads * size
    rng = np.random.default_rng(0)
    qkv = rng.standard_normal((batch, block, 3 * channels)).astype(np.float32)
    cotangent = rng.standard_normal((batch, block, channels)).astype(np.float32)
    direction = rng.standard_normal(qkv.shape).astype(np.float32)
    return qkv, cotangent, direction


def gflops(shape: tuple[int, int, int, int], milliseconds: float) -> float:
    """The six products' rate: two forward (q k^T, p v), four backward, each 2 B H T^2 D."""
    batch, heads, block, size = shape
    return 6 * 2 * batch * heads * block * block * size / (milliseconds * 1e6)


def measure_braze(shape: tuple[int, int, int, int], repeats: int) -> dict:
    import braze
    from braze.nn.functional import scaled_dot_product_attention

    batch, heads, block, size = shape
    channels = heads * size
    qkv_array, cotangent_array, direction = inputs(shape)
    qkv, cotangent = braze.tensor(qkv_array), braze.tensor(cotangent_array)

    def heads_of(t: Any) -> Any:
        return t.reshape(batch, block, heads, size).transpose(0, 2, 1, 3)

    def loss(qkv: Any, cotangent: Any) -> Any:
        q, k, v = (heads_of(qkv[..., i * channels : (i + 1) * channels]) for i in range(3))
        y = scaled_dot_product_attention(q, k, v, causal=True)
        return (y.transpose(0, 2, 1, 3).reshape(batch, block, channels) * cotangent).sum()

    step = braze.jit(braze.value_and_grad(loss))

    def call() -> np.ndarray:
        value, gradient = step(qkv, cotangent)
        value.numpy()
        return gradient.numpy()

    first, median = timed(call, repeats)
    return {"first_s": first, "median_ms": median, "checksum": float(np.vdot(call(), direction))}


TORCH_SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import torch
import torch.nn.functional as F
from bench_attention import SHAPES, inputs
from bench_chain import timed
from peers import torch_impl
torch.set_num_threads(torch_impl.THREADS)
shape, repeats, compiled = SHAPES[sys.argv[2]], int(sys.argv[3]), sys.argv[4] == "compile"
batch, heads, block, size = shape
channels = heads * size
qkv_array, cotangent_array, direction = inputs(shape)
cotangent = torch.from_numpy(cotangent_array)
def loss(qkv):
    q, k, v = (t.view(batch, block, heads, size).transpose(1, 2) for t in qkv.split(channels, dim=2))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return (y.transpose(1, 2).contiguous().view(batch, block, channels) * cotangent).sum()
run = torch.compile(loss) if compiled else loss
def call():
    qkv = torch.from_numpy(qkv_array).requires_grad_()
    value = run(qkv)
    value.backward()
    return qkv.grad.numpy()
first, median = timed(call, repeats)
print(json.dumps({"first_s": first, "median_ms": median, "checksum": float(np.vdot(call(), direction)),
                  "version": torch.__version__}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--workloads", default=",".join(SHAPES), help=f"some of {','.join(SHAPES)}")
    parser.add_argument("--peers-python", default=os.environ.get("BRAZE_PEERS_PYTHON"))
    args = parser.parse_args()
    workloads = args.workloads.split(",")
    unknown = [w for w in workloads if w not in SHAPES]
    if unknown:
        parser.error(f"unknown workloads {', '.join(unknown)}: expected some of {', '.join(SHAPES)}")
    print_host()
    columns = ["workload (B, H, T, D)", "framework", "median ms", "GFLOP/s", "first call", "T x T MiB"]
    print(f"| {' | '.join(columns)} | vs braze jit | checksum |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    # braze compiles from an empty kernel cache, so that its first call is what a new user's is.
    with tempfile.TemporaryDirectory(prefix="braze-attention-cache-") as cache:
        os.environ["BRAZE_CACHE"] = cache
        for workload in workloads:
            print_rows(workload, args.repeats, args.peers_python)


def print_rows(workload: str, repeats: int, peers_python: str | None) -> None:
    """The table's rows of one workload: braze's, then PyTorch's where a peers' Python is given."""
    shape = SHAPES[workload]
    rows: dict[str, dict | str] = {"braze jit": measure_braze(shape, repeats)}
    if peers_python:
        for mode, name in (("eager", "torch eager"), ("compile", "torch compile")):
            rows[name] = run_peer_script(peers_python, TORCH_SCRIPT, BENCHMARKS, workload, repeats, mode, timeout=1200)
    batch, heads, block, _ = shape
    mib = batch * heads * block * block * 4 / 2**20
    base = rows["braze jit"]["median_ms"]  # type: ignore[index]
    label = f"{workload} {shape}"
    for name, row in rows.items():
        if isinstance(row, str):
            print(f"| {label} | {name} | {row} | | | | | |")
            continue
        ms = row["median_ms"]
        print(
            f"| {label} | {name} | {ms:.3f} | {gflops(shape, ms):.0f} | {row['first_s']:.2f} s | {mib:.1f} "
            f"| {ms / base:.2f}x | {row['checksum']:.6g} |"
        )


if __name__ == "__main__":
    main()
