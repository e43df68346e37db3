"""Training-step benchmark: braze (eager, lazy, jit) and every installed peer framework on
the same synthetic batches, measured in one run on this machine.

    python benchmarks/bench_step.py [--workloads lenet,cnn,resnet,gpt,gpt-wide] [--peers-python PYTHON] [--busy 1]
                                    [--autocast bf16] [--rounds 3]

Each braze mode runs in a fresh process with an empty kernel cache, so its first step
includes tracing and the C compiler; the jit mode then runs once more in a new process
with the cache it filled, which is the warm start. Peers run through benchmarks/peers.
Prints the host's CPU target (ISA level, vector width, cores), a table of median step
times, first-step times, each mode's peak resident memory (VmHWM, reset before each peer's
mode; a braze mode has a process of its own) and each row's time relative to braze jit,
and writes the rows as
JSON. ``--busy N`` runs everything beside N processes spinning on a core, as on a shared
machine.

``--device gpu`` measures braze's GPU backend (eager, lazy, jit) beside PyTorch eager and
``torch.compile`` on the same GPU (``torch-cuda``). Without a GPU it says so and measures
nothing, unless ``BRAZE_GPU_ALLOW_CPU=1`` lets a CPU OpenCL device stand in (its rows are
labelled: they are no GPU number); ``--batch-size`` then keeps a simulated step short.

``--rounds R`` measures every row R times, round after round (braze's modes, then the
peers, then again), and reports each row's fastest round with the slowest beside it: on a
shared host a neighbour's burst slows whichever process runs during it, and interleaved
rounds give every framework the same chances of a quiet one.

``--autocast bf16`` measures every braze mode a second time under ``braze.autocast`` and
PyTorch's modes under ``torch.autocast("cpu", dtype=torch.bfloat16)`` as well, in the same
run, so the float32 and mixed-precision rows are comparable.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# Timed steps per mode (medians): a LeNet step takes milliseconds, so 100 of them, for a
# median that one noisy scheduler slice does not move.
STEPS = {"lenet": 100, "cnn": 5, "resnet": 20, "gpt": 50, "gpt-wide": 10}
MODES = {"cpu": ("eager", "lazy", "jit"), "gpu": ("eager", "lazy", "jit")}
PEERS = {"cpu": "torch,jax,tf", "gpu": "torch-cuda"}


def gpu_device() -> tuple[str | None, str]:
    """(what braze's GPU backend runs on, labelled, or None where it has no device; why not)."""
    from braze.backends import gpu

    try:
        info = gpu.runtime().info
    except (gpu.GpuError, ImportError) as error:
        return None, str(error)
    if info.is_gpu:
        return f"GPU: {info.name} ({info.runtime})", ""
    return f"NOT A GPU: {info.name}, a CPU OpenCL device standing in for one (BRAZE_GPU_ALLOW_CPU=1)", ""


def measure_braze(
    workload: str, mode: str, steps: int, kind: str = "cpu", batch: int | None = None, autocast: bool = False
) -> dict:
    """One braze mode on device ``kind``, in this process: (first step, median of ``steps``
    steps), under ``braze.autocast("bfloat16")`` when ``autocast``."""
    from peers import peak_rss_mb, time_step

    import braze
    from braze.bench.steps import WORKLOADS

    device = braze.Device(kind.upper(), 0, "LAZY" if mode == "lazy" else "EAGER")
    work = WORKLOADS[workload](device, **({"batch_size": batch} if batch else {}))
    x, y = work.batch(device)
    if mode == "jit":
        compiled = work.jit_step()

        def step() -> float:
            return compiled(work.model, work.optimizer, work.loss_fn, x, y).item()
    else:

        def step() -> float:
            return work.step(x, y).item()

    with braze.autocast("bfloat16", enabled=autocast):
        first, median_ms, loss = time_step(step, steps)
    return {
        "workload": workload,
        "framework": "braze",
        "mode": f"{mode} bf16 autocast" if autocast else mode,
        "median_ms": median_ms,
        "first_step_s": first,
        "version": braze.__version__,
        "first_loss": loss,
        "peak_rss_mb": peak_rss_mb(),  # a fresh process per mode: its whole life, compiling included
        "device": kind,
        "batch": len(work.labels),
    }


def run_braze(
    workload: str, mode: str, steps: int, cache: str, args: argparse.Namespace, autocast: bool = False
) -> dict:
    command = [sys.executable, __file__, "--measure", workload, mode, "--steps", str(steps), "--device", args.device]
    command += ["--batch-size", str(args.batch_size)] if args.batch_size else []
    command += ["--autocast", "bf16"] if autocast else []
    env = dict(os.environ, BRAZE_CACHE=cache)
    output = subprocess.run(command, capture_output=True, text=True, env=env, check=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def table(rows: list[dict], versus: str = "jit") -> str:
    rounds = any(len(r.get("rounds_ms", ())) > 1 for r in rows)
    lines = [
        f"| workload | framework / mode | median step |{' slowest round |' if rounds else ''} first step "
        f"| peak RSS | vs braze {versus} |",
        "| --- | --- | --- | --- | --- | --- |" + (" --- |" if rounds else ""),
    ]
    for workload in dict.fromkeys(r["workload"] for r in rows):
        reference = next(
            (r for r in rows if r["workload"] == workload and r["mode"] == versus and r["framework"] == "braze"), None
        )
        for r in sorted((r for r in rows if r["workload"] == workload), key=lambda r: r["median_ms"]):
            ratio = f"{r['median_ms'] / reference['median_ms']:.2f}x" if reference else "-"
            label = f"{r['framework']} {r['mode']}"
            rss = f"{r['peak_rss_mb']:.0f} MiB" if r.get("peak_rss_mb") else "-"
            slowest = f" {max(r.get('rounds_ms', [r['median_ms']])):.1f} ms |" if rounds else ""
            timing = f"{r['median_ms']:.1f} ms |{slowest} {r['first_step_s']:.2f} s"
            lines.append(f"| {workload} | {label} | {timing} | {rss} | {ratio} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="lenet,cnn,resnet,gpt,gpt-wide")
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu", help="where braze and the peers run")
    parser.add_argument(
        "--frameworks",
        default=None,
        help="peers beside braze (default: torch,jax,tf on the CPU, torch-cuda on the GPU); 'braze' alone runs none",
    )
    parser.add_argument(
        "--batch-size", type=int, default=None, help="braze's batch (default: the workload's); the peers are not run"
    )
    parser.add_argument("--peers-python", default=os.environ.get("BRAZE_PEERS_PYTHON"))
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--json", default="runs/bench-step.json")
    parser.add_argument(
        "--busy", type=int, default=0, metavar="N", help="run everything beside N processes that spin on a core"
    )
    parser.add_argument(
        "--autocast",
        choices=("bf16",),
        default=None,
        help="also measure braze under braze.autocast and PyTorch under torch.autocast (bfloat16)",
    )
    parser.add_argument("--rounds", type=int, default=1, help="measure every row this many times, interleaved")
    parser.add_argument("--measure", nargs=2, metavar=("WORKLOAD", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        workload, mode = args.measure
        steps = args.steps or STEPS[workload]
        print(json.dumps(measure_braze(workload, mode, steps, args.device, args.batch_size, args.autocast == "bf16")))
        return 0
    if args.autocast:
        os.environ["BRAZE_PEERS_AUTOCAST"] = args.autocast  # read by the PyTorch peer's modes
    from peers import machine_info, run_peers

    from braze.backends.cpu.compiler import find_compiler

    compiler = find_compiler()
    host = f"host: {compiler.target.describe() if compiler else 'no C compiler'}"
    if args.device == "gpu":
        device, why = gpu_device()
        if device is None:
            print(f"No GPU is present ({why}): braze's GPU step and PyTorch on cuda were not measured.")
            print("BRAZE_GPU_ALLOW_CPU=1 runs braze's GPU kernels on a CPU OpenCL device instead, labelled as such.")
            return 1
        host += f"; braze --device gpu on {device}"
    if args.batch_size:
        host += f"; braze's batch {args.batch_size}, not the workload's"
    if args.busy:
        host += f"; beside {args.busy} busy process{'es' if args.busy > 1 else ''}"
    print(host, file=sys.stderr)
    neighbours = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        rows = measure_all(args, run_peers)
    finally:
        for process in neighbours:
            process.kill()
    print(host)
    print(table(rows, versus=MODES[args.device][-1]))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": machine_info(), "host": host, "rows": rows}, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


def measure_all(args: argparse.Namespace, run_peers) -> list[dict]:
    """Every row, measured ``args.rounds`` times in turn: each row's fastest round."""
    if args.rounds < 1:
        raise SystemExit(f"--rounds must be at least 1, got {args.rounds}")
    rounds = []
    for k in range(args.rounds):
        if args.rounds > 1:
            print(f"round {k + 1} of {args.rounds}", file=sys.stderr)
        rounds.append(measure_round(args, run_peers))
    return fastest_rounds(rounds)


def fastest_rounds(rounds: list[list[dict]]) -> list[dict]:
    """Each (workload, framework, mode)'s row from its fastest round, with every round's
    median step as ``rounds_ms``; in the first round's order."""
    best: dict[tuple, dict] = {}
    for rows in rounds:
        for row in rows:
            key = (row["workload"], row["framework"], row["mode"])
            medians = [*best[key]["rounds_ms"], row["median_ms"]] if key in best else [row["median_ms"]]
            if key not in best or row["median_ms"] < best[key]["median_ms"]:
                best[key] = row
            best[key] = dict(best[key], rounds_ms=medians)
    return list(best.values())


def measure_round(args: argparse.Namespace, run_peers) -> list[dict]:
    rows = []
    precisions = (False, True) if args.autocast else (False,)
    for workload in args.workloads.split(","):
        steps = args.steps or STEPS[workload]
        for mode, autocast in ((m, a) for m in MODES[args.device] for a in precisions):
            with tempfile.TemporaryDirectory(prefix="braze-bench-cache-") as cache:
                row = run_braze(workload, mode, steps, cache, args, autocast)
                timing = f"{row['median_ms']:.1f} ms/step, first step {row['first_step_s']:.2f} s"
                print(f"braze {row['mode']} {workload}: {timing}", file=sys.stderr)
                rows.append(row)
                if mode == MODES[args.device][-1] and not autocast:
                    warm = run_braze(workload, mode, steps, cache, args)
                    rows.append(dict(warm, mode=f"{mode} (warm disk cache)"))
        frameworks = [f for f in (args.frameworks or PEERS[args.device]).split(",") if f and f != "braze"]
        if args.batch_size:
            print(f"peers not run: they train the workload's own batch, not {args.batch_size}", file=sys.stderr)
        elif frameworks:
            rows += run_peers([workload], frameworks, {workload: steps}, python=args.peers_python)
    return rows


if __name__ == "__main__":
    sys.exit(main())
