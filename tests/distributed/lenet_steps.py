"""20 SGD steps of LeNet on the first 2,560 MNIST training images, eagerly, lazily or under
``braze.jit``: the program that tests/distributed runs on 2 ranks (batch 64 each) and
on 1 process (batch 128), whose parameters must agree."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

import braze
from braze.data import DataLoader, load_mnist
from braze.models import LeNet
from braze.nn import softmax_cross_entropy
from braze.optim import SGD

STEPS = 20
GLOBAL_BATCH = 128
LR = 0.05
MNIST_DIR = Path(__file__).resolve().parents[2] / "data" / "mnist"
MODES = ("eager", "lazy", "jit")


def loader(ranks: int) -> DataLoader:
    """This rank's shard of the 20 global batches of 128 (the whole batches for 1 rank)."""
    mnist = load_mnist(MNIST_DIR)
    count = STEPS * GLOBAL_BATCH
    images = (mnist.train_images[:count].astype(np.float32) / np.float32(255.0))[..., None]
    return DataLoader((images, mnist.train_labels[:count]), GLOBAL_BATCH // ranks, shard=ranks > 1, prefetch=0)


def train(mode: str, ranks: int, wrap: Callable = lambda optimizer: optimizer) -> dict[str, np.ndarray]:
    """The parameters after 20 steps; ``wrap`` makes the optimizer data-parallel."""
    device = braze.CPU if mode == "eager" else braze.LAZY_CPU
    model = LeNet(seed=0).to(device)
    optimizer = wrap(SGD(model, lr=LR))

    def step(model, optimizer, x, y):
        optimizer.zero_grad()
        loss = softmax_cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    run = braze.jit(step) if mode == "jit" else step
    for images, labels in loader(ranks):
        run(model, optimizer, braze.tensor(images, device=device), braze.tensor(labels, device=device))
    return model.state_dict()
