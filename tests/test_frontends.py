"""The ways users switch the compiler on: ``set_jit(True)``, Keras ``jit_compile=True``,
automatic barriers, and the ``braze bench`` commands that reproduce both case studies."""

from __future__ import annotations

import json

import numpy as np
import pytest

import braze
from braze import cli
from braze.nn import Dense, Sequential
from braze.optim import SGD
from braze.runtime import metrics


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path_factory.getbasetemp() / "frontends-cache"))
    metrics.reset()
    yield
    braze.config.set_jit(False)


def separable(n=64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    return x, (x[:, 0] - x[:, 1] > 0).astype(np.int32)


def mlp(seed=0):
    return Sequential(
        Dense(8, activation="relu", input_dim=4, generator=braze.Generator(seed)),
        Dense(2, generator=braze.Generator(seed + 1)),
    )


def test_set_jit_runs_fit_with_one_compile_per_distinct_step():
    braze.config.set_jit(True)
    assert braze.config.jit_enabled() and braze.default_device() == braze.LAZY_CPU
    model = mlp()
    assert model.device == braze.LAZY_CPU
    model.compile(loss="softmax_cross_entropy", optimizer=SGD(lr=0.5), metrics=["accuracy"])
    x, y = separable()
    history = model.fit((x, y), epochs=4, batch_size=16, validation_data=(x, y), verbose=0).history
    assert metrics.counter("Compile") == 2  # the training step and the evaluation step
    assert metrics.counter("Barrier") >= 4 * 4
    assert history["loss"][-1] < history["loss"][0]


def test_keras_fit_with_jit_compile_matches_eager_training():
    x, y = separable(n=400)
    eager, compiled = mlp(), mlp()
    eager.compile(loss="softmax_cross_entropy", optimizer=SGD(lr=0.1, momentum=0.9))
    compiled.compile(loss="softmax_cross_entropy", optimizer=SGD(lr=0.1, momentum=0.9), jit_compile=True)
    eager.fit((x, y), epochs=2, batch_size=16, verbose=0, shuffle=False)  # 50 steps, the same batches
    compiled.fit((x, y), epochs=2, batch_size=16, verbose=0, shuffle=False)
    for p, q in zip(eager.parameters(), compiled.parameters(), strict=True):
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-4, atol=1e-4)
    assert compiled._trainer.train_function.compiles <= 2  # the first call also creates the momentum slots


def test_optimizer_step_ends_with_a_barrier_on_a_lazy_device():
    model = mlp().to(braze.LAZY_CPU)
    optimizer = SGD(model, lr=0.1)
    x, y = separable(16)
    loss = braze.nn.softmax_cross_entropy(
        model(braze.tensor(x, device=braze.LAZY_CPU)), braze.tensor(y, device=braze.LAZY_CPU)
    )
    loss.backward()
    optimizer.step()
    assert metrics.counter("Barrier") == 1
    assert not model.parameters()[0]._value.pending


def test_braze_bench_lenet_writes_a_record(tmp_path, capsys):
    out = tmp_path / "lenet.json"
    assert cli.main(["bench", "lenet", "--epochs", "1", "--steps-per-epoch", "3", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.count("[Epoch 0] Training Loss:") == 2
    assert "steady-state speed-up" in printed and "Counter: CacheHit" in printed
    record = json.loads(out.read_text())
    assert [m["mode"] for m in record["modes"]] == ["eager", "compiled"]
    eager, compiled = record["modes"]
    assert eager["accuracy"] == pytest.approx(compiled["accuracy"], abs=0.2)


def test_braze_bench_cnn_runs_on_a_generated_folder(tmp_path, capsys):
    out = tmp_path / "cnn.json"
    args = ["bench", "cnn", "--epochs", "1", "--steps-per-epoch", "1", "--image-size", "48", "--out", str(out)]
    assert cli.main(args) == 0
    assert "wall time: eager" in capsys.readouterr().out
    assert json.loads(out.read_text())["settings"]["image_size"] == 48
