"""PyTorch's module traversal and freezing: ``named_children``, ``children``, ``modules``,
``apply`` (children before their parent) and ``requires_grad_``."""

from __future__ import annotations

import numpy as np

import braze
from braze import nn


class Block(nn.Module):
    def __init__(self) -> None:
        self.first = nn.Linear(3, 4)
        self.layers = [nn.Linear(4, 4), nn.Linear(4, 2)]
        self.scale = braze.tensor(np.float32(2.0), requires_grad=True)

    def forward(self, x):
        x = self.first(x)
        for layer in self.layers:
            x = layer(x)
        return x * self.scale


class Net(nn.Module):
    def __init__(self) -> None:
        self.block = Block()
        self.head = nn.Linear(2, 1)

    def forward(self, x):
        return self.head(self.block(x))


def test_children_are_the_direct_submodules_and_modules_every_one():
    net = Net()
    assert [name for name, _ in net.named_children()] == ["block", "head"]
    assert [name for name, _ in net.block.named_children()] == ["first", "layers.0", "layers.1"]
    assert list(net.children()) == [net.block, net.head]
    assert list(net.modules()) == [m for _, m in net.named_modules()]
    assert len(list(net.modules())) == 6  # net, block, its three linears, head


def test_apply_reaches_children_before_their_parent():
    net = Net()
    order = []
    assert net.apply(order.append) is net
    assert order == [net.block.first, *net.block.layers, net.block, net.head, net]


def test_apply_initializes_every_layer_of_a_kind():
    def zero_linears(module):
        if isinstance(module, nn.Linear):
            for p in module.parameters():
                with braze.no_grad():
                    p.copy_(np.zeros(p.shape, np.float32))

    net = Net().apply(zero_linears)
    out = net(braze.tensor(np.ones((2, 3), np.float32)))
    np.testing.assert_array_equal(out.numpy(), np.zeros((2, 1), np.float32))
    assert net.block.scale.numpy() == 2.0  # not a Linear's


def test_requires_grad_freezes_and_unfreezes_every_parameter_but_keeps_them_saved():
    net = Net()
    names = sorted(name for name, _ in net.named_parameters())
    assert net.block.requires_grad_(False) is net.block
    assert sorted(name for name, _ in net.named_parameters()) == [n for n in names if n.startswith("head.")]
    assert all(not p.requires_grad for p in [net.block.scale, *net.block.first.parameters()])
    assert sorted(net.state_dict()) == names  # frozen ones are still saved
    net.requires_grad_()
    assert sorted(name for name, _ in net.named_parameters()) == names


def test_zero_grad_clears_a_parameter_frozen_since_its_backward():
    layer = nn.Linear(2, 2)
    optimizer = braze.optim.SGD(layer.parameters(), lr=0.1)
    layer(braze.tensor(np.ones((1, 2), np.float32))).sum().backward()
    kernel = layer.kernel.numpy().copy()
    layer.requires_grad_(False)
    layer.zero_grad()
    optimizer.step()  # made before the freeze: it holds the kernel, whose gradient is gone
    np.testing.assert_array_equal(layer.kernel.numpy(), kernel)
