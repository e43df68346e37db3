"""What every peer implementation shares: the two workloads as layer lists, the synthetic
batch (the same numpy arrays for every framework) and the initial parameters.

Layouts are framework-neutral: images NHWC, conv kernels HWIO, dense kernels (in, out), and
the flatten is in NHWC order. A framework that computes in NCHW (PyTorch) converts the
arrays once in its setup, so all frameworks start from the same weights and their first-step
losses agree; the ``first_loss`` column is a cheap check that they compute the same step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    batch: int
    image: tuple[int, int, int]  # H, W, C
    layers: tuple[tuple, ...]
    loss: str  # "sparse_softmax_ce" (integer labels) or "sigmoid_bce" (0/1 float labels, logit in)
    optimizer: str  # "sgd" or "adam"
    lr: float
    default_steps: int


# Layers: ("conv", k, c_in, c_out, padding "SAME"/"VALID", activation), ("avgpool",), ("maxpool",)
# (2x2, stride 2), ("flatten",), ("dense", n_in, n_out, activation). Activation "relu" or None.
WORKLOADS: dict[str, Workload] = {
    "lenet": Workload(
        name="lenet",
        title="LeNet-5, batch 128, 28x28x1, softmax CE, SGD lr 0.1",
        batch=128,
        image=(28, 28, 1),
        layers=(
            ("conv", 5, 1, 6, "SAME", "relu"),
            ("avgpool",),
            ("conv", 5, 6, 16, "VALID", "relu"),
            ("avgpool",),
            ("flatten",),
            ("dense", 400, 120, "relu"),
            ("dense", 120, 84, "relu"),
            ("dense", 84, 10, None),
        ),
        loss="sparse_softmax_ce",
        optimizer="sgd",
        lr=0.1,
        default_steps=20,
    ),
    "cnn": Workload(
        name="cnn",
        title="XLA article CNN, batch 64, 150x150x3, sigmoid BCE, Adam lr 1e-3",
        batch=64,
        image=(150, 150, 3),
        layers=(
            ("conv", 5, 3, 64, "VALID", "relu"),
            ("maxpool",),
            ("conv", 5, 64, 32, "VALID", "relu"),
            ("maxpool",),
            ("conv", 5, 32, 16, "VALID", "relu"),
            ("maxpool",),
            ("flatten",),
            ("dense", 3600, 126, "relu"),
            ("dense", 126, 52, "relu"),
            ("dense", 52, 1, None),  # the sigmoid is applied by the loss
        ),
        loss="sigmoid_bce",
        optimizer="adam",
        lr=1e-3,
        default_steps=5,
    ),
}

ADAM_BETA1 = 0.9
ADAM_BETA2 = 0.999
ADAM_EPS = 1e-7
BCE_EPS = 1e-7  # Keras clips probabilities to [eps, 1 - eps] before the logs


def workload(name: str) -> Workload:
    try:
        return WORKLOADS[name]
    except KeyError:
        raise ValueError(f"unknown workload {name!r}; choose from {', '.join(WORKLOADS)}") from None


def make_batch(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The one synthetic batch: images NHWC float32 in [0, 1), labels int32 (LeNet) or float32 0/1 (CNN)."""
    w = workload(name)
    rng = np.random.default_rng(0)
    images = rng.random((w.batch, *w.image), dtype=np.float32)
    if w.loss == "sparse_softmax_ce":
        labels = rng.integers(0, 10, w.batch).astype(np.int32)
    else:
        labels = rng.integers(0, 2, w.batch).astype(np.float32)
    return images, labels


def init_params(name: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """(kernel, bias) per conv/dense layer: Glorot-uniform kernels (HWIO / (in, out)), zero biases."""
    rng = np.random.default_rng(1)
    params = []
    for layer in workload(name).layers:
        if layer[0] == "conv":
            _, k, c_in, c_out, _, _ = layer
            shape, fan_in, fan_out = (k, k, c_in, c_out), k * k * c_in, k * k * c_out
        elif layer[0] == "dense":
            _, n_in, n_out, _ = layer
            shape, fan_in, fan_out = (n_in, n_out), n_in, n_out
        else:
            continue
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        kernel = rng.uniform(-limit, limit, shape).astype(np.float32)
        params.append((kernel, np.zeros(shape[-1], np.float32)))
    return params


def flatten_shape(name: str) -> tuple[int, int, int]:
    """(H, W, C) of the activation that the flatten layer receives."""
    h, w, c = workload(name).image
    for layer in workload(name).layers:
        if layer[0] == "conv":
            _, k, _, c, padding, _ = layer
            if padding == "VALID":
                h, w = h - k + 1, w - k + 1
        elif layer[0] in ("avgpool", "maxpool"):
            h, w = h // 2, w // 2
        elif layer[0] == "flatten":
            return h, w, c
    raise ValueError(f"workload {name!r} has no flatten layer")
