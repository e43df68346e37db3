"""A Sequential as PyTorch's nn.Sequential is used: a sequence of its layers (indexing,
slicing, len, iteration), a layer replaced or appended, the model computing what its
layers compute in order (a NumPy transcription of Linear and ReLU)."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze import keras, nn


def _forward(layers, x):
    for layer in layers:
        x = layer(x)
    return x


def test_a_sequential_is_a_sequence_of_its_layers():
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(model) == 3 and model[0] is model.layers[0] and model[-1] is model.layers[2]
    assert list(model) == model.layers
    head = model[:2]
    assert isinstance(head, nn.Sequential) and list(head) == model.layers[:2]
    x = braze.tensor(np.random.default_rng(0).standard_normal((4, 2)).astype(np.float32))
    kernel, bias = model[0].kernel.numpy(), model[0].bias.numpy()
    np.testing.assert_allclose(head(x).numpy(), np.maximum(x.numpy() @ kernel + bias, 0), rtol=1e-6, atol=1e-6)
    with pytest.raises(IndexError):
        model[3]


def test_a_layer_replaced_or_appended_takes_its_place():
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    tanh, sigmoid = nn.Tanh(), nn.Sigmoid()
    model[1] = tanh
    assert model.append(sigmoid) is model
    assert len(model) == 4 and model[1] is tanh and model[3] is sigmoid
    x = braze.tensor(np.ones((2, 2), np.float32))
    np.testing.assert_allclose(model(x).numpy(), _forward(model.layers, x).numpy(), rtol=1e-6)
    assert sorted(model.state_dict()) == ["layers.0.bias", "layers.0.kernel", "layers.2.bias", "layers.2.kernel"]


def test_a_layer_that_does_not_fit_leaves_the_model_as_it_was():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(2)])
    layers = list(model)
    with pytest.raises(braze.ShapeError, match="expects 3"):
        model[0] = keras.layers.Dense(5)  # the next Dense takes 3 features
    assert list(model) == layers
    assert model(braze.ones((1, 4))).shape == (1, 2)
