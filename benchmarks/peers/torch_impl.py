"""PyTorch peers: eager, and ``torch.compile`` (default backend, Inductor) of the whole step.

The NHWC batch and the HWIO/(in, out) weights are converted to PyTorch's NCHW/OIHW/(out, in)
layouts once in the setup; the first dense kernel's rows are permuted so that flattening NCHW
activations gives the same function as the NHWC flatten of the other frameworks.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable

import numpy as np

from .common import ADAM_BETA1, ADAM_BETA2, ADAM_EPS, BCE_EPS, flatten_shape, init_params, make_batch, workload
from .gpt_common import SPECS as GPT_SPECS
from .torch_gpt import make_gpt_step
from .torch_resnet import resnet20

# bench_step.py --autocast bf16: each mode also under torch.autocast("cpu", dtype=torch.bfloat16).
AUTOCAST = os.environ.get("BRAZE_PEERS_AUTOCAST") == "bf16"
MODES = ("eager", "compile", *(("eager bf16 autocast", "compile bf16 autocast") if AUTOCAST else ()))
THREADS = 2


def _cold_inductor_cache() -> None:
    """Point Inductor at a fresh cache directory (unless the caller chose one), so the first
    step measures a cold compile rather than a hit in the cache of an earlier run."""
    if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
        path = tempfile.mkdtemp(prefix="braze-peers-inductor-")
        atexit.register(shutil.rmtree, path, ignore_errors=True)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = path


def version() -> str:
    _cold_inductor_cache()
    import torch

    return torch.__version__


def _layers(name: str):
    import torch
    from torch import nn

    layers: list[nn.Module] = []
    params = iter(init_params(name))
    first_dense = True
    h, w, c = flatten_shape(name)
    for spec in workload(name).layers:
        kind = spec[0]
        if kind == "conv":
            _, k, c_in, c_out, padding, act = spec
            conv = nn.Conv2d(c_in, c_out, k, padding=padding.lower())
            kernel, bias = next(params)
            with torch.no_grad():
                conv.weight.copy_(torch.from_numpy(kernel.transpose(3, 2, 0, 1).copy()))
                conv.bias.copy_(torch.from_numpy(bias))
            layers.append(conv)
            if act == "relu":
                layers.append(nn.ReLU())
        elif kind == "avgpool":
            layers.append(nn.AvgPool2d(2, 2))
        elif kind == "maxpool":
            layers.append(nn.MaxPool2d(2, 2))
        elif kind == "flatten":
            layers.append(nn.Flatten())
        elif kind == "dense":
            _, n_in, n_out, act = spec
            dense = nn.Linear(n_in, n_out)
            kernel, bias = next(params)
            if first_dense:  # rows in NHWC order -> rows in NCHW order
                kernel = kernel.reshape(h, w, c, n_out).transpose(2, 0, 1, 3).reshape(n_in, n_out)
                first_dense = False
            with torch.no_grad():
                dense.weight.copy_(torch.from_numpy(np.ascontiguousarray(kernel.T)))
                dense.bias.copy_(torch.from_numpy(bias))
            layers.append(dense)
            if act == "relu":
                layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def make_step(name: str, mode: str = "eager", device: str = "cpu") -> tuple[Callable[[], float], str]:
    """One full training step per call (forward, backward, update) on ``device`` ("cpu" or
    "cuda"); returns the loss as a float, once the step has finished."""
    import torch
    import torch.nn.functional as F

    _cold_inductor_cache()
    if mode not in MODES:
        raise ValueError(f"torch modes are {MODES}, not {mode!r}")
    mode, autocast = mode.removesuffix(" bf16 autocast"), mode.endswith(" bf16 autocast")
    if name in GPT_SPECS:
        return make_gpt_step(name, mode, THREADS, device, autocast)
    torch.set_num_threads(THREADS)
    torch.manual_seed(0)
    w = workload(name)
    images, labels = make_batch(name)
    on = torch.device(device)
    x = torch.from_numpy(images).permute(0, 3, 1, 2).contiguous().to(on)
    if w.loss == "sparse_softmax_ce":
        y = torch.from_numpy(labels).long().to(on)

        def loss_fn(out):
            return F.cross_entropy(out, y)
    else:
        y = torch.from_numpy(labels).reshape(-1, 1).to(on)

        def loss_fn(out):
            p = torch.sigmoid(out).clamp(BCE_EPS, 1 - BCE_EPS)
            return -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()

    model = (resnet20() if name == "resnet" else _layers(name)).to(on)
    model.train()
    if w.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=w.lr, momentum=w.momentum)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=w.lr, betas=(ADAM_BETA1, ADAM_BETA2), eps=ADAM_EPS)

    def train_step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(on.type, dtype=torch.bfloat16, enabled=autocast):  # PyTorch's recipe: forward only
            loss = loss_fn(model(x))
        loss.backward()
        opt.step()
        return loss.detach()

    if mode == "compile":
        train_step = torch.compile(train_step)
        what = "torch.compile(step) (Inductor; graph break at backward, optimizer step compiled too)"
    else:
        what = "eager nn.Sequential + torch.optim"

    def step() -> float:
        return float(train_step())  # .item() waits for the step, on the CPU or the GPU

    where = f"on {torch.cuda.get_device_name(on)}" if on.type == "cuda" else f"{THREADS} threads"
    precision = ", torch.autocast bfloat16" if autocast else ""
    return step, f"{what}, NCHW, {where}{precision}"
