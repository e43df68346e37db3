"""PyTorch's torch.save / torch.load of a state dict as braze.save / braze.load: named
arrays written without pickle, read back exactly, and everything else refused by name."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze import nn


@pytest.mark.parametrize("name", ["model.pt", "model.pth", "model.safetensors"])
def test_a_state_dict_saved_loads_back_into_the_model(tmp_path, name):
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(2 * 4 * 4, 3))
    model(braze.tensor(np.random.default_rng(0).standard_normal((2, 1, 6, 6)).astype(np.float32)))
    braze.save(model.state_dict(), tmp_path / name)
    fresh = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(2 * 4 * 4, 3))
    fresh.load_state_dict(braze.load(tmp_path / name, map_location="cpu"))
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(fresh.state_dict()[key], value)
        assert fresh.state_dict()[key].dtype == value.dtype
    tensors = {"w": braze.ones((2, 2)), "step": np.array(3)}
    braze.save(tensors, tmp_path / "tensors.pt")
    loaded = braze.load(tmp_path / "tensors.pt")
    np.testing.assert_array_equal(loaded["w"], np.ones((2, 2), np.float32))
    assert loaded["step"] == 3


def test_what_a_pickle_would_hold_is_refused(tmp_path):
    model = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="not a Linear"):
        braze.save(model, tmp_path / "m.pt")
    optimizer = braze.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with pytest.raises(TypeError, match="'state' holds a dict"):
        braze.save(optimizer.state_dict(), tmp_path / "o.pt")
    assert not (tmp_path / "m.pt").exists() and not (tmp_path / "o.pt").exists()
    braze.save(model.state_dict(), tmp_path / "m.pt")
    with pytest.raises(ValueError, match="never unpickles"):
        braze.load(tmp_path / "m.pt", weights_only=False)
