"""Layers under Keras's names: pooling spellings, weight regularizers (in eager, jit_compile
and set_jit training) and ``summary()`` of the XLA article's CNN."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze import keras
from braze.keras import regularizers
from braze.keras.layers import AveragePooling2D, Conv2D, Dense, Flatten, MaxPooling2D
from braze.keras.models import Sequential
from braze.models import XlaArticleCNN
from braze.nn import binary_cross_entropy, names
from braze.ops.random import Generator
from braze.optim import SGD


def test_pooling_layers_under_keras_names_match_numpy():
    x = np.random.default_rng(0).standard_normal((2, 6, 4, 3)).astype(np.float32)
    windows = x.reshape(2, 3, 2, 2, 2, 3)  # (batch, rows, 2, cols, 2, channels)
    np.testing.assert_allclose(MaxPooling2D(pool_size=(2, 2))(braze.tensor(x)).numpy(), windows.max((2, 4)))
    np.testing.assert_allclose(
        AveragePooling2D(pool_size=(2, 2))(braze.tensor(x)).numpy(), windows.mean((2, 4)), rtol=1e-6
    )


def test_keras_regularizers_are_keras_formulas():
    w = np.array([[1.0, -2.0], [0.5, 0.0]], dtype=np.float32)
    assert regularizers.l2(1e-4)(braze.tensor(w)).item() == pytest.approx(1e-4 * np.sum(w**2))
    assert regularizers.l1(0.1)(braze.tensor(w)).item() == pytest.approx(0.1 * np.sum(np.abs(w)))
    both = regularizers.l1_l2(l1=0.1, l2=0.2)(braze.tensor(w)).item()
    assert both == pytest.approx(0.1 * np.sum(np.abs(w)) + 0.2 * np.sum(w**2))
    with pytest.raises(ValueError, match="unknown regularizer 'l3'"):
        Dense(3, kernel_regularizer="l3")


def regularized(seed: int = 0) -> Sequential:
    g = braze.Generator(seed)
    return Sequential(
        Conv2D(
            2, (3, 3), activation="relu", input_shape=(5, 5, 1), kernel_regularizer=regularizers.l1(1e-2), generator=g
        ),
        Flatten(),
        Dense(4, activation="relu", kernel_regularizer=regularizers.l2(1e-2), bias_regularizer="l2", generator=g),
        Dense(1, activation="sigmoid", generator=g),
    )


def penalty(net: Sequential) -> float:
    conv, _, dense, _ = net.layers
    return float(
        1e-2 * np.abs(conv.kernel.numpy()).sum()
        + 1e-2 * (dense.kernel.numpy() ** 2).sum()
        + 0.01 * (dense.bias.numpy() ** 2).sum()  # 'l2' is Keras's l2() with its default 0.01
    )


@pytest.mark.parametrize("mode", ["eager", "jit_compile", "set_jit"])
def test_regularizers_are_added_to_the_loss_in_every_mode(mode, monkeypatch, tmp_path):
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 5, 5, 1)).astype(np.float32)
    y = (rng.random((6, 1)) > 0.5).astype(np.float32)

    reference = regularized()
    optimizer = SGD(reference, lr=0.5)
    expected_losses = []
    for _ in range(3):
        optimizer.zero_grad()
        data_loss = binary_cross_entropy(reference(braze.tensor(x)), braze.tensor(y))
        expected_losses.append(data_loss.item() + penalty(reference))
        loss = data_loss + sum(reference.losses)
        loss.backward()
        optimizer.step()

    braze.config.set_jit(mode == "set_jit")
    try:
        net = regularized()
        net.compile(loss="binary_crossentropy", optimizer=SGD(lr=0.5), jit_compile=mode == "jit_compile")
        history = net.fit(x, y, batch_size=6, epochs=3, shuffle=False, verbose=0).history
    finally:
        braze.config.set_jit(False)
    np.testing.assert_allclose(history["loss"], expected_losses, rtol=1e-5)
    for a, b in zip(net.parameters(), reference.parameters(), strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-6)


KERAS_SUMMARY = """\
Model: "sequential"
___________________________________________________________________
Layer (type)                   Output Shape              Param #
===================================================================
conv2d (Conv2D)                (None, 146, 146, 64)      4,864
___________________________________________________________________
max_pooling2d (MaxPooling2D)   (None, 73, 73, 64)        0
___________________________________________________________________
conv2d_1 (Conv2D)              (None, 69, 69, 32)        51,232
___________________________________________________________________
max_pooling2d_1 (MaxPooling2D) (None, 34, 34, 32)        0
___________________________________________________________________
conv2d_2 (Conv2D)              (None, 30, 30, 16)        12,816
___________________________________________________________________
max_pooling2d_2 (MaxPooling2D) (None, 15, 15, 16)        0
___________________________________________________________________
flatten (Flatten)              (None, 3600)              0
___________________________________________________________________
dense (Dense)                  (None, 126)               453,726
___________________________________________________________________
dense_1 (Dense)                (None, 52)                6,604
___________________________________________________________________
dense_2 (Dense)                (None, 1)                 53
===================================================================
Total params: 529,295
Trainable params: 529,295
Non-trainable params: 0
___________________________________________________________________
"""


def test_summary_of_the_article_cnn_prints_keras_parameter_counts(capsys):
    names.reset_names()  # what tf.keras.backend.clear_session() does
    model = XlaArticleCNN(150, seed=0)
    model.summary()
    assert capsys.readouterr().out == KERAS_SUMMARY
    # Each count by hand: kernel + bias of every layer.
    conv = [5 * 5 * cin * cout + cout for cin, cout in ((3, 64), (64, 32), (32, 16))]
    dense = [fin * fout + fout for fin, fout in ((15 * 15 * 16, 126), (126, 52), (52, 1))]
    assert conv == [4864, 51232, 12816] and dense == [453726, 6604, 53]
    assert sum(conv + dense) == model.num_parameters() == 529295


def test_summary_of_a_model_not_built_yet_says_so():
    with pytest.raises(ValueError, match="has not been built yet: give its first layer an input_shape"):
        Sequential(Dense(2)).summary()


@pytest.mark.parametrize("jit_compile", [False, True])
def test_a_model_compiled_without_an_input_shape_is_built_by_its_first_batch(jit_compile):
    """As in Keras: compile, then fit, builds the layers from the first batch, and the
    optimizer takes every parameter. Without any input shape, or with one on the second
    layer only (the last layer was built by the first batch, and the optimizer once missed
    its parameters), training is the same (the same initial values, drawn in the same
    order), and the last layer trained too."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((12, 4, 3)).astype(np.float32)
    y = rng.integers(0, 2, 12).astype(np.float32)
    histories, kernels = [], []
    for input_dim in (None, 12):
        g = Generator(5)
        model = Sequential(
            Flatten(), Dense(4, activation="relu", input_dim=input_dim, generator=g), Dense(1, generator=g)
        )
        model.compile(loss="binary_crossentropy", optimizer="sgd", jit_compile=jit_compile)
        histories.append(model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"])
        kernels.append([model.layers[1].kernel.numpy(), model.layers[2].kernel.numpy()])
    for first, second in zip(*kernels, strict=True):
        np.testing.assert_allclose(first, second, rtol=1e-6)
    np.testing.assert_allclose(histories[0], histories[1], rtol=1e-6)
    assert histories[0][1] != histories[0][0]  # it trained
    g = Generator(5)
    Dense(4, input_dim=12, generator=g)
    untrained = Dense(1, input_dim=4, generator=g).kernel.numpy()
    assert not np.allclose(kernels[1][1], untrained)  # the layer built by the first batch trained


def test_sequential_add_builds_each_layer_so_compile_sees_every_parameter():
    model = Sequential()
    model.add(Conv2D(4, (3, 3), activation="relu", input_shape=(8, 8, 3)))
    model.add(MaxPooling2D(pool_size=(2, 2)))
    model.add(Flatten())
    model.add(Dense(1, activation="sigmoid"))
    assert [p.shape for p in model.parameters()] == [(3, 3, 3, 4), (4,), (36, 1), (1,)]
    model.compile(loss="binary_crossentropy", optimizer="adam")
    assert len(model._trainer.optimizer.params) == 4


def test_keras_embedding_casts_float_indices_as_keras_does():
    """keras.Input's default dtype is float32: a functional model of token ids feeds floats."""
    inputs = keras.Input((4,))
    model = keras.Model(inputs, keras.layers.Embedding(10, 3)(inputs))
    ids = np.array([[0, 3, 9, 3]])
    table = model.layers[-1].embeddings.numpy()
    np.testing.assert_array_equal(model.predict(ids.astype(np.float32), verbose=0), table[ids])
    with pytest.raises(braze.DTypeError, match="indices must be integers"):
        braze.nn.Embedding(10, 3)(braze.tensor(ids.astype(np.float32)))  # PyTorch's refuses them
