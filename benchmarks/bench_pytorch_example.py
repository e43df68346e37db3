"""PyTorch's own MNIST example (``pytorch/examples``, ``mnist/main.py``: two convolutions, max
pooling, two dropouts, two linear layers, ``log_softmax`` and ``nll_loss``, Adadelta) as one
program in both frameworks (one class, given each library's modules): braze runs it with
its imports changed (eagerly, and its step under ``braze.jit``), PyTorch runs it as written
(eagerly, and its step under ``torch.compile``), side by side in one run on this machine.

    python benchmarks/bench_pytorch_example.py --peers-python /work/peers-venv/bin/python

Both start from the same weights (PyTorch's initial distribution drawn with NumPy from one
seed, loaded into braze with ``nn.from_torch_state_dict``) and train on the same synthetic
batches of 64 NCHW images; each runs in a process of its own on 2 threads, from empty
compile caches. A step's time is the median of ``--rounds`` rounds of ``--steps`` steps
after ``--warmup`` steps (the first of which compiles); the first step's time is reported
apart.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_chain import print_host  # noqa: E402 - the host line every benchmark prints

BATCH, SEED, THREADS = 64, 1, 2
# (name, shape) of the network's tensors in PyTorch's layout, and each one's fan-in.
SHAPES = {
    "conv1.weight": (32, 1, 3, 3),
    "conv1.bias": (32,),
    "conv2.weight": (64, 32, 3, 3),
    "conv2.bias": (64,),
    "fc1.weight": (128, 9216),
    "fc1.bias": (128,),
    "fc2.weight": (10, 128),
    "fc2.bias": (10,),
}
FAN_IN = {"conv1": 9, "conv2": 288, "fc1": 9216, "fc2": 128}


def initial_state() -> dict[str, np.ndarray]:
    """PyTorch's default initialization of Conv2d and Linear, U(-1/sqrt(fan_in),
    1/sqrt(fan_in)) for weights and biases alike, drawn with NumPy from ``SEED``."""
    rng = np.random.default_rng(SEED)
    state = {}
    for name, shape in SHAPES.items():
        bound = 1 / math.sqrt(FAN_IN[name.split(".")[0]])
        state[name] = rng.uniform(-bound, bound, shape).astype(np.float32)
    return state


def batches(count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(SEED + 1)
    return [
        (rng.standard_normal((BATCH, 1, 28, 28)).astype(np.float32), rng.integers(0, 10, BATCH).astype(np.int64))
        for _ in range(count)
    ]


def timed(step: Callable[[int], float], warmup: int, steps: int, rounds: int) -> dict:
    """The first step's seconds, then the median over ``rounds`` of a step's milliseconds."""
    began = time.perf_counter()
    step(0)
    first = time.perf_counter() - began
    for i in range(1, warmup):
        step(i)
    per_round = []
    for _ in range(rounds):
        began = time.perf_counter()
        for i in range(steps):
            loss = step(warmup + i)
        per_round.append((time.perf_counter() - began) / steps * 1e3)
    return {"first_step_s": first, "step_ms": float(np.median(per_round)), "last_loss": loss}


def mnist_net(nn: Any, F: Any, flatten: Callable) -> type:
    """pytorch/examples' ``mnist/main.py`` network, written once against a library's ``nn``,
    ``nn.functional`` and ``flatten``: braze's with its imports changed, PyTorch's as is."""

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 3, 1)
            self.conv2 = nn.Conv2d(32, 64, 3, 1)
            self.dropout1 = nn.Dropout(0.25)
            self.dropout2 = nn.Dropout(0.5)
            self.fc1 = nn.Linear(9216, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            x = F.relu(self.conv2(F.relu(self.conv1(x))))
            x = self.dropout1(F.max_pool2d(x, 2))
            x = self.dropout2(F.relu(self.fc1(flatten(x, 1))))
            return F.log_softmax(self.fc2(x), dim=1)

    return Net


def measure_braze(mode: str, warmup: int, steps: int, rounds: int) -> dict:
    import braze
    import braze.nn as nn
    import braze.nn.functional as F
    import braze.optim as optim

    model = mnist_net(nn, F, braze.flatten)()
    model.load_state_dict(nn.from_torch_state_dict(model, initial_state()))
    model.train()
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)

    def train(model, optimizer, data, target):
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        return loss

    run = braze.jit(train, donate_argnums=(0, 1)) if mode == "jit" else train
    data = [(braze.tensor(x), braze.tensor(y)) for x, y in batches(8)]
    record = timed(lambda i: run(model, optimizer, *data[i % 8]).item(), warmup, steps, rounds)
    return {"framework": f"braze {mode}", **record}


def measure_torch(mode: str, warmup: int, steps: int, rounds: int) -> dict:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(THREADS)

    model = mnist_net(nn, F, torch.flatten)()
    model.load_state_dict({k: torch.from_numpy(v) for k, v in initial_state().items()})
    model.train()
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)

    def train(data, target):
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        return loss

    run = torch.compile(train) if mode == "compile" else train
    data = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches(8)]
    record = timed(lambda i: run(*data[i % 8]).item(), warmup, steps, rounds)
    return {"framework": f"torch {torch.__version__} {mode}", **record}


def run(python: str, who: str, mode: str, args: argparse.Namespace) -> dict:
    command = [python, __file__, "--measure", who, "--mode", mode]
    command += ["--warmup", str(args.warmup), "--steps", str(args.steps), "--rounds", str(args.rounds)]
    with tempfile.TemporaryDirectory(prefix="braze-bench-cache-") as cache:
        # Empty compile caches, so that the first step measures a cold compile in both.
        env = dict(os.environ, OMP_NUM_THREADS=str(THREADS), BRAZE_CACHE=cache, TORCHINDUCTOR_CACHE_DIR=cache)
        result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise SystemExit(f"{who} {mode} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peers-python", default=os.environ.get("BRAZE_PEERS_PYTHON"))
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", default="runs/bench-pytorch-example.json")
    parser.add_argument("--measure", choices=("braze", "torch"), help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure = measure_braze if args.measure == "braze" else measure_torch
        print(json.dumps(measure(args.mode, args.warmup, args.steps, args.rounds)))
        return 0
    records = [run(sys.executable, "braze", mode, args) for mode in ("eager", "jit")]
    if args.peers_python:
        records += [run(args.peers_python, "torch", mode, args) for mode in ("eager", "compile")]
    print_host()
    print("device: the CPU for both frameworks (no GPU is used)")
    print(f"| PyTorch's MNIST example, batch {BATCH} | step | first step |")
    print("| --- | --- | --- |")
    for record in records:
        print(f"| {record['framework']} | {record['step_ms']:.2f} ms | {record['first_step_s']:.2f} s |")
    if args.peers_python:
        best = min(r["step_ms"] for r in records if r["framework"].startswith("torch"))
        jit = next(r["step_ms"] for r in records if r["framework"] == "braze jit")
        print(f"braze jit's step is {jit / best:.2f}x the best PyTorch step's")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(records, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
