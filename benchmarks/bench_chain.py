"""Elementwise-chain benchmark: issue 11's math-heavy chain over 16M float32 elements,

    t = x * y + 1;  t = tanh(t) * 0.5 + x;  maximum(t, 0) * y - x

under ``@braze.jit`` (one fused kernel), NumPy (eight array passes) and, when the peers'
interpreter has it, ``jax.jit``. It reads two arrays and writes one (192 MiB at 16M
elements), so the memory floor is the time to move those bytes.

    python benchmarks/bench_chain.py [--size N] [--repeats R] [--peers-python /work/peers-venv/bin/python]

Prints the host's CPU, braze's target, and the median of ``--repeats`` timed calls after one
warm-up call (whose time, compilation included, is shown as the first call).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

SIZE = 1 << 24

# Run by the peers' interpreter: the same chain under jax.jit, its times as JSON on stdout.
JAX_SCRIPT = """
import json, statistics, sys, time
import numpy as np
import jax, jax.numpy as jnp
size, repeats = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
x = jnp.asarray(rng.standard_normal(size, dtype=np.float32))
y = jnp.asarray(rng.standard_normal(size, dtype=np.float32))
@jax.jit
def chain(x, y):
    t = x * y + 1
    t = jnp.tanh(t) * 0.5 + x
    return jnp.maximum(t, 0) * y - x
start = time.perf_counter()
chain(x, y).block_until_ready()
first = time.perf_counter() - start
times = []
for _ in range(repeats):
    start = time.perf_counter()
    chain(x, y).block_until_ready()
    times.append(time.perf_counter() - start)
print(json.dumps({"first_s": first, "median_ms": 1e3 * statistics.median(times), "version": jax.__version__}))
"""


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            field, _, value = line.partition(":")
            if field.strip() in ("model name", "Model"):
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def numpy_chain(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    t = x * y + np.float32(1)
    t = np.tanh(t) * np.float32(0.5) + x
    return np.maximum(t, np.float32(0)) * y - x


def timed(call: Callable[[], object], repeats: int) -> tuple[float, float]:
    """(seconds of the first call, median milliseconds of the next ``repeats``)."""
    start = time.perf_counter()
    call()
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return first, 1e3 * statistics.median(times)


def measure_braze(x: np.ndarray, y: np.ndarray, repeats: int) -> tuple[float, float, np.ndarray]:
    import braze

    @braze.jit
    def chain(x, y):
        t = x * y + 1
        t = braze.tanh(t) * 0.5 + x
        return braze.maximum(t, 0) * y - x

    bx, by = braze.tensor(x), braze.tensor(y)
    first, median_ms = timed(lambda: chain(bx, by).numpy(), repeats)
    return first, median_ms, chain(bx, by).numpy()


def run_peer_script(python: str, script: str, *args: object, timeout: float = 600) -> dict | str:
    """The JSON that ``script`` prints last, run by the peers' interpreter, or why there is none."""
    try:
        result = subprocess.run(
            [python, "-c", script, *map(str, args)], capture_output=True, text=True, timeout=timeout
        )
    except (OSError, subprocess.SubprocessError) as error:
        return f"not run ({error})"
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        return f"not run ({last})"
    return json.loads(result.stdout.strip().splitlines()[-1])


def measure_jax(python: str, size: int, repeats: int) -> dict | str:
    """jax.jit's times, or why there are none."""
    return run_peer_script(python, JAX_SCRIPT, size, repeats)


def print_host() -> None:
    """The host's CPU and braze's target for it, above a benchmark's figures."""
    from braze.backends.cpu.compiler import find_compiler

    compiler = find_compiler()
    print(f"host: {cpu_model()}, {os.cpu_count()} CPUs")
    if compiler is not None:
        print(f"braze target: {compiler.target.describe()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=SIZE)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--peers-python", default=os.environ.get("BRAZE_PEERS_PYTHON"))
    args = parser.parse_args()

    print_host()
    rng = np.random.default_rng(0)
    x = rng.standard_normal(args.size, dtype=np.float32)
    y = rng.standard_normal(args.size, dtype=np.float32)
    megabytes = 3 * x.nbytes / 2**20
    print(f"chain over {args.size} float32 elements ({megabytes:.0f} MiB read and written), median of {args.repeats}")

    rows = []
    first, median_ms, result = measure_braze(x, y, args.repeats)
    rows.append(("braze @jit", median_ms, first))
    expected = numpy_chain(x, y)
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)
    first, median_ms = timed(lambda: numpy_chain(x, y), args.repeats)
    rows.append((f"numpy {np.__version__}", median_ms, first))
    if args.peers_python:
        jax = measure_jax(args.peers_python, args.size, args.repeats)
        if isinstance(jax, dict):
            rows.append((f"jax.jit {jax['version']}", jax["median_ms"], jax["first_s"]))
        else:
            print(f"jax.jit: {jax}")
    print(f"{'':24} {'median ms':>10} {'first call s':>13}")
    for name, median_ms, first in rows:
        print(f"{name:24} {median_ms:10.1f} {first:13.3f}")


if __name__ == "__main__":
    main()
