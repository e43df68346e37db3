"""Each contraction kernel of a compiled training step against this host's measured FMA peak
at the target's vector width.

    python benchmarks/bench_kernels.py [cnn|lenet|gpt|...] [--targets native,x86-64-v3] [--steps 3] [--autocast bf16]

For every CPU target named (``BRAZE_CPU_TARGET`` values; levels the host cannot run are
skipped), it measures the peak: independent vector multiply-adds on every usable core,
compiled by braze's compiler driver for that target; then it times the workload's step
kernel by kernel (BRAZE_PROFILE=1) and prints, for each convolution, convolution gradient
and matrix product, its useful GFLOP/s (those of the forward product it computes, without
padding) and its share of the peak, and for a matrix product NumPy's BLAS on the same
product in the same run. Targets alternate step by step over several rounds,
so a busy machine slows them alike; run it on an idle one all the same.

``--autocast bf16`` times the step under ``braze.autocast``; on a target with AVX512-BF16 it
also measures the bfloat16 peak (independent ``vdpbf16ps``, two multiply-adds per lane), and
a kernel whose product reads bfloat16 operands is reported against that peak.
"""

from __future__ import annotations

import argparse
import ctypes
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ["BRAZE_PROFILE"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from profile_kernels import profile  # noqa: E402

from braze.backends.cpu.compiler import compile_library, find_compiler  # noqa: E402
from braze.backends.cpu.executable import openmp_defaults  # noqa: E402
from braze.backends.cpu.target import CpuTarget, TargetError, host_levels  # noqa: E402
from braze.bench.steps import WORKLOADS  # noqa: E402
from braze.ir.dtypes import bfloat16  # noqa: E402
from braze.ir.graph import Node  # noqa: E402
from braze.ir.primitive import Category  # noqa: E402
from braze.ir.prims.conv import conv, conv_grad_input  # noqa: E402
from braze.ir.prims.fusion import fusion  # noqa: E402
from braze.ir.prims.linalg import dot_general  # noqa: E402
from braze.ir.text import kernel_label  # noqa: E402
from braze.ops.autocast import autocast  # noqa: E402

# Modules compile with -ffp-contract=off (compiler.py), which made ``acc * y + x`` a multiply
# and an add: half the FMA peak. The peak loop asks for the contraction back.
_PEAK_SOURCE = """\
#if defined(__clang__)
#define CONTRACT _Pragma("clang fp contract(fast)")
#else
#pragma GCC optimize("fp-contract=fast")
#define CONTRACT
#endif
#include <stdint.h>
#include <time.h>
#include <omp.h>
typedef float vec __attribute__((vector_size(VECTOR_BYTES)));
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
double fma_peak(int64_t iterations, float* sink) {
  const double start = now();
  #pragma omp parallel
  {
    vec acc[ACCUMULATORS] = {{0}}, x, y;
    for (int i = 0; i < VECTOR_BYTES / 4; i++) { x[i] = 1e-7f * (float)(i + 1); y[i] = 0.999f; }
    for (int64_t i = 0; i < iterations; i++) {
      CONTRACT
      __asm__("" : "+x"(x));
      #pragma GCC unroll 64
      for (int k = 0; k < ACCUMULATORS; k++) acc[k] = acc[k] * y + x;  /* no product to share */
    }
    vec total = acc[0];
    for (int k = 1; k < ACCUMULATORS; k++) total += acc[k];
    sink[omp_get_thread_num() % 64] = total[0];
  }
  const double seconds = now() - start;
  return 2.0 * ACCUMULATORS * (VECTOR_BYTES / 4) * (double)iterations * omp_get_max_threads() / seconds / 1e9;
}
"""


# The same with vdpbf16ps: each lane adds two bfloat16 products a step.
_BF16_PEAK_SOURCE = (
    _PEAK_SOURCE.replace("#include <omp.h>", "#include <omp.h>\n#include <immintrin.h>")
    .replace("acc[k] = acc[k] * y + x;", "acc[k] = (vec)_mm512_dpbf16_ps((__m512)acc[k], (__m512bh)x, (__m512bh)y);")
    .replace("return 2.0 * ACCUMULATORS", "return 4.0 * ACCUMULATORS")
)


def fma_peak(target: str, source: str = _PEAK_SOURCE) -> tuple[CpuTarget, float]:
    """(the resolved target, its float32 multiply-add peak in GFLOP/s on all usable cores;
    with ``_BF16_PEAK_SOURCE``, its bfloat16 dot-product peak)."""
    compiler = find_compiler(target)
    accumulators = compiler.target.vector_registers - 4  # independent chains hide FMA latency
    source = source.replace("VECTOR_BYTES", str(compiler.target.vector_bytes)).replace(
        "ACCUMULATORS", str(accumulators)
    )
    # The OpenMP runtime reads its settings once, when this first library loads it: braze's
    # (threads that sleep while they wait), or every kernel timed after would spin-wait.
    openmp_defaults(compiler.target.cores)
    with tempfile.TemporaryDirectory(prefix="braze-peak-") as folder:
        library = ctypes.CDLL(str(compile_library(compiler, [source], Path(folder))))
    library.fma_peak.restype = ctypes.c_double
    sink = (ctypes.c_float * 64)()
    return compiler.target, max(library.fma_peak(ctypes.c_int64(20_000_000), sink) for _ in range(5))


def reads_bfloat16(kernel: Node) -> bool:
    """Whether a contraction kernel multiplies bfloat16 operands."""
    roots = [n for n in kernel.attr("computation").nodes() if n.op.category is Category.CONTRACTION]
    return bool(roots) and all(i.dtype is bfloat16 for i in roots[0].inputs)


def useful_flops(kernel: Node) -> int:
    """The multiply-adds (x2) of the forward product a contraction kernel computes; 0 for others."""
    if kernel.op is not fusion:
        return 0
    roots = [n for n in kernel.attr("computation").nodes() if n.op.category is Category.CONTRACTION]
    if not roots:
        return 0
    root = roots[0]
    if root.op is dot_general:
        x = root.inputs[0]
        return 2 * root.aval.size * math.prod(x.shape[d] for d in root.attr("lhs_contracting"))
    if root.op is conv:
        kh, kw, c, _ = root.inputs[1].shape
        return 2 * root.aval.size * kh * kw * c
    if root.op is conv_grad_input:
        g, w = root.inputs
        kh, kw, c, _ = w.shape
        return 2 * g.aval.size * kh * kw * c
    _, g = root.inputs  # conv_grad_filter: dw = x windows^T @ g
    n, oh, ow, _ = g.shape
    return 2 * root.aval.size * n * oh * ow


def numpy_gflops(kernel: Node) -> float | None:
    """NumPy's BLAS on a dot_general kernel's product, its operands laid out as (batch,
    rows, depth) and (batch, depth, columns) beforehand (so the BLAS call is all that is
    timed); None for other kernels."""
    if kernel.op is not fusion:
        return None
    roots = [n for n in kernel.attr("computation").nodes() if n.op is dot_general]
    if not roots:
        return None
    root = roots[0]
    x, y = root.inputs
    lc, rc = root.attr("lhs_contracting"), root.attr("rhs_contracting")
    lb, rb = root.attr("lhs_batch"), root.attr("rhs_batch")
    lf = [d for d in range(len(x.shape)) if d not in lc and d not in lb]
    rf = [d for d in range(len(y.shape)) if d not in rc and d not in rb]

    def laid_out(shape, first, middle, last):
        array = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
        sizes = [math.prod(shape[d] for d in group) for group in (first, middle, last)]
        return np.ascontiguousarray(array.transpose([*first, *middle, *last]).reshape(sizes))

    a, b = laid_out(x.shape, lb, lf, lc), laid_out(y.shape, rb, rc, rf)
    out = np.empty((a.shape[0], a.shape[1], b.shape[2]), np.float32)
    best = math.inf
    for _ in range(20):
        start = time.perf_counter()
        np.matmul(a, b, out=out)
        best = min(best, time.perf_counter() - start)
    return useful_flops(kernel) / best / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", nargs="?", default="cnn", choices=sorted(WORKLOADS))
    parser.add_argument("--targets", default=",".join(["native", *host_levels()[-2:]]))
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--autocast", choices=("bf16",), default=None, help="time the step under braze.autocast")
    args = parser.parse_args()
    targets = []
    for name in args.targets.split(","):
        try:
            resolved, peak = fma_peak(name)
        except TargetError as error:
            print(f"skipping {name}: {error}")
            continue
        bf16_peak = fma_peak(name, _BF16_PEAK_SOURCE)[1] if args.autocast and resolved.bfloat16_dot else None
        targets.append((name, resolved, peak, bf16_peak))
    measured: dict[str, list] = {name: [] for name, *_ in targets}
    for _ in range(args.rounds):
        for name, *_ in targets:
            os.environ["BRAZE_CPU_TARGET"] = name
            with autocast("bfloat16", enabled=args.autocast == "bf16"):
                measured[name].append(profile(args.workload, args.steps, with_kernels=True))
            time.sleep(0.5)
    for name, resolved, peak, bf16_peak in targets:
        wall, kernels = min(measured[name], key=lambda m: m[0])
        print(
            f"\n{args.workload}{' under bf16 autocast' if args.autocast else ''}, target {name}: {resolved.describe()}"
        )
        peaks = f"FMA peak {peak:.0f} GFLOP/s" + (f", bf16 peak {bf16_peak:.0f} GFLOP/s" if bf16_peak else "")
        print(f"{peaks}; step {wall * 1e3:.1f} ms (best of {args.rounds} rounds)")
        print("| kernel | ms | GFLOP/s | of peak | NumPy's BLAS GFLOP/s |")
        print("| --- | --- | --- | --- | --- |")
        for node, seconds in sorted(kernels, key=lambda k: -k[1]):
            flops = useful_flops(node)
            if flops and seconds > 0:
                rate = flops / seconds / 1e9
                blas = numpy_gflops(node)
                beside = f"{blas:.0f}" if blas is not None else "-"
                bf16 = bf16_peak is not None and reads_bfloat16(node)
                share = f"{100 * rate / (bf16_peak if bf16 else peak):.0f}%{' of bf16' if bf16 else ''}"
                print(f"| {kernel_label(node)} | {seconds * 1e3:.2f} | {rate:.0f} | {share} | {beside} |")


if __name__ == "__main__":
    main()
