"""Hessian-vector product benchmark: LeNet-5's loss at batch 128, the same weights, batch and
direction in every framework.

- braze: ``@braze.jit`` of ``braze.hvp`` (forward over reverse) of the loss as a function of
  the parameters (``braze.nn.functional_call``), against ``@braze.jit`` of a gradient step
  (forward, backward, SGD update): the HVP should cost at most 3 gradient steps;
- JAX: ``jax.jit`` of ``jax.jvp(jax.grad(loss))`` and of a gradient step;
- PyTorch eager: ``torch.func.jvp(torch.func.grad(loss))`` over ``functional_call`` and an
  eager gradient step.

    python benchmarks/bench_hvp.py [--repeats R] [--peers-python /work/peers-venv/bin/python] [--json PATH]

Each measurement is the median of ``--repeats`` calls after a first one (shown apart: it
traces and compiles). The row's ``vHv`` (the direction times its product) checks that every
framework computes the same product.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

BENCHMARKS = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHMARKS))

from bench_chain import print_host, run_peer_script  # noqa: E402 - the helpers every benchmark shares
from peers.common import init_params, make_batch  # noqa: E402 - the peers' shared weights and batch


def directions() -> list[tuple[np.ndarray, np.ndarray]]:
    """The direction of the product: one standard-normal array per parameter, float32."""
    rng = np.random.default_rng(2)
    return [
        (rng.standard_normal(k.shape).astype(np.float32), rng.standard_normal(b.shape).astype(np.float32))
        for k, b in init_params("lenet")
    ]


def timed(call: Callable[[], Any], repeats: int) -> tuple[dict, Any]:
    """The first call's seconds (a jitted function's trace and compile included) and the
    median milliseconds of ``repeats`` more; and what the first call returned."""
    start = time.perf_counter()
    first_result = call()
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return {"first_s": first, "median_ms": 1e3 * statistics.median(times)}, first_result


def v_dot(products: list[np.ndarray]) -> float:
    flat_v = [a for pair in directions() for a in pair]
    return float(sum(np.sum(p.astype(np.float64) * v) for p, v in zip(products, flat_v, strict=True)))


def measure_braze(repeats: int) -> dict:
    import braze
    from braze.models import LeNet
    from braze.nn import functional_call, softmax_cross_entropy
    from braze.optim import SGD

    images, labels = make_batch("lenet")
    x, y = braze.tensor(images), braze.tensor(labels)
    model = LeNet(seed=0)
    names = [name for name, _ in model.named_parameters()]
    arrays = [a for pair in init_params("lenet") for a in pair]
    model.load_state_dict(dict(zip(names, arrays, strict=True)))
    params = {name: braze.tensor(a) for name, a in zip(names, arrays, strict=True)}
    direction = {name: braze.tensor(a) for name, a in zip(names, [a for p in directions() for a in p], strict=True)}

    @braze.jit
    def hvp(params, direction, x, y):
        def loss(p):
            return softmax_cross_entropy(functional_call(model, p, (x,)), y)

        return braze.hvp(loss, (params,), (direction,))[0]

    optimizer = SGD(model, lr=0.1)

    @braze.jit
    def step(model, optimizer, x, y):
        optimizer.zero_grad()
        loss = softmax_cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    result: dict[str, Any] = {}

    def product() -> list[np.ndarray]:
        found = hvp(params, direction, x, y)
        return [found[n].numpy() for n in names]

    result["hvp"], products = timed(product, repeats)
    result["step"], _ = timed(lambda: step(model, optimizer, x, y).numpy(), repeats)
    result["vHv"] = v_dot(products)
    result["compiles"] = hvp.compiles
    return result


JAX_SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
import jax, jax.numpy as jnp
from bench_hvp import directions, timed, v_dot
from peers.common import init_params, make_batch
from peers.jax_impl import _forward
repeats = int(sys.argv[2])
images, labels = make_batch("lenet")
x, y = jnp.asarray(images), jnp.asarray(labels)
forward = _forward("lenet")
def loss(params, x, y):
    logp = jax.nn.log_softmax(forward(params, x))
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))
params = [(jnp.asarray(k), jnp.asarray(b)) for k, b in init_params("lenet")]
v = [(jnp.asarray(k), jnp.asarray(b)) for k, b in directions()]
hvp = jax.jit(lambda p, v, x, y: jax.jvp(lambda q: jax.grad(loss)(q, x, y), (p,), (v,))[1])
@jax.jit
def step(p, x, y):
    value, g = jax.value_and_grad(loss)(p, x, y)
    return jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g), value
result = {"version": jax.__version__}
result["hvp"], products = timed(lambda: jax.block_until_ready(hvp(params, v, x, y)), repeats)
result["step"], _ = timed(lambda: jax.block_until_ready(step(params, x, y)), repeats)
result["vHv"] = v_dot([jax.device_get(p) for p in jax.tree_util.tree_leaves(products)])
print(json.dumps(result))
"""

TORCH_SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, jvp
from bench_hvp import directions, timed, v_dot
from peers import torch_impl
from peers.common import make_batch
repeats = int(sys.argv[2])
torch.set_num_threads(torch_impl.THREADS)
images, labels = make_batch("lenet")
x = torch.from_numpy(images).permute(0, 3, 1, 2).contiguous()
y = torch.from_numpy(labels).long()
model = torch_impl._layers("lenet")
params = {n: p.detach() for n, p in model.named_parameters()}
torch_impl.init_params = lambda name: directions()  # the direction, in PyTorch's layouts
v = {n: p.detach() for n, p in torch_impl._layers("lenet").named_parameters()}
def loss(p):
    return F.cross_entropy(functional_call(model, p, (x,)), y)
def hvp():
    return jvp(grad(loss), (params,), (v,))[1]
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
def step():
    optimizer.zero_grad(set_to_none=True)
    value = F.cross_entropy(model(x), y)
    value.backward()
    optimizer.step()
    return float(value)
result = {"version": torch.__version__}
result["hvp"], products = timed(hvp, repeats)
result["step"], _ = timed(step, repeats)
result["vHv"] = sum(float((products[n].double() * v[n].double()).sum()) for n in params)
print(json.dumps(result))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--peers-python", default=os.environ.get("BRAZE_PEERS_PYTHON"))
    parser.add_argument("--json", help="write the rows here as well")
    args = parser.parse_args()
    rows = {"braze @jit": measure_braze(args.repeats)}
    if args.peers_python:
        rows["jax.jit"] = run_peer_script(args.peers_python, JAX_SCRIPT, BENCHMARKS, args.repeats, timeout=1200)
        rows["torch.func eager"] = run_peer_script(
            args.peers_python, TORCH_SCRIPT, BENCHMARKS, args.repeats, timeout=1200
        )
    print_host()
    print("LeNet-5 loss, batch 128, float32: Hessian-vector product (forward over reverse) and gradient step")
    print(f"{'framework':18} {'HVP ms':>9} {'step ms':>9} {'HVP/step':>9} {'first HVP s':>12} {'vHv':>14}")
    for name, row in rows.items():
        if isinstance(row, str):
            print(f"{name:18} {row}")
            continue
        hvp, step = row["hvp"]["median_ms"], row["step"]["median_ms"]
        print(f"{name:18} {hvp:9.2f} {step:9.2f} {hvp / step:9.2f} {row['hvp']['first_s']:12.2f} {row['vHv']:14.6g}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
