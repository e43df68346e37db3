"""What every peer implementation shares: the workloads (LeNet and the CNN as layer lists,
ResNet-20 as its blocks), the synthetic batch (the same numpy arrays for every framework)
and the initial parameters.

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
    momentum: float = 0.0  # SGD's (PyTorch's formula: v = m v + g, p -= lr v)


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

# ResNet-20 (He et al., section 4.2): a 3x3 stem of 16 filters, three stages of three basic
# blocks (16, 32, 64 filters; the first block of stages 2 and 3 has stride 2 and a 1x1
# projection shortcut), global average pooling, a dense layer of 10 logits. Every conv is
# bias-free and followed by batch norm (epsilon 1e-3, Keras's; gamma 1, beta 0 at the start).
WORKLOADS["resnet"] = Workload(
    name="resnet",
    title="ResNet-20, batch 64, 32x32x3, softmax CE, SGD lr 0.1 momentum 0.9",
    batch=64,
    image=(32, 32, 3),
    layers=(),
    loss="sparse_softmax_ce",
    optimizer="sgd",
    lr=0.1,
    default_steps=10,
    momentum=0.9,
)
RESNET_STAGES = (16, 32, 64)
RESNET_BLOCKS = 3
RESNET_CLASSES = 10
BN_EPS = 1e-3
BN_MOMENTUM = 0.99  # Keras's: moving = moving * 0.99 + batch * 0.01


def resnet_blocks() -> list[tuple[int, int, int]]:
    """(input channels, output channels, stride) of each residual block, in order."""
    blocks, channels = [], RESNET_STAGES[0]
    for stage, filters in enumerate(RESNET_STAGES):
        for block in range(RESNET_BLOCKS):
            stride = 2 if stage > 0 and block == 0 else 1
            blocks.append((channels, filters, stride))
            channels = filters
    return blocks


def resnet_params() -> dict[str, np.ndarray]:
    """Glorot-uniform conv kernels (HWIO) and dense kernel, a zero dense bias, by name:
    ``stem``, ``block{i}.conv1``, ``block{i}.conv2``, ``block{i}.projection`` (where the
    block has one), ``dense.kernel``, ``dense.bias``."""
    rng = np.random.default_rng(1)

    def glorot(shape: tuple[int, ...]) -> np.ndarray:
        receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
        fan_in, fan_out = receptive * shape[-2], receptive * shape[-1]
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-limit, limit, shape).astype(np.float32)

    params = {"stem": glorot((3, 3, 3, RESNET_STAGES[0]))}
    for i, (c_in, c_out, stride) in enumerate(resnet_blocks()):
        params[f"block{i}.conv1"] = glorot((3, 3, c_in, c_out))
        params[f"block{i}.conv2"] = glorot((3, 3, c_out, c_out))
        if stride != 1 or c_in != c_out:
            params[f"block{i}.projection"] = glorot((1, 1, c_in, c_out))
    params["dense.kernel"] = glorot((RESNET_STAGES[-1], RESNET_CLASSES))
    params["dense.bias"] = np.zeros(RESNET_CLASSES, np.float32)
    return params


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
