"""The training steps of the case studies (LeNet, the XLA article's CNN, ResNet-20,
nanoGPT's GPT), on synthetic batches: what ``braze hlo`` explains and what the benchmarks
time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from braze import ops
from braze.bench.gpt import train_step
from braze.jit import JittedFunction, jit
from braze.models import GPTConfig, LeNet, ResNet20, XlaArticleCNN
from braze.nn import Module, binary_cross_entropy, softmax_cross_entropy
from braze.optim import SGD, Adam, Optimizer
from braze.runtime.device import Device
from braze.tensor import Tensor


def classifier_step(
    model: Module, optimizer: Optimizer, loss_fn: Callable[..., Tensor], x: Tensor, y: Tensor
) -> Tensor:
    """One step of a classifier: forward, loss, backward, update."""
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def gpt_step(model: Module, optimizer: Optimizer, loss_fn: Any, x: Tensor, y: Tensor) -> Tensor:
    """nanoGPT's step: the model computes its own loss, the gradients are clipped at norm 1."""
    return train_step(model, optimizer, x, y, grad_clip=1.0)


@dataclass
class Workload:
    """A model, its optimizer, one synthetic batch, and the step that trains on it."""

    train: ClassVar[Callable[..., Tensor]] = staticmethod(classifier_step)

    name: str
    model: Module
    optimizer: Optimizer
    images: np.ndarray
    labels: np.ndarray
    loss_fn: Callable[[Tensor, Tensor], Tensor]

    def step(self, x: Tensor, y: Tensor) -> Tensor:
        return self.train(self.model, self.optimizer, self.loss_fn, x, y)

    def jit_step(self) -> JittedFunction:
        """The step under ``braze.jit``, called ``f(model, optimizer, loss_fn, x, y)``. It is
        given what it trains, not the workload: the workload holds the batch's NumPy arrays,
        and a jitted function's guard hashes every array it can reach at every call. The
        model and the optimizer are donated, as a JAX step donates its state: their new
        values are written over the old ones, as PyTorch's in-place updates are."""
        return jit(self.train, donate_argnums=(0, 1))

    def batch(self, device: Device) -> tuple[Tensor, Tensor]:
        return ops.tensor(self.images, device=device), ops.tensor(self.labels, device=device)


def lenet_workload(device: Device, batch_size: int = 128, seed: int = 0) -> Workload:
    rng = np.random.default_rng(seed)
    model = LeNet(seed=seed).to(device)
    images = rng.random((batch_size, 28, 28, 1), dtype=np.float32)
    labels = rng.integers(0, 10, batch_size).astype(np.int32)
    return Workload("lenet", model, SGD(model, lr=0.1), images, labels, softmax_cross_entropy)


def cnn_workload(device: Device, batch_size: int = 64, seed: int = 0, image_size: int = 150) -> Workload:
    rng = np.random.default_rng(seed)
    model = XlaArticleCNN(image_size, seed=seed).to(device)
    images = rng.random((batch_size, image_size, image_size, 3), dtype=np.float32)
    labels = rng.integers(0, 2, batch_size).astype(np.float32)
    return Workload("cnn", model, Adam(model, lr=1e-3, eps=1e-7), images, labels, binary_cross_entropy)


def resnet_workload(device: Device, batch_size: int = 64, seed: int = 0) -> Workload:
    """ResNet-20 on 32x32x3 images of 10 classes, SGD with momentum 0.9; the model trains in
    training mode (batch statistics, moving averages updated every step)."""
    rng = np.random.default_rng(seed)
    model = ResNet20(seed=seed).to(device)
    model.train()
    images = rng.random((batch_size, 32, 32, 3), dtype=np.float32)
    labels = rng.integers(0, 10, batch_size).astype(np.int32)
    optimizer = SGD(model, lr=0.1, momentum=0.9)
    return Workload("resnet", model, optimizer, images, labels, softmax_cross_entropy)


class GptWorkload(Workload):
    train = staticmethod(gpt_step)


# nanoGPT's CPU run of the Shakespeare character model, and the model of its GPU run (6
# layers, 6 heads, 384 wide, blocks of 256) on batches of 8, to show how a gap grows with size.
GPT_CONFIGS = {
    "gpt": (GPTConfig(block_size=64, vocab_size=65, n_layer=4, n_head=4, n_embd=128), 12),
    "gpt-wide": (GPTConfig(block_size=256, vocab_size=65, n_layer=6, n_head=6, n_embd=384), 8),
}


def gpt_batch(config: GPTConfig, batch_size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random tokens (int32) of ``batch_size`` blocks, and the targets one token later."""
    tokens = np.random.default_rng(seed).integers(0, config.vocab_size, (batch_size, config.block_size + 1))
    return tokens[:, :-1].astype(np.int32), tokens[:, 1:].astype(np.int32)


def gpt_workload(
    device: Device, batch_size: int | None = None, seed: int = 0, name: str = "gpt", config: GPTConfig | None = None
) -> Workload:
    """The GPT's training step on random tokens (the targets are the inputs one token on),
    with AdamW as nanoGPT configures it, at a learning rate of 1e-3."""
    from braze.models.gpt import GPT

    named, default_batch = GPT_CONFIGS[name]
    config = config or named
    model = GPT(config, seed=seed).to(device)
    optimizer = model.configure_optimizers(0.1, 1e-3, (0.9, 0.99))
    x, y = gpt_batch(config, batch_size or default_batch, seed)
    return GptWorkload(name, model, optimizer, x, y, softmax_cross_entropy)


WORKLOADS = {
    "lenet": lenet_workload,
    "cnn": cnn_workload,
    "resnet": resnet_workload,
    "gpt": gpt_workload,
    "gpt-wide": lambda device, batch_size=None, seed=0: gpt_workload(device, batch_size, seed, "gpt-wide"),
}
