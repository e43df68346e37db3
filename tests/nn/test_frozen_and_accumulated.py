"""Frozen parameters stay a module's state; bfloat16 weights load as their values; and a
jitted step freezes, drops and accumulates gradients as the eager step does."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze.nn import Dense, Linear, Sequential
from braze.optim import SGD, AdamW


def frozen_model() -> Sequential:
    model = Sequential(Linear(3, 4), Linear(4, 2))
    model.layers[0].kernel.requires_grad_(False)
    return model


def test_a_frozen_parameter_is_saved_loaded_and_moved(tmp_path):
    model = frozen_model()
    assert sorted(model.state_dict()) == ["layers.0.bias", "layers.0.kernel", "layers.1.bias", "layers.1.kernel"]
    model.save(tmp_path / "frozen.npz")
    fresh = Sequential(Linear(3, 4), Linear(4, 2))
    fresh.load(tmp_path / "frozen.npz")  # strict: nothing missing
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(fresh.state_dict()[name], value)
    model.to(dtype=braze.float64)
    assert {t.dtype for t in (model.layers[0].kernel, model.layers[0].bias)} == {braze.float64}
    model.to(braze.LAZY_CPU)
    assert {t.device.backend for t in (model.layers[0].kernel, model.layers[0].bias)} == {"LAZY"}
    # Frozen is still not trained: the parameters are those that require grad.
    assert len(model.parameters()) == 3


def bfloat16_values(values) -> np.ndarray:
    """``values`` rounded to bfloat16 (nearest even), as float32."""
    bits = np.asarray(values, np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def test_bfloat16_weights_load_and_convert_as_their_values():
    values = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    layer = Linear(2, 2)
    layer.kernel = braze.tensor(values, dtype=braze.bfloat16).requires_grad_(True)
    layer.load_state_dict(layer.state_dict())
    np.testing.assert_array_equal(layer.kernel.numpy(), values)
    dense = Dense(2, input_dim=2)
    dense.kernel = braze.tensor(values, dtype=braze.bfloat16).requires_grad_(True)
    dense.set_weights(dense.get_weights())
    np.testing.assert_array_equal(dense.get_weights()[0], values)
    converted = Linear(2, 2)
    before = converted.kernel.numpy().copy()
    converted.to(dtype=braze.bfloat16)
    np.testing.assert_array_equal(converted.kernel.numpy(), bfloat16_values(before))


def train_step(model, optimizer, x):
    optimizer.zero_grad()
    (model(x) ** 2).sum().backward()
    optimizer.step()


@pytest.mark.parametrize("make_optimizer", [lambda m: SGD(m, lr=0.1, momentum=0.9), lambda m: AdamW(m, lr=0.01)])
def test_a_parameter_frozen_between_jitted_steps_stops_training(make_optimizer):
    models = [Dense(2, input_dim=3, generator=braze.Generator(0)) for _ in range(2)]
    optimizers = [make_optimizer(m) for m in models]
    x = braze.tensor(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
    steps = [train_step, braze.jit(train_step)]
    for step, model, optimizer in zip(steps, models, optimizers, strict=True):
        step(model, optimizer, x)
        model.kernel.requires_grad_(False)
        frozen = model.kernel.numpy().copy()
        step(model, optimizer, x)
        step(model, optimizer, x)
        np.testing.assert_array_equal(model.kernel.numpy(), frozen)
        assert model.kernel.grad is None
    np.testing.assert_allclose(models[1].bias.numpy(), models[0].bias.numpy(), rtol=1e-6, atol=1e-7)


def accumulate(model, x):
    (model(x) ** 2).sum().backward()


def test_jitted_calls_accumulate_gradients_as_eager_ones():
    models = [Dense(2, input_dim=3, generator=braze.Generator(1)) for _ in range(2)]
    jitted = braze.jit(accumulate)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = braze.tensor(rng.random((4, 3), dtype=np.float32))
        accumulate(models[0], x)
        jitted(models[1], x)
        for eager, compiled in zip(models[0].parameters(), models[1].parameters(), strict=True):
            np.testing.assert_allclose(compiled.grad.numpy(), eager.grad.numpy(), rtol=1e-5, atol=1e-6)
    # A fresh accumulation (gradients dropped outside) and a continued one: one executable each.
    for model in models:
        model.zero_grad()
    x = braze.tensor(rng.random((4, 3), dtype=np.float32))
    accumulate(models[0], x)
    jitted(models[1], x)
    for eager, compiled in zip(models[0].parameters(), models[1].parameters(), strict=True):
        np.testing.assert_allclose(compiled.grad.numpy(), eager.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert jitted.compiles == 2


def test_a_jitted_optimizer_step_reads_gradients_computed_before_it():
    models = [Dense(2, input_dim=3, generator=braze.Generator(2)) for _ in range(2)]
    optimizers = [SGD(m, lr=0.1, momentum=0.9) for m in models]
    update = braze.jit(lambda optimizer: optimizer.step())
    x = braze.tensor(np.ones((4, 3), np.float32))
    for _ in range(3):
        for model, optimizer in zip(models, optimizers, strict=True):
            optimizer.zero_grad()
            (model(x) ** 2).sum().backward()
        optimizers[0].step()
        update(optimizers[1])
        for eager, compiled in zip(models[0].parameters(), models[1].parameters(), strict=True):
            np.testing.assert_allclose(compiled.numpy(), eager.numpy(), rtol=1e-6, atol=1e-7)


def test_a_keras_frozen_layer_is_not_trained_by_an_optimizer_made_from_the_model():
    model = Sequential(Dense(4, input_dim=3, generator=braze.Generator(3)), Dense(2, generator=braze.Generator(4)))
    model.layers[0].trainable = False  # Keras's freezing, in a PyTorch-style loop
    optimizer = SGD(model, lr=0.1)
    frozen = [w.numpy().copy() for w in model.layers[0].weights]
    trained = [w.numpy().copy() for w in model.layers[1].weights]
    train_step(model, optimizer, braze.ones((2, 3)))
    assert [id(p) for p in model.parameters()] == [id(w) for w in model.trainable_weights]
    for weight, before in zip(model.layers[0].weights, frozen, strict=True):
        np.testing.assert_array_equal(weight.numpy(), before)
    assert all(not np.array_equal(w.numpy(), b) for w, b in zip(model.layers[1].weights, trained, strict=True))
    assert len(model.state_dict()) == 4  # frozen weights are saved all the same
