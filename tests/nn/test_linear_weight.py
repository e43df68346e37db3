"""A Linear's ``weight``, PyTorch's (out, in) view of its (in, out) kernel: read, trained
through, and written in place by PyTorch's initializations and ``.data`` updates, eagerly,
on the lazy device and under ``braze.jit``."""

from __future__ import annotations

import math

import numpy as np
import pytest

import braze
from braze import nn

MODES = ["eager", "lazy", "jit"]


def test_weight_is_the_kernel_transposed_and_gradients_reach_the_kernel():
    layer = nn.Linear(3, 2)
    np.testing.assert_array_equal(layer.weight.numpy(), layer.kernel.numpy().T)
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    out = nn.functional.linear(braze.tensor(x), layer.weight, layer.bias)
    np.testing.assert_allclose(out.numpy(), layer(braze.tensor(x)).numpy(), rtol=1e-6, atol=1e-6)
    out.sum().backward()
    np.testing.assert_allclose(layer.kernel.grad.numpy(), np.repeat(x.sum(0)[:, None], 2, 1), rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_in_place_updates_of_the_weight_are_written_into_the_kernel(mode):
    device = braze.LAZY_CPU if mode == "lazy" else braze.CPU
    layer = nn.Linear(3, 2).to(device)
    values = np.arange(6, dtype=np.float32).reshape(2, 3)  # (out, in)

    def update():
        with braze.no_grad():
            layer.weight.copy_(values)
        layer.weight.data.mul_(2.0)

    (braze.jit(update) if mode == "jit" else update)()
    np.testing.assert_array_equal(layer.kernel.numpy(), 2.0 * values.T)
    with pytest.raises(RuntimeError, match="requires grad"):
        layer.weight.fill_(0.0)  # outside no_grad, as PyTorch refuses for a parameter


def test_pytorchs_initializations_take_the_weights_fans():
    layer = nn.Linear(400, 10)
    nn.init.kaiming_uniform_(layer.weight, a=math.sqrt(5), generator=braze.Generator(0))
    bound = 1 / math.sqrt(400)  # PyTorch's Linear bound: fan_in is in_features
    kernel = layer.kernel.numpy()
    assert np.abs(kernel).max() <= bound and np.abs(kernel).max() > 0.9 * bound
    nn.init.xavier_normal_(layer.weight, generator=braze.Generator(1))
    std = math.sqrt(2 / (400 + 10))
    assert abs(layer.kernel.numpy().std() - std) < 6 * std / math.sqrt(2 * kernel.size)
