"""Module bookkeeping and checkpoints: discovery, modes, devices, safe atomic saves."""

from __future__ import annotations

import re

import numpy as np
import pytest

import braze
from braze.models import LeNet, XlaArticleCNN
from braze.nn import CheckpointError, Dense, Sequential


def test_lenet_layout_and_parameter_count():
    model = LeNet(seed=0)
    shapes = [p.shape for p in model.parameters()]
    assert shapes == [(5, 5, 1, 6), (6,), (5, 5, 6, 16), (16,), (400, 120), (120,), (120, 84), (84,), (84, 10), (10,)]
    assert model.num_parameters() == 61706
    assert model(braze.zeros((3, 28, 28, 1))).shape == (3, 10)


def test_xla_article_cnn_layout():
    model = XlaArticleCNN(seed=0)
    assert [p.shape for p in model.parameters()][::2] == [
        (5, 5, 3, 64),
        (5, 5, 64, 32),
        (5, 5, 32, 16),
        (3600, 126),
        (126, 52),
        (52, 1),
    ]
    out = XlaArticleCNN(image_size=48, seed=0)(braze.zeros((2, 48, 48, 3))).numpy()
    assert out.shape == (2, 1) and np.all((out > 0) & (out < 1))


def test_same_seed_same_model():
    a, b = LeNet(seed=3), LeNet(seed=3)
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def test_to_a_float_dtype_converts_the_parameters_in_place_and_fit_keeps_it():
    model = Sequential(Dense(3, activation="relu", input_dim=2, generator=braze.Generator(0)), Dense(1))
    before = [p.numpy() for p in model.parameters()]
    held = model.parameters()
    assert model.to(dtype=braze.float64) is model
    assert model.parameters() == held and all(p.dtype == braze.float64 for p in held)
    for p, value in zip(held, before, strict=True):
        np.testing.assert_array_equal(p.numpy(), value.astype(np.float64))
    x = np.random.default_rng(0).standard_normal((8, 2))  # float64, as NumPy makes it
    model.compile(loss="mse", optimizer="sgd")
    model.fit(x, x[:, :1] * 0.5, batch_size=4, verbose=0)
    assert all(p.dtype == braze.float64 for p in model.parameters())
    # float64 inputs are not rounded to float32 on the way: the output is float64 maths.
    w1, b1, w2, b2 = (p.numpy() for p in model.parameters())
    np.testing.assert_allclose(model.predict(x), np.maximum(x @ w1 + b1, 0) @ w2 + b2, rtol=1e-13)
    with pytest.raises(TypeError, match="parameters must stay floats, not int32"):
        model.to(dtype=braze.int32)


def test_train_eval_modes_reach_every_layer():
    model = Sequential(Dense(2, input_dim=2), braze.nn.Dropout(0.5))
    model.eval()
    assert not any(m.training for _, m in model.named_modules())
    model.train()
    assert all(m.training for _, m in model.named_modules())


def test_save_and_load_round_trip(tmp_path):
    model, other = LeNet(seed=1), LeNet(seed=2)
    path = tmp_path / "lenet.npz"
    model.save(path)
    other.load(path)
    for p, q in zip(model.parameters(), other.parameters(), strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy())
    with np.load(path, allow_pickle=False) as archive:
        assert sorted(archive.files)[0] == "layers.0.bias"


def test_loading_into_a_model_of_another_shape_is_an_error(tmp_path):
    path = tmp_path / "small.npz"
    Sequential(Dense(3, input_dim=4)).save(path)
    fit = r"small.npz: checkpoint does not fit Sequential: "
    with pytest.raises(
        CheckpointError, match=fit + r"layers.0.kernel has shape \(4, 3\) in the checkpoint but \(5, 3\)"
    ):
        Sequential(Dense(3, input_dim=5)).load(path)
    with pytest.raises(CheckpointError, match=r"missing \['layers.1.bias', 'layers.1.kernel'\]"):
        Sequential(Dense(3, input_dim=4), Dense(2)).load(path)


def test_load_state_dict_strict_false_loads_what_fits_and_names_the_rest():
    small = Sequential(Dense(3, input_dim=4, generator=braze.Generator(1)))
    bigger = Sequential(Dense(3, input_dim=4), Dense(2))
    state = small.state_dict() | {"extra.weight": np.zeros(2, np.float32)}
    result = bigger.load_state_dict(state, strict=False)
    assert result.missing_keys == ["layers.1.bias", "layers.1.kernel"]
    assert result.unexpected_keys == ["extra.weight"]
    missing, unexpected = result  # a named tuple, as PyTorch's
    np.testing.assert_array_equal(bigger.layers[0].kernel.numpy(), small.layers[0].kernel.numpy())
    assert small.load_state_dict(small.state_dict()) == ([], [])
    with pytest.raises(CheckpointError, match=r"missing \['layers.1.bias', 'layers.1.kernel'\], unexpected \['extra"):
        bigger.load_state_dict(state)
    before = np.array(bigger.layers[0].kernel.numpy())
    wrong = {"layers.0.kernel": np.ones((4, 3), np.float32), "layers.0.bias": np.ones(4, np.float32)}
    with pytest.raises(CheckpointError, match=r"layers.0.bias has shape \(4,\) in the checkpoint but \(3,\)"):
        bigger.load_state_dict(wrong, strict=False)
    np.testing.assert_array_equal(bigger.layers[0].kernel.numpy(), before)  # nothing was loaded


def test_garbage_checkpoint_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.npz"
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match=rf"^{re.escape(str(path))}: not a checkpoint: wrong magic bytes"):
        LeNet().load(path)


def test_interrupted_save_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "model.npz"
    model = LeNet(seed=1)
    model.save(path)
    before = path.read_bytes()

    def explode(*args, **kwargs):
        raise KeyboardInterrupt("power cut")

    monkeypatch.setattr(np.lib.format, "write_array", explode)  # the first array of the archive
    with pytest.raises(KeyboardInterrupt):
        LeNet(seed=2).save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["model.npz"]


def test_a_module_held_twice_is_named_once_with_its_parameters():
    """Discovery walks each module's attributes once per meeting: a submodule held by two
    parents (and in a list) is one module, its parameters one each, named where first met."""
    from braze.nn import Linear, Module

    class Pair(Module):
        def __init__(self, shared: Module) -> None:
            self.first = shared
            self.own = Linear(2, 3)
            self.layers = [shared, Linear(3, 1)]

    shared = Linear(3, 2)
    model = Pair(shared)
    model.again = shared
    model.outer = Linear(1, 1)
    named = [("first", shared), ("own", model.own), ("layers.1", model.layers[1]), ("outer", model.outer)]
    assert [name for name, _ in model.named_modules()] == ["", *(where for where, _ in named)]
    expected = [(f"{where}.{w}", id(getattr(layer, w))) for where, layer in named for w in ("kernel", "bias")]
    assert [(name, id(p)) for name, p in model.named_parameters()] == expected
    assert [id(p) for p in model.parameters()] == [k for _, k in expected]
