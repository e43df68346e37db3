"""Training end to end: LeNet on real MNIST, the XLA article's CNN on a generated folder,
Keras-style fit on arrays, and the ``braze train`` command line."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import braze
from braze import cli
from braze.data import DataLoader, ImageFolder, load_mnist
from braze.models import LeNet, XlaArticleCNN
from braze.nn import Dense, Sequential, Statistics, binary_cross_entropy, softmax_cross_entropy
from braze.optim import SGD, Adam


@pytest.fixture(scope="module")
def mnist():
    return load_mnist()


@pytest.mark.slow
def test_lenet_learns_real_mnist_in_a_few_hundred_steps(mnist):
    images = mnist.train_images[..., None].astype(np.float32) / 255
    batches = DataLoader((images, mnist.train_labels), 128, shuffle=True, seed=0, drop_last=True)
    model = LeNet(seed=0)
    optimizer = SGD(model, lr=0.1)
    losses = []
    for step, (x, y) in enumerate(batches):
        if step == 300:
            break
        optimizer.zero_grad()
        loss = softmax_cross_entropy(model(braze.tensor(x)), braze.tensor(y))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert np.mean(losses[-50:]) < 0.4 * np.mean(losses[:50])
    stats = Statistics(braze.CPU)
    test_x = mnist.test_images[:2000, ..., None].astype(np.float32) / 255
    with braze.no_grad():
        for x, y in DataLoader((test_x, mnist.test_labels[:2000]), 500):
            logits = model(braze.tensor(x))
            stats.update(logits, braze.tensor(y), softmax_cross_entropy(logits, braze.tensor(y)))
    assert stats.accuracy > 90.0


def _bright_or_dark_folder(root: Path, n: int, size: int, seed: int) -> Path:
    """Noisy images, dark in class "a" and bright in class "b": a task this CNN learns in a
    few steps (the generated case-study folder takes it hundreds, see braze bench cnn)."""
    rng = np.random.default_rng(seed)
    for label, (low, high) in enumerate([(0, 140), (115, 255)]):
        (root / "ab"[label]).mkdir(parents=True)
        for i in range(n // 2):
            pixels = rng.integers(low, high, (size, size, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(root / "ab"[label] / f"{i}.png")
    return root


def test_xla_article_cnn_trains_on_an_image_folder(tmp_path):
    train_dir = _bright_or_dark_folder(tmp_path / "train", 160, 48, seed=0)
    val_dir = _bright_or_dark_folder(tmp_path / "validation", 64, 48, seed=1)
    train = ImageFolder(train_dir, (48, 48), "binary", 16, shuffle=True, seed=0, rescale=1 / 255)
    val = ImageFolder(val_dir, (48, 48), "binary", 16, shuffle=False, rescale=1 / 255)
    model = XlaArticleCNN(48, seed=0)
    model.compile(loss=binary_cross_entropy, optimizer=Adam(lr=1e-3), metrics=["accuracy"])
    history = model.fit(train, epochs=6, validation_data=val, verbose=0).history
    assert set(history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert history["loss"][-1] < 0.9 * history["loss"][0]
    assert max(history["accuracy"]) >= 0.7


def test_keras_style_fit_and_evaluate_on_arrays():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 2)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int32)
    model = Sequential(Dense(16, activation="relu", input_dim=2), Dense(2))
    model.compile(loss="softmax_cross_entropy", optimizer=SGD(lr=0.5), metrics=["accuracy"])
    history = model.fit((x, y), epochs=15, batch_size=32, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert model.evaluate((x, y), batch_size=64, verbose=0, return_dict=True)["accuracy"] > 0.95


def test_fit_before_compile_is_an_error():
    with pytest.raises(RuntimeError, match=r"call compile\(optimizer=..., loss=...\) before fit"):
        Sequential(Dense(1, input_dim=1)).fit((np.zeros((2, 1)), np.zeros(2)))


def test_braze_train_prints_the_x10_tutorial_line(capsys, tmp_path):
    checkpoint = tmp_path / "lenet.npz"
    assert cli.main(["train", "lenet", "--epochs", "1", "--steps-per-epoch", "3", "--save", str(checkpoint)]) == 0
    out = capsys.readouterr().out
    pattern = (
        r"\[Epoch 0\] Training Loss: \d+\.\d{3}, Training Accuracy: \d+/384 \(\d+\.\d%\), "
        r"Test Loss: \d+\.\d{3}, Test Accuracy: \d+/10000 \(\d+\.\d%\) seconds per epoch: \d+\.\d"
    )
    assert re.search(pattern, out), out
    restored = LeNet()
    restored.load(checkpoint)
