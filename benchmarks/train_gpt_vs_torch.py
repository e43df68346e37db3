"""nanoGPT's whole Shakespeare run (2,000 iterations, evaluations included) in braze and in
PyTorch eager, one after the other on this machine, with both times and final losses.

    python benchmarks/train_gpt_vs_torch.py --peers-python /work/peers-venv/bin/python [--iters 2000]

braze runs ``braze train gpt``'s loop (``braze.bench.gpt.train_gpt``, under ``braze.jit``,
from an empty kernel cache, so its compiling counts); PyTorch runs nanoGPT's ``train.py``
loop on the nanoGPT model of benchmarks/peers/torch_gpt.py (``F.scaled_dot_product_attention``,
AdamW groups, ``clip_grad_norm_``, ``get_lr`` set on every group each iteration). Both start
from the same initial weights (nanoGPT's distribution drawn from the same seed), train on
the same batches (the same seeded draws of block starts), evaluate on the same batches,
and print nanoGPT's lines. Each runs in a process of its own; the last line of each is its
JSON record. Run it on a quiet machine: the times are what it reports.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TEXT = HERE.parent / "data" / "shakespeare" / "input.txt.gz"
sys.path.insert(0, str(HERE))

from bench_chain import print_host  # noqa: E402 - the host line every benchmark prints


def measure_braze(iters: int) -> dict:
    from braze.bench.gpt import TrainSettings, train_gpt

    settings = TrainSettings(iters=iters, lr_decay_iters=max(iters, 101))
    _, _, result = train_gpt(None, settings, "jit")
    return {"framework": "braze jit", "seconds": result.seconds, "val_loss": result.val_loss, "iters": iters}


def _tokens() -> tuple[np.ndarray, np.ndarray]:
    """nanoGPT's prepare.py: characters numbered in sorted order, the first 90% to train."""
    text = gzip.decompress(TEXT.read_bytes()).decode("utf-8")
    stoi = {c: i for i, c in enumerate(sorted(set(text)))}
    data = np.array([stoi[c] for c in text], dtype=np.int32)
    n = int(len(data) * 0.9)
    return data[:n], data[n:]


class Blocks:
    """nanoGPT's get_batch with braze's seeded draws (braze.data.BlockSampler's), so both
    frameworks see the same batches."""

    def __init__(self, data: np.ndarray, block: int, batch: int, seed: int) -> None:
        self.data, self.block, self.batch = data, block, batch
        self.rng = np.random.default_rng(seed)

    def sample(self):
        import torch

        starts = self.rng.integers(0, len(self.data) - self.block, self.batch)
        rows = starts[:, None] + np.arange(self.block)
        return torch.from_numpy(self.data[rows]).long(), torch.from_numpy(self.data[rows + 1]).long()


def measure_torch(iters: int) -> dict:
    import torch
    from peers.gpt_common import GRAD_CLIP, spec
    from peers.torch_gpt import configure_optimizer, gpt_model
    from peers.torch_impl import THREADS

    torch.set_num_threads(THREADS)
    seed, warmup, lr, min_lr = 1337, 100, 1e-3, 1e-4
    decay_iters, eval_interval, eval_iters = max(iters, warmup + 1), 250, 20

    def get_lr(it: int) -> float:  # nanoGPT's train.py
        if it < warmup:
            return lr * (it + 1) / (warmup + 1)
        if it > decay_iters:
            return min_lr
        coeff = 0.5 * (1.0 + math.cos(math.pi * (it - warmup) / (decay_iters - warmup)))
        return min_lr + coeff * (lr - min_lr)

    s = spec("gpt")
    train, val = _tokens()
    model = gpt_model("gpt", seed)
    optimizer = configure_optimizer(model, lr)
    batches = Blocks(train, s.block_size, s.batch, seed)
    evaluation = {
        "train": Blocks(train, s.block_size, s.batch, seed + 1),
        "val": Blocks(val, s.block_size, s.batch, seed + 2),
    }

    @torch.no_grad()
    def estimate_loss() -> dict[str, float]:
        model.eval()
        out = {
            split: float(np.mean([model(*evaluation[split].sample()).item() for _ in range(eval_iters)]))
            for split in evaluation
        }
        model.train()
        return out

    start = time.perf_counter()
    for it in range(iters + 1):
        if it % eval_interval == 0 or it == iters:
            losses = estimate_loss()
            print(f"step {it}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}", flush=True)
        if it == iters:
            break
        for group in optimizer.param_groups:
            group["lr"] = get_lr(it)
        began = time.perf_counter()
        loss = model(*batches.sample())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if it % 10 == 0:
            print(f"iter {it}: loss {loss.item():.4f}, time {(time.perf_counter() - began) * 1000:.2f}ms", flush=True)
    seconds = time.perf_counter() - start
    return {
        "framework": f"torch {torch.__version__} eager",
        "seconds": seconds,
        "val_loss": losses["val"],
        "iters": iters,
    }


def run(python: str, who: str, iters: int, env: dict[str, str]) -> dict:
    command = [python, __file__, "--measure", who, "--iters", str(iters)]
    lines = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as process:
        for line in process.stdout:
            print(f"[{who}] {line}", end="", flush=True)
            lines.append(line)
    if process.returncode != 0:
        raise SystemExit(f"{who} failed with exit status {process.returncode}")
    return json.loads(lines[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--peers-python", default=os.environ.get("BRAZE_PEERS_PYTHON", sys.executable))
    parser.add_argument("--json", default="runs/train-gpt-vs-torch.json")
    parser.add_argument("--measure", choices=("braze", "torch"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        record = measure_braze(args.iters) if args.measure == "braze" else measure_torch(args.iters)
        print(json.dumps(record))
        return 0
    with tempfile.TemporaryDirectory(prefix="braze-gpt-cache-") as cache:
        braze = run(sys.executable, "braze", args.iters, dict(os.environ, BRAZE_CACHE=cache))
    torch = run(args.peers_python, "torch", args.iters, dict(os.environ))
    print()
    print_host()
    print(f"| run ({args.iters} iterations) | wall time | final val loss |")
    print("| --- | --- | --- |")
    for record in (braze, torch):
        print(f"| {record['framework']} | {record['seconds']:.1f} s | {record['val_loss']:.4f} |")
    print(f"braze's time is {braze['seconds'] / torch['seconds']:.2f}x PyTorch eager's")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"braze": braze, "torch": torch}, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
