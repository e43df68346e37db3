"""PyTorch programs ported by their imports: the canonical MNIST example's network
(pytorch/examples, mnist/main.py) and a ResNet basic block as torchvision writes it, built
from braze.nn.torch_layers and braze.nn.functional. Their outputs against a NumPy network
computed from their own weights, within the float32 rounding bound of its sums, and their
training steps eagerly, on the lazy device and under braze.jit."""

from __future__ import annotations

import numpy as np
import pytest
from torch_references import U32, batch_norm_steps, conv2d, pool2d

import braze
from braze import nn
from braze.nn import Linear, Module
from braze.nn import functional as F
from braze.optim import SGD


def training_step(loss_function):
    """PyTorch's training step: zero the gradients, the loss, backward, the optimizer's step."""

    def step(net, optimizer, x, y):
        optimizer.zero_grad()
        loss = loss_function(net(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return step


class Net(Module):
    """pytorch/examples' MNIST network, as written there but for braze's imports."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = Linear(9216, 128)
        self.fc2 = Linear(128, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = braze.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def numpy_net(net, x, magnitudes=False):
    """The MNIST network in float64 from ``net``'s weights; with ``magnitudes``, the same
    sums over the absolute values of every weight and input (relu and the max pool are
    1-Lipschitz, so an error of a layer's input reaches its output at most through them)."""
    value = abs if magnitudes else (lambda a: a)

    def weights(layer, *names):
        return [value(getattr(layer, n).numpy().astype(np.float64)) for n in names]

    relu = (lambda a: a) if magnitudes else (lambda a: np.maximum(a, 0))
    x = relu(conv2d(value(x), *weights(net.conv1, "weight", "bias")))
    x = relu(conv2d(x, *weights(net.conv2, "weight", "bias")))
    x = pool2d(x, "max", (2, 2), (2, 2), (0, 0)).reshape(len(x), -1)  # flattened C, H, W, as PyTorch's
    kernel, bias = weights(net.fc1, "kernel", "bias")
    x = relu(x @ kernel + bias)
    kernel, bias = weights(net.fc2, "kernel", "bias")
    return x @ kernel + bias


def test_the_mnist_network_is_the_one_numpy_computes_from_its_weights():
    braze.manual_seed(0)
    net = Net()
    net.eval()  # no dropout
    x = np.random.default_rng(0).random((2, 1, 28, 28)).astype(np.float32)
    got = net(braze.tensor(x)).numpy()
    logits = numpy_net(net, x.astype(np.float64))
    shifted = logits - logits.max(1, keepdims=True)
    exact = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    # Each layer's sums (9 + 1, 288 + 1, 9216 + 1 and 128 + 1 terms) round within their
    # count of the magnitudes; a log_softmax moves an error of its input by at most twice.
    bound = 2 * (10 + 289 + 9217 + 129 + 8) * U32 * numpy_net(net, x.astype(np.float64), magnitudes=True).max()
    assert np.abs(got - exact).max() <= bound
    assert [name for name, _ in net.named_parameters()][:4] == [
        "conv1.weight",
        "conv1.bias",
        "conv2.weight",
        "conv2.bias",
    ]


def _mnist_steps(mode: str) -> list[np.ndarray]:
    braze.manual_seed(0)
    net = Net()
    for i, layer in enumerate((net.dropout1, net.dropout2)):
        layer._generator = braze.Generator(10 + i)  # the same masks in every mode
    device = braze.LAZY_CPU if mode == "lazy" else braze.CPU
    net.to(device)
    net.train()
    optimizer = SGD(net, lr=0.05)

    step = training_step(F.nll_loss)
    run = braze.jit(step) if mode == "jit" else step
    rng = np.random.default_rng(1)
    losses = []
    for _ in range(2):
        x = braze.tensor(rng.random((4, 1, 28, 28)).astype(np.float32), device=device)
        y = braze.tensor(rng.integers(0, 10, 4), device=device)
        losses.append(run(net, optimizer, x, y).numpy())
    return losses + [p.numpy() for p in net.parameters()]


def test_mnist_training_steps_agree_eagerly_lazily_and_compiled():
    eager = _mnist_steps("eager")
    assert eager[1] != eager[0]  # the first step changed the network
    for mode in ("lazy", "jit"):
        for got, expected in zip(_mnist_steps(mode), eager, strict=True):
            # The same sums in another order: the bound of the largest (9217 terms) is 5e-4
            # of the magnitudes, far above what reordering changes.
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5, err_msg=mode)


class BasicBlock(Module):
    """torchvision's ResNet basic block, with its projection shortcut."""

    def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample_conv = nn.Conv2d(inplanes, planes, 1, stride, bias=False)
        self.downsample_bn = nn.BatchNorm2d(planes)

    def forward(self, x):
        identity = self.downsample_bn(self.downsample_conv(x))
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + identity)


class TinyResNet(Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.layer1 = BasicBlock(4, 8, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.flatten = nn.Flatten()
        self.fc = Linear(8, 3)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer1(x)
        return self.fc(self.flatten(self.avgpool(x)))


def numpy_resnet(net, x):
    """The network in float64 from its weights, batch norm on the batch's statistics."""

    def conv_bn(x, conv, bn, stride, padding):
        w = conv.weight.numpy().astype(np.float64)
        y = conv2d(x, w, None, (stride, stride), ((padding, padding), (padding, padding)))
        gamma, beta = bn.weight.numpy().astype(np.float64), bn.bias.numpy().astype(np.float64)
        return batch_norm_steps([y], bn.momentum, bn.eps, gamma, beta)[0][0]

    x = np.maximum(conv_bn(x, net.conv1, net.bn1, 1, 1), 0)
    block = net.layer1
    identity = conv_bn(x, block.downsample_conv, block.downsample_bn, 2, 0)
    out = np.maximum(conv_bn(x, block.conv1, block.bn1, 2, 1), 0)
    out = np.maximum(conv_bn(out, block.conv2, block.bn2, 1, 1) + identity, 0)
    return out.mean((2, 3)) @ net.fc.kernel.numpy() + net.fc.bias.numpy()


def test_a_resnet_block_trains_on_batch_statistics_as_numpy_computes():
    braze.manual_seed(2)
    net = TinyResNet()
    x = np.random.default_rng(2).standard_normal((4, 3, 8, 8)).astype(np.float32)
    got = net(braze.tensor(x)).numpy()
    # Batch norm divides by a standard deviation of the batch, so the float32 errors of the
    # sums before it (36 and 72 terms) are scaled by 1 / std; a relative 1e-4 bounds them.
    np.testing.assert_allclose(got, numpy_resnet(net, x.astype(np.float64)), rtol=1e-4, atol=1e-4)


def _resnet_steps(mode: str) -> dict[str, np.ndarray]:
    braze.manual_seed(3)
    net = TinyResNet()
    device = braze.LAZY_CPU if mode == "lazy" else braze.CPU
    net.to(device)
    net.train()
    optimizer = SGD(net, lr=0.1, momentum=0.9)

    step = training_step(F.cross_entropy)
    run = braze.jit(step) if mode == "jit" else step
    rng = np.random.default_rng(4)
    for _ in range(3):
        x = braze.tensor(rng.standard_normal((4, 3, 8, 8)).astype(np.float32), device=device)
        run(net, optimizer, x, braze.tensor(rng.integers(0, 3, 4), device=device))
    net.eval()
    evaluated = net(braze.tensor(rng.standard_normal((2, 3, 8, 8)).astype(np.float32), device=device))
    return {"evaluated": evaluated.numpy(), **net.state_dict()}


@pytest.mark.parametrize("mode", ["lazy", "jit"])
def test_resnet_training_steps_and_running_statistics_agree_with_eager(mode):
    eager = _resnet_steps("eager")
    assert eager["layer1.bn2.num_batches_tracked"] == 3  # one per step
    assert not np.allclose(eager["layer1.bn2.running_mean"], 0)  # the steps moved the statistics
    got = _resnet_steps(mode)
    assert list(got) == list(eager)
    for name, expected in eager.items():
        np.testing.assert_allclose(got[name], expected, rtol=1e-4, atol=1e-5, err_msg=f"{mode}: {name}")
