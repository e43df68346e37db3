"""LeNet-5 on MNIST with the X10 tutorial's training loop and per-epoch report.

The loop is the tutorial's: statistics accumulate as tensors on the training device and
are read once per epoch, when the line is printed.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass

from braze import ops
from braze.autodiff import no_grad
from braze.data import mnist_loaders
from braze.distributed import DistributedOptimizer, size
from braze.distributed.metrics import all_reduce_statistics
from braze.lazy import barrier
from braze.models import LeNet
from braze.nn import Statistics, softmax_cross_entropy
from braze.nn.progress import ProgressBar
from braze.optim import SGD
from braze.runtime.device import Device


@dataclass
class EpochResult:
    epoch: int
    train: Statistics
    test: Statistics
    seconds: float

    def line(self) -> str:
        return (
            f"[Epoch {self.epoch}] {self.train.describe('Training')}, {self.test.describe('Test')} "
            f"seconds per epoch: {self.seconds:.1f}"
        )


def train_lenet(
    device: Device,
    epochs: int = 5,
    batch_size: int = 128,
    lr: float = 0.1,
    data: str | None = None,
    seed: int = 0,
    steps_per_epoch: int | None = None,
    report: Callable[[str], None] = print,
    distributed: bool = False,
    eval_steps: int | None = None,
) -> tuple[object, list[EpochResult]]:
    """Train LeNet-5 with SGD; return the model and one result per epoch.

    ``steps_per_epoch`` and ``eval_steps`` cut each epoch's training and test batches short
    (None: all), for quick runs on slow devices such as a simulated GPU.

    ``distributed``: one rank of a data-parallel job (``braze.distributed.init()`` done).
    The job trains as one process would, on the same batches of ``batch_size``: each rank
    takes its share of every batch, gradients are averaged over the ranks, and the
    epoch's statistics summed, so only the time changes with the number of processes."""
    ranks = size() if distributed else 1
    train_batches, test_batches = mnist_loaders(batch_size // ranks, _load(data), seed=seed, shard=distributed)
    model = LeNet(seed=seed).to(device)
    optimizer = SGD(model, lr=lr)
    if distributed:
        optimizer = DistributedOptimizer(optimizer)
    results = []
    report("Beginning training...")
    for epoch in range(epochs):
        start = time.perf_counter()
        train_stats, test_stats = Statistics(device), Statistics(device)
        total = min(len(train_batches), steps_per_epoch or len(train_batches))
        bar = ProgressBar(total, f"[Epoch {epoch}]")
        model.train()
        for step, (images, labels) in enumerate(train_batches):
            if step >= total:
                break
            x, y = ops.tensor(images, device=device), ops.tensor(labels, device=device)
            optimizer.zero_grad()
            logits = model(x)
            loss = softmax_cross_entropy(logits, y)
            loss.backward()
            train_stats.update(logits, y, loss)
            optimizer.step()  # on a lazy device this ends with the barrier: one traced graph per step
            bar.update()
        bar.close()
        model.eval()
        with no_grad():
            for images, labels in itertools.islice(test_batches, eval_steps):
                x, y = ops.tensor(images, device=device), ops.tensor(labels, device=device)
                logits = model(x)
                test_stats.update(logits, y, softmax_cross_entropy(logits, y))
                if device.is_lazy:
                    barrier(device)
        if distributed:
            all_reduce_statistics(train_stats)
            all_reduce_statistics(test_stats)
        result = EpochResult(epoch, train_stats, test_stats, 0.0)
        result.line()  # reading the statistics is part of the epoch's time, as in the tutorial
        result.seconds = time.perf_counter() - start
        report(result.line())
        results.append(result)
    return model, results


def _load(path: str | None):
    from braze.data import load_mnist

    return load_mnist(path)
