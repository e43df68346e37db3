"""A PyTorch state_dict for a braze model and back (braze.nn.torch_state): Linear's kernel
(in, out) as PyTorch's weight (out, in), every other tensor as it is, checked against a
NumPy transcription of PyTorch's Linear (x @ weight.T + bias)."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze import nn
from braze.nn import functional as F


class Net(nn.Module):
    def __init__(self) -> None:
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.bn = nn.BatchNorm2d(4)
        self.layers = nn.ModuleList([nn.Linear(4 * 13 * 13, 8), nn.Linear(8, 3)])

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv1(x))), 2)
        return self.layers[1](F.relu(self.layers[0](braze.flatten(x, 1))))


def _images() -> braze.Tensor:
    return braze.tensor(np.random.default_rng(0).standard_normal((2, 1, 28, 28)).astype(np.float32))


def test_linear_weights_take_pytorchs_names_and_layout_and_the_rest_is_unchanged():
    net = Net()
    net(_images())  # a training step's statistics in the batch norm
    state, torch_state = net.state_dict(), nn.to_torch_state_dict(net)
    assert sorted(torch_state) == sorted(
        name.replace(".kernel", ".weight") if name.startswith("layers.") else name for name in state
    )
    np.testing.assert_array_equal(torch_state["layers.0.weight"], state["layers.0.kernel"].T)
    assert torch_state["layers.0.weight"].shape == (8, 4 * 13 * 13)  # PyTorch's (out, in)
    for name in ("conv1.weight", "bn.running_var", "bn.num_batches_tracked", "layers.1.bias"):
        np.testing.assert_array_equal(torch_state[name], state[name])
    # PyTorch's Linear is x @ weight.T + bias.
    x = np.random.default_rng(1).standard_normal((5, 8)).astype(np.float32)
    expected = x @ torch_state["layers.1.weight"].T + torch_state["layers.1.bias"]
    np.testing.assert_allclose(net.layers[1](braze.tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-6)


def test_a_pytorch_state_dict_loads_into_the_same_architecture():
    source = Net()
    source(_images())
    source.eval()
    loaded = Net()
    loaded.load_state_dict(nn.from_torch_state_dict(loaded, nn.to_torch_state_dict(source)))
    loaded.eval()
    np.testing.assert_array_equal(loaded(_images()).numpy(), source(_images()).numpy())


def test_a_real_pytorch_models_state_dict_gives_its_outputs():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    x = np.random.default_rng(2).standard_normal((3, 6)).astype(np.float32)
    expected = model(torch.from_numpy(x)).detach().numpy()
    net = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 2))
    state = {k.replace("0.", "layers.0.").replace("2.", "layers.2."): v.numpy() for k, v in model.state_dict().items()}
    net.load_state_dict(nn.from_torch_state_dict(net, state))
    np.testing.assert_allclose(net(braze.tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-6)
