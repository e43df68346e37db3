"""ResNet-20 (braze.models.ResNet20, functional) against a NumPy ResNet computed from its own
weights, and its training step compiled as eagerly (batch statistics and moving averages)."""

from __future__ import annotations

import numpy as np

import braze
from braze.models import ResNet20
from braze.models.resnet import BLOCKS_PER_STAGE, STAGES
from braze.nn import BatchNormalization, Conv2D, Dense, softmax_cross_entropy
from braze.optim import SGD


def numpy_conv_same(x, kernel, stride):
    """TensorFlow's "same" convolution (extra padding after the image), NHWC and HWIO."""
    k = kernel.shape[0]
    out = -(-x.shape[1] // stride)
    total = max((out - 1) * stride + k - x.shape[1], 0)
    padded = np.pad(x, ((0, 0), (total // 2, total - total // 2), (total // 2, total - total // 2), (0, 0)))
    y = np.zeros((x.shape[0], out, out, kernel.shape[3]))
    for i in range(k):
        for j in range(k):
            patch = padded[:, i : i + stride * out : stride, j : j + stride * out : stride]
            y += patch @ kernel[i, j]
    return y


def numpy_resnet(model, x):
    convs = iter(layer for layer in model.layers if isinstance(layer, Conv2D))
    norms = iter(layer for layer in model.layers if isinstance(layer, BatchNormalization))

    def conv_bn(x, stride):
        conv, bn = next(convs), next(norms)
        y = numpy_conv_same(x, conv.kernel.numpy().astype(np.float64), stride)
        y = (y - y.mean((0, 1, 2))) / np.sqrt(y.var((0, 1, 2)) + bn.epsilon)
        return y * bn.gamma.numpy() + bn.beta.numpy()

    x = np.maximum(conv_bn(x, 1), 0)
    for stage, filters in enumerate(STAGES):
        for block in range(BLOCKS_PER_STAGE):
            stride = 2 if stage > 0 and block == 0 else 1
            y = conv_bn(np.maximum(conv_bn(x, stride), 0), 1)
            shortcut = conv_bn(x, stride) if stride != 1 or x.shape[-1] != filters else x
            x = np.maximum(y + shortcut, 0)
    dense = next(layer for layer in model.layers if isinstance(layer, Dense))
    return x.mean((1, 2)) @ dense.kernel.numpy() + dense.bias.numpy()


def test_resnet20_is_the_network_numpy_computes():
    model = ResNet20(input_shape=(8, 8, 3), classes=4, seed=0)
    assert len([m for m in model.layers if isinstance(m, Conv2D)]) == 1 + 2 * 9 + 2  # stem, blocks, projections
    x = np.random.default_rng(0).random((4, 8, 8, 3)).astype(np.float32)
    got = model(x, training=True).numpy()
    np.testing.assert_allclose(got, numpy_resnet(model, x.astype(np.float64)), rtol=1e-3, atol=1e-4)


def _steps(jitted: bool) -> list[np.ndarray]:
    model = ResNet20(input_shape=(8, 8, 3), classes=4, seed=1)
    model.train()
    optimizer = SGD(model, lr=0.1, momentum=0.9)

    def step(model, optimizer, x, y):
        optimizer.zero_grad()
        loss = softmax_cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    run = braze.jit(step) if jitted else step
    rng = np.random.default_rng(2)
    for _ in range(2):
        x = braze.tensor(rng.random((4, 8, 8, 3)).astype(np.float32))
        run(model, optimizer, x, braze.tensor(rng.integers(0, 4, 4).astype(np.int32)))
    return [w.numpy() for w in model.weights]


def test_a_compiled_resnet_step_updates_weights_and_moving_statistics_as_eagerly():
    for got, expected in zip(_steps(True), _steps(False), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
