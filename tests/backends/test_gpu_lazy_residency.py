"""Lazy GPU tensors keep their data on the device: a training step uploads only the scalars
it lifts into parameters (a learning rate) and downloads nothing until a value is read,
and its parameters end where the same steps on the CPU put them."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
from gpu_device import requires_gpu_runtime

import braze
from braze import lazy
from braze.nn import Dense, Sequential, softmax_cross_entropy
from braze.ops.random import Generator
from braze.optim import SGD
from braze.runtime import metrics

pytestmark = requires_gpu_runtime


def _train(device: str, steps: int, after_each=None) -> Sequential:
    rng = np.random.default_rng(0)
    g = Generator(1)
    model = Sequential(Dense(8, input_dim=4, activation="relu", generator=g), Dense(3, generator=g)).to(device)
    optimizer = SGD(model, lr=0.1, momentum=0.9)
    x = braze.tensor(rng.standard_normal((16, 4)).astype(np.float32), device=device)
    y = braze.tensor(rng.integers(0, 3, 16).astype(np.int32), device=device)
    for _ in range(steps):
        optimizer.zero_grad()
        loss = softmax_cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        if after_each is not None:
            after_each(loss)
    return model


def test_a_lazy_gpu_step_moves_only_its_scalars_and_what_is_read():
    moved = []

    def count(loss: braze.Tensor) -> None:
        to, back = metrics.counter("TransferToDevice"), metrics.counter("TransferFromDevice")
        loss.item()
        loss.item()  # a second read of the same value downloads nothing
        moved.append((to, back, metrics.counter("TransferFromDevice") - back))

    model = _train("gpu:lazy", 4, count)
    (step_graph,) = [e.graph for e in lazy.EXECUTOR.cache.executables()[-1:]]
    # The step's scalars, uploaded each step: the optimizer's numbers and the loss's class
    # bounds (int32); the optimizer's step count, an int64 scalar, lives on the device.
    lifted = sum(1 for p in step_graph.params if p.aval.shape == () and p.aval.dtype.name != "int64")
    assert 0 < lifted < len(step_graph.params)
    uploads = [later[0] - earlier[0] for earlier, later in pairwise(moved)]
    downloads_between_steps = [later[1] - (earlier[1] + earlier[2]) for earlier, later in pairwise(moved)]
    assert uploads == [lifted, lifted, lifted]
    assert downloads_between_steps == [0, 0, 0]
    assert [read for _, _, read in moved] == [1, 1, 1, 1]
    expected = _train("cpu", 4)
    for got, want in zip(model.parameters(), expected.parameters(), strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_an_array_handed_to_another_library_is_its_own_copy():
    """A lazy GPU value's download serves every later read: what DLPack hands over must be
    a copy, so a write through the other library changes neither."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = braze.tensor(x, device="gpu:lazy")
    assert not t.numpy().flags.writeable
    shared = np.from_dlpack(t)
    shared += 1
    np.testing.assert_array_equal(t.numpy(), x)
    np.testing.assert_array_equal((t * 1.0).numpy(), x)
