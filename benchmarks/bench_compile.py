"""Compile-scaling benchmark: seconds per thousand graph nodes at each size, for an
elementwise chain, a wide fan, a chain of diamonds and an unrolled LSTM's training step
(braze.bench.compile_scaling builds them), phase by phase (tracing, every pass, C emission,
the C compiler), and ``jax.jit`` compiling the same chain when the peers' interpreter has jax;
then an LSTM's training step at several sequence lengths, unrolled (a Python loop) and as a
``braze.lax.scan``, whose graph and kernels stay the same at every length.

    python benchmarks/bench_compile.py [--sizes 100 1000 10000 100000] [--programs chain fan diamonds lstm]
        [--lengths 10 60 240] [--no-cc] [--peers-python /work/peers-venv/bin/python]

Each figure is one compile from a cold start (no disk cache: the C compiler runs every
time). The last column, per decade, is how much the seconds per node grew from the size
before: 1.0 is linear growth, 2.0 the most the target allows.
"""

from __future__ import annotations

import argparse
import math
import os

from bench_chain import print_host, run_peer_script

from braze.bench.compile_scaling import PROGRAMS, SEQUENCES, Measurement, measure, units_for

# Run by the peers' interpreter: jax.jit lowering and compiling the same chain, in seconds.
JAX_SCRIPT = """
import json, sys, time
import numpy as np
import jax, jax.numpy as jnp
units = int(sys.argv[1])
def chain(x):
    for k in range(units):
        x = jnp.tanh(x * 0.999) if k % 7 == 0 else x * 0.999 + 0.001
    return x
x = jnp.linspace(-1, 1, 64, dtype=np.float32)
start = time.perf_counter()
lowered = jax.jit(chain).lower(x)
traced = time.perf_counter() - start
lowered.compile()
total = time.perf_counter() - start
print(json.dumps({"trace_s": traced, "total_s": total, "version": jax.__version__}))
"""


def phases_line(m: Measurement) -> str:
    return ", ".join(f"{name} {seconds:.3f}" for name, seconds in m.phases.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10_000, 100_000])
    parser.add_argument("--programs", nargs="+", choices=sorted(PROGRAMS), default=list(PROGRAMS))
    parser.add_argument("--lengths", type=int, nargs="*", default=[10, 60, 240], help="LSTM time steps")
    parser.add_argument("--no-cc", action="store_true", help="stop after C emission (no C compiler run)")
    parser.add_argument("--peers-python", default=os.environ.get("BRAZE_PEERS_PYTHON"))
    args = parser.parse_args()

    print_host()
    print(f"{'program':9} {'nodes':>7} {'kernels':>7} {'seconds':>8} {'s/1k nodes':>10} {'x/decade':>8}  phases (s)")
    for name in args.programs:
        program = PROGRAMS[name]
        before: Measurement | None = None
        for size in args.sizes:
            units = units_for(program, size)
            m = measure(program, units, native=not args.no_cc)
            growth = ""
            if before is not None:
                decades = math.log10(m.nodes / before.nodes)
                growth = f"{(m.per_thousand_nodes() / before.per_thousand_nodes()) ** (1 / decades):.2f}"
            print(
                f"{name:9} {m.nodes:7} {m.kernels:7} {m.seconds:8.3f} {m.per_thousand_nodes():10.4f} {growth:>8}  "
                f"{phases_line(m)}",
                flush=True,
            )
            before = m
            if name == "chain" and args.peers_python:
                jax = run_peer_script(args.peers_python, JAX_SCRIPT, units, timeout=1800)
                if isinstance(jax, dict):
                    print(
                        f"{'  jax.jit':9} {m.nodes:7} {'':7} {jax['total_s']:8.3f} "
                        f"{1000 * jax['total_s'] / m.nodes:10.4f} {'':8}  trace {jax['trace_s']:.3f} "
                        f"(jax {jax['version']}, the same chain)",
                        flush=True,
                    )
                else:
                    print(f"  jax.jit: {jax}")
    if args.lengths:
        print(f"\n{'program':9} {'steps':>7} {'nodes':>7} {'kernels':>7} {'seconds':>8}  phases (s)")
    for name, program in SEQUENCES.items():
        for length in args.lengths:
            m = measure(program, length, native=not args.no_cc)
            print(f"{name:9} {length:7} {m.nodes:7} {m.kernels:7} {m.seconds:8.3f}  {phases_line(m)}", flush=True)


if __name__ == "__main__":
    main()
