"""The functional API against NumPy: graphs of layers (branches, shared layers, several
inputs and outputs, dict inputs, keras.ops on symbolic tensors, nested models) compute
what the same layers compute called by hand, and misuse is a clear error."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze import keras
from braze.keras import layers, ops


def numpy_dense(layer, x):
    return x @ layer.kernel.numpy() + layer.bias.numpy()


def test_a_graph_with_branches_and_a_shared_layer_matches_numpy():
    a, b = keras.Input(shape=(3,), name="a"), keras.Input(shape=(3,), name="b")
    shared = layers.Dense(4)
    merged = layers.Concatenate()([shared(a), shared(b)])
    product = layers.Multiply()([shared(a), shared(b)])
    total = layers.Add()([layers.Dense(4)(merged), product])
    model = keras.Model([a, b], {"total": total, "merged": merged})
    assert len(model.trainable_weights) == 4  # the shared layer's weights once, the other Dense's
    xa, xb = np.random.default_rng(0).standard_normal((2, 5, 3)).astype(np.float32)
    out = model([xa, xb])
    ha, hb = numpy_dense(shared, xa), numpy_dense(shared, xb)
    joined = np.concatenate([ha, hb], axis=-1)
    second = next(layer for layer in model.layers if isinstance(layer, layers.Dense) and layer is not shared)
    np.testing.assert_allclose(out["merged"].numpy(), joined, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["total"].numpy(), numpy_dense(second, joined) + ha * hb, rtol=1e-5, atol=1e-5)
    by_name = model({"b": xb, "a": xa})  # inputs also by their names
    np.testing.assert_array_equal(by_name["total"].numpy(), out["total"].numpy())
    predicted = model.predict([xa, xb], batch_size=2, verbose=0)  # a list of inputs is one structure
    np.testing.assert_allclose(predicted["total"], out["total"].numpy(), rtol=1e-5, atol=1e-6)


def test_symbolic_ops_and_operators_record_nodes():
    inputs = keras.Input(shape=(6,))
    centered = inputs - ops.mean(inputs, axis=1, keepdims=True)
    outputs = ops.relu(centered) * 2.0 + inputs[:, :1]
    assert outputs.shape == (None, 6)
    model = keras.Model(inputs, outputs)
    x = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    expected = np.maximum(x - x.mean(1, keepdims=True), 0) * 2 + x[:, :1]
    np.testing.assert_allclose(model(x).numpy(), expected, rtol=1e-6, atol=1e-6)


def test_unfixed_dimensions_stay_unfixed():
    inputs = keras.Input(shape=(None, 3))
    pooled = layers.GlobalAveragePooling1D()(layers.Conv1D(5, 2)(inputs))
    assert inputs.shape == (None, None, 3) and pooled.shape == (None, 5)
    model = keras.Model(inputs, pooled)
    for steps in (4, 9):
        assert model(np.zeros((2, steps, 3), np.float32)).shape == (2, 5)


def test_unfixed_dimensions_through_strided_valid_convolutions_and_pooling():
    # The example runs that find the shapes need sizes these layers take (4 and 5 steps are
    # shorter than the first window), and the result keeps its dimensions unfixed.
    tokens = keras.Input(shape=(None,), dtype="int64")
    x = layers.Embedding(10, 4)(tokens)
    x = layers.Conv1D(6, 7, strides=3)(layers.Conv1D(6, 7, strides=3)(x))
    assert x.shape == (None, None, 6)
    images = keras.Input(shape=(None, None, 3))
    y = images
    for _ in range(3):
        y = layers.MaxPooling2D()(layers.Conv2D(2, 3)(y))
    assert y.shape == (None, None, None, 2)
    model = keras.Model(tokens, layers.GlobalMaxPooling1D()(x))
    assert model(np.zeros((2, 40), np.int64)).shape == (2, 6)
    with pytest.raises(braze.ShapeError, match="does not fit"):
        model(np.zeros((2, 12), np.int64))


def test_a_model_is_a_layer_of_another_and_layer_outputs_make_feature_extractors():
    inner_in = keras.Input(shape=(4,))
    hidden = layers.Dense(3, activation="relu", name="hidden")(inner_in)
    inner = keras.Model(inner_in, layers.Dense(2)(hidden))
    outer_in = keras.Input(shape=(4,))
    outer = keras.Model(outer_in, layers.Dense(1)(inner(outer_in)))
    x = np.ones((2, 4), np.float32)
    features = keras.Model(inner.input, inner.get_layer("hidden").output)
    assert features(x).shape == (2, 3)
    assert outer(x).shape == (2, 1) and len(outer.trainable_weights) == 6


def test_inputs_are_cast_to_the_input_dtype_and_checked_against_its_shape():
    inputs = keras.Input(shape=(2,), dtype="float32")
    model = keras.Model(inputs, layers.Dense(1)(inputs))
    assert model(np.ones((3, 2), np.float64)).dtype == braze.float32
    with pytest.raises(braze.ShapeError, match=r"expected shape \(None, 2\), got \(3, 5\)"):
        model(np.ones((3, 5), np.float32))
    images = keras.Input(shape=(4, 4, 1))
    flat = keras.Model(images, layers.Flatten()(images))
    assert flat(np.ones((2, 4, 4), np.float32)).shape == (2, 16)  # a missing channel axis of 1 is added


def test_misuse_is_a_clear_error():
    a, b = keras.Input(shape=(2,)), keras.Input(shape=(2,))
    out = layers.Add()([a, b])
    with pytest.raises(ValueError, match="depend on Input .* not among the model's inputs"):
        keras.Model(a, out)
    with pytest.raises(TypeError, match="symbolic"):
        braze.relu(a)  # braze's own ops need values; keras.ops and layers take symbolic tensors
    model = keras.Model([a, b], out)
    with pytest.raises(ValueError, match=r"expected 2 input\(s\)"):
        model(np.ones((1, 2), np.float32))


def test_sequential_takes_an_input_and_layers_built_from_it():
    model = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(4), layers.Dense(2)])
    assert [w.shape for w in model.weights] == [(3, 4), (4,), (4, 2), (2,)]
    flat = keras.Sequential([layers.Flatten(input_shape=(2, 3)), layers.Dense(1)])
    assert flat.built and flat.weights[0].shape == (6, 1)  # Flatten's input_shape builds the model


def test_functional_summary_lists_every_layer_with_output_shapes():
    inputs = keras.Input(shape=(8, 8, 3))
    x = layers.Conv2D(4, 3, padding="same", use_bias=False)(inputs)
    x = layers.BatchNormalization()(x)
    outputs = layers.Dense(2)(layers.GlobalAveragePooling2D()(x))
    lines = []
    keras.Model(inputs, outputs).summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "(None, 8, 8, 4)" in text and "(None, 2)" in text
    assert "Trainable params: 126" in text and "Non-trainable params: 8" in text  # 108 + 8 + 10


def test_a_sequential_models_inputs_and_layer_outputs_make_feature_extractors():
    model = keras.Sequential(
        [
            keras.Input(shape=(12, 12, 3)),
            layers.Conv2D(4, 3, strides=2, activation="relu"),
            layers.Conv2D(4, 3, activation="relu", name="middle"),
            layers.Flatten(),
            layers.Dense(2),
        ]
    )
    middle_output = model.get_layer("middle").output  # before the model's inputs, as Keras allows
    extractor = keras.Model(inputs=model.inputs, outputs=[layer.output for layer in model.layers])
    x = np.random.default_rng(0).standard_normal((2, 12, 12, 3)).astype(np.float32)
    expected, value = [], x
    for layer in model.layers:  # the layers applied one by one, eagerly
        value = layer(value).numpy()
        expected.append(value)
    for got, want in zip(extractor(x), expected, strict=True):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    middle = keras.Model(model.input, middle_output)
    np.testing.assert_allclose(middle(x).numpy(), expected[1], rtol=1e-5, atol=1e-6)
    assert model.output.shape == (None, 2)
    model.add(layers.Dense(5))
    assert model.output.shape == (None, 5) and model.get_layer("middle").output is middle_output
    model.pop()
    assert model.output.shape == (None, 2)
    with pytest.raises(AttributeError, match="give it an input shape"):
        _ = keras.Sequential([layers.Dense(2)]).inputs


def test_a_sequential_starting_with_a_functional_model_is_built_from_its_input():
    inputs = keras.Input((4,))
    inner = keras.Model(inputs, layers.Dense(3)(inputs))
    model = keras.Sequential([inner, layers.Dense(1)])
    assert model.built and model.count_params() == 4 * 3 + 3 + 3 + 1
    x = np.ones((2, 4), np.float32)
    expected = numpy_dense(model.layers[1], numpy_dense(inner.layers[1], x))
    np.testing.assert_allclose(model(x).numpy(), expected, rtol=1e-6)


def test_models_give_kerass_input_and_output_shapes_batch_first():
    images = keras.Input(shape=(28, 28, 1))
    assert keras.Model(images, layers.Conv2D(2, 3)(images)).input_shape == (None, 28, 28, 1)
    assert keras.Model(images, layers.Conv2D(2, 3)(images)).output_shape == (None, 26, 26, 2)
    stack = keras.Sequential([layers.Dense(3, input_shape=(4,)), layers.Dense(2)])
    assert (stack.input_shape, stack.output_shape) == ((None, 4), (None, 2))
    a, b = keras.Input((2,)), keras.Input((3, 4))
    both = keras.Model([a, b], [layers.Dense(1)(a), b])
    assert both.input_shape == [(None, 2), (None, 3, 4)] and both.output_shape == [(None, 1), (None, 3, 4)]
